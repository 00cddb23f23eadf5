"""Points inside the cells of a lattice, in frame pixels: where the calibration samples what a
cell holds (its inner texture, its colour).

Pure: numpy and OpenCV.
"""

from __future__ import annotations

import cv2
import numpy as np


def inside_cells(homography: np.ndarray, columns: np.ndarray, rows: int, offsets: np.ndarray) -> np.ndarray:
    """The points at ``offsets`` (K x 2, cell units from a cell's top-left corner) in every cell of
    ``columns`` (cell indices, may reach beyond the well) and of rows 0 .. ``rows`` - 1, through
    ``homography`` (cell units to frame pixels): 1 x (rows * len(columns) * K) x 2 float32, row
    by row, ready for ``cv2.remap``."""
    cells = np.stack(np.meshgrid(columns, np.arange(rows)), axis=-1).reshape(-1, 1, 2)
    points = cv2.perspectiveTransform((cells + offsets[None]).reshape(-1, 1, 2).astype(np.float64), homography)
    return points.reshape(1, -1, 2).astype(np.float32)
