"""Which pieces of a fit's inner lattice lines show a cell's own edge, and on which side the
cell lies, for ``calibration._fit_lines``.

A line between a filled cell and an empty one shows the filled cell's edge, and that edge need
not be on the line: cells drawn with gaps between them, or glossy and bevelled cells whose
strongest edge is their shading's, show it inside the cell's square (on gradient_open, about
0.14 of a cell: 2.5 px on a 17 px pitch).  On a line between two filled cells the two edges lie
either side and their centroid is on the line; but the stack's top and the sides of a falling
piece's path are one-sided, all the same way, so they shrink the lattice they hold (the stack's
top pulled 2.7 px down, the floor fitted up: an open well's empty top extrapolated 3-4 px off).
``_fit_lines`` fits these pieces, like an open outline's, as lying a common inset inside their
cell.

Which side is the cell: over the frames of play each pixel keeps its strongest gradient
(``calibration._Evidence``), so a cell that was filled at any moment shows its shading and
highlights inside (1.0-1.5 on gradient_open, in the gradient images' units where 1 is a strong
edge) and one never filled shows the background's (0.05-0.35).  A piece between a cell inside
which the gradient is at least ``FILLED_TEXTURE`` and one at most ``PLAIN_TEXTURE`` is
one-sided.  A skin with flat cells shows nothing inside them and has no such pieces; its cells
fill their squares but for the gap, which is then the only inset.

Over the 440 scenes of `gamerigctl bench vision` at seeds 0 and 1 (tests/calibration_eval.py's
per-scene variant), the thresholds set once and not tuned: 436 found within 3 px, 434 before
(gradient_open's 1:38, 1:126 and 1:159 home, 1:115 lost at 3.03 px); gradient_open's median
worst corner 1.34 -> 1.12 px and held-out neon's 1.61 -> 1.36; the other skins' medians within
0.1 px.  (Giving every piece that lies off its line by more than half the inset that inset, on
the side it lies, instead: 429 of 440, medians worse on 8 of 11 skins.)

Pure: numpy and OpenCV.
"""

from __future__ import annotations

import cv2
import numpy as np

from .cell_points import inside_cells

#: Inside a cell, a mean gradient at least this says it was filled at some moment...
FILLED_TEXTURE = 0.6
#: ...and at most this that it never was.  Between the two, a piece's side is not told.
PLAIN_TEXTURE = 0.3
#: Where a cell's inside is sampled (cell units): a 4 x 4 grid over its middle half.
_INNER = np.stack(np.meshgrid(*[(np.arange(4) + 0.5) / 4 * 0.5 + 0.25] * 2), axis=-1).reshape(-1, 2)


def cell_texture(gradient: np.ndarray, homography: np.ndarray, cols: int, rows: int) -> np.ndarray:
    """The mean of ``gradient`` (a frame-sized float32 image) over the middle half of every cell
    of the lattice ``homography`` maps (cell units to frame pixels): rows x cols."""
    points = inside_cells(homography, np.arange(cols), rows, _INNER)
    sampled = cv2.remap(gradient, points[..., 0], points[..., 1], cv2.INTER_LINEAR)
    return sampled.reshape(rows, cols, -1).mean(axis=-1)


def own_edge_sides(piece_cells: np.ndarray, texture: np.ndarray) -> np.ndarray:
    """Per lattice-line piece (``piece_cells``: N x 2, its middle in cell units, as
    ``calibration._Pieces.cell``), +1 or -1 when it lies between a filled cell and a plain one
    (by ``texture``, rows x cols, as ``cell_texture``), the sign pointing along the piece's
    measured coordinate towards the filled cell; 0 otherwise, and for the outline's pieces
    (a wall, or an open outline that ``calibration`` handles itself)."""
    rows, cols = texture.shape
    filled = np.pad(texture >= FILLED_TEXTURE, 1)  # the padding (beyond the outline) is neither
    plain = np.pad(texture <= PLAIN_TEXTURE, 1)
    vertical = np.isclose(piece_cells[:, 1] % 1.0, 0.5)  # a vertical piece's middle is half a cell down its line
    line = np.round(np.where(vertical, piece_cells[:, 0], piece_cells[:, 1])).astype(int)
    along = np.floor(np.where(vertical, piece_cells[:, 1], piece_cells[:, 0])).astype(int)
    inside = (line >= 0) & (line <= np.where(vertical, cols, rows)) & (along >= 0) & (along < np.where(vertical, rows, cols))
    line, along = np.where(inside, line, 0), np.where(inside, along, 0)
    # the cells before and after the line, in padded indices
    before = (np.where(vertical, along, line - 1) + 1, np.where(vertical, line - 1, along) + 1)
    after = (np.where(vertical, along, line) + 1, np.where(vertical, line, along) + 1)
    towards_after = filled[after] & plain[before]
    towards_before = filled[before] & plain[after]
    return np.where(inside & towards_after, 1.0, np.where(inside & towards_before, -1.0, 0.0))
