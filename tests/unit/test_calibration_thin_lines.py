"""A well drawn the way many Tetris clones draw it (black cells, bright grid lines one pixel wide,
a thin border, boxes of the well's size beside it) is found: a line narrower than the camera's
blur shows as two gradient peaks with a dip on the line itself, which the score must count as on
the line.  The screen is drawn here, not by the project's renderer, whose grid lines are faint."""

from __future__ import annotations

from dataclasses import replace

import cv2
import numpy as np
import pytest

from gamerig.games.tetris.calibration import MIN_SCORE, find_well
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

SUCCESS_PX = 3.0
BLUR = 1.2  # the camera's defocus (Gaussian sigma, frame pixels): wider than the lines
CELL = 21  # screen pixels
COLS, ROWS = 10, 20
LEFT, TOP = 14 * CELL, 4 * CELL + 26
COLOURS = ((222, 235, 52), (198, 52, 235), (58, 237, 240), (252, 69, 3), (23, 134, 252), (0, 0, 255), (0, 255, 0))


def _screen(cells: np.ndarray, falling: list[tuple[int, int]]) -> np.ndarray:
    """An 800 x 600 screen: the well at (LEFT, TOP), cell (0, 0) its top-left, ``cells`` the
    stack's colour numbers (0 empty) and ``falling`` the falling piece's cells (column, row)."""
    image = np.full((600, 800, 3), 20, np.uint8)
    width, height = COLS * CELL, ROWS * CELL
    for box_left in (LEFT - 12 * CELL, LEFT + 12 * CELL):  # a score box and a statistics box beside it
        cv2.rectangle(image, (box_left, TOP), (box_left + width - 1, TOP + height - 1), (128, 128, 128), 1)
    image[TOP : TOP + height, LEFT : LEFT + width] = 0
    shown = cells.copy()
    for col, row in falling:
        shown[row, col] = 1
    for row, col in zip(*np.nonzero(shown)):
        y, x = TOP + row * CELL, LEFT + col * CELL
        image[y : y + CELL, x : x + CELL] = COLOURS[shown[row, col] % len(COLOURS)]
    image[TOP : TOP + height, LEFT : LEFT + width : CELL] = 128  # each cell's left and top pixel
    image[TOP : TOP + height : CELL, LEFT : LEFT + width] = 128
    cv2.rectangle(image, (LEFT, TOP), (LEFT + width - 1, TOP + height - 1), (0, 0, 255), 2)
    return image


def thin_line_play(seed: int, frames: int = 8) -> tuple[list[np.ndarray], np.ndarray]:
    """Frames of a T falling a row a frame over a random stack of 0-3 rows, filmed by one random
    camera with ``BLUR``, and the well's true corners in them."""
    rng = np.random.default_rng(seed)
    cells = np.zeros((ROWS, COLS), dtype=np.uint8)
    height = int(rng.integers(0, 4))
    cells[ROWS - height :] = (rng.random((height, COLS)) < 0.7) * rng.integers(1, 8, size=(height, COLS))
    cells[ROWS - height :, int(rng.integers(COLS))] = 0  # no full row
    settings = replace(CameraSettings.random(rng), blur_sigma=BLUR)
    shots = []
    for k in range(frames):
        shots.append(film(_screen(cells, [(3, k), (4, k), (5, k), (4, k + 1)]), rng, settings))
    corners = np.array([[LEFT, TOP], [LEFT + COLS * CELL, TOP], [LEFT + COLS * CELL, TOP + ROWS * CELL], [LEFT, TOP + ROWS * CELL]], float)
    return [frame for frame, _ in shots], map_points(shots[0][1], corners - 0.5)


@pytest.mark.parametrize("seed", range(8))
def test_a_well_of_bright_thin_grid_lines_is_found(seed: int) -> None:
    frames, truth = thin_line_play(seed)
    fit = find_well(frames)
    assert fit is not None and fit.score >= MIN_SCORE
    assert np.linalg.norm(fit.corners - truth, axis=1).max() <= SUCCESS_PX
