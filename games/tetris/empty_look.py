"""Learn what each cell of the well looks like empty (whole and its middle) from frames that may
show a few pieces.

Pure: numpy and OpenCV, no I/O.  The operator shows an empty board (a new game), but a piece
may fall through or land during the capture.  Each cell's empty look is its median over the
frames, so a piece falling through is outvoted.  A cell whose median stands out from a smooth
fit of the well's empty look (more than ``STANDS_OUT``: vignetting is smooth, pieces are not)
is learned from the frames where it looks like that fit, e.g. those before a piece landed on
it.  A game that draws a ghost piece (the falling piece's outline where it would land) may
show one on a cell until the piece lands there: such a cell, empty in its middle in some
frames (not in all: a game that outlines its pieces shows a stack so) but never whole, keeps
its middle look from those frames and takes the smooth fit as its whole look.
A cell that never looks empty means the board was not empty (``BoardNotEmpty``, naming the
cells).

Measured on filmed synthetic boards (11 skins, 8 cameras each for the empty board, 4 for the
rest): no empty cell stood out by more than 0.080 (neon; ``STANDS_OUT`` is 0.124); a 3-row
stack of 27 cells was caught on 9 skins, but not in the renderer's grey for a piece of unknown
kind on gradient_open (4 of 4 cameras) and pastel (2 of 4), whose backgrounds it differs from
by only 0.10; a ghost under the first piece and then the landed piece was learned right on
flat_modern (4 of 4; 3 of them were refused before the outline rule), and a stack of outlined cells
in every frame was still refused (outline, 4 of 4).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .recognition import FILL_THRESHOLD, GridCalibration, cell_looks, relative_distance

#: A cell this far (relative colour distance) from the smooth fit is not empty: twice
#: recognition's fill threshold, twice the worst empty cell measured.
STANDS_OUT = 2 * FILL_THRESHOLD


class BoardNotEmpty(ValueError):
    """Some cells look filled in every frame; the message names them."""


def _smooth_fit(empty: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A smooth (quadratic) fit of the well's empty look, refitted without the cells far from
    it so a stack cannot bend it, and each cell's relative distance from it: (rows x cols x 3,
    rows x cols), top row first."""
    rows, cols = empty.shape[0] - 2, empty.shape[1] - 2
    well = empty[1:-1, 1:-1].reshape(-1, 3).astype(np.float64)
    v, u = np.mgrid[0:rows, 0:cols]
    u, v = (2 * u.ravel() + 1) / cols - 1, (2 * v.ravel() + 1) / rows - 1
    design = np.stack([np.ones_like(u), u, v, u * u, v * v, u * v], axis=1)
    keep = np.ones(len(u), dtype=bool)
    for _ in range(3):
        coefficients, *_ = np.linalg.lstsq(design[keep], well[keep], rcond=None)
        fit = design @ coefficients
        distance = relative_distance(well, fit)
        keep = distance < FILL_THRESHOLD
    return fit.reshape(rows, cols, 3), distance.reshape(rows, cols)


def learn_empty_well(frames: Sequence[np.ndarray], corners: np.ndarray, cols: int, rows: int) -> GridCalibration:
    """Each cell's median look over the frames; a cell that stands out from the well's smooth
    empty look is learned from the frames where it looks empty; ``BoardNotEmpty`` when some
    cell never does."""
    if not frames:
        raise ValueError("learning the empty well needs at least one frame")
    both = cell_looks(frames, corners, cols, rows)
    looks, middle_looks = both[:, 0], both[:, 1]
    empty, empty_middle = np.median(looks, axis=0), np.median(middle_looks, axis=0)
    expected, distance = _smooth_fit(empty)
    expected_middle = _smooth_fit(empty_middle)[0]
    for y, x in zip(*np.nonzero(distance > STANDS_OUT)):
        cell = (slice(None), y + 1, x + 1)
        empty_here = relative_distance(looks[cell], expected[y, x]) <= STANDS_OUT
        if empty_here.any():
            empty[y + 1, x + 1] = np.median(looks[cell][empty_here], axis=0)
            empty_middle[y + 1, x + 1] = np.median(middle_looks[cell][empty_here], axis=0)
            continue
        # never empty whole, but empty in its middle in some frames and not in others: an
        # outline that came or went (a ghost piece, then the piece that landed there; a cell
        # outlined in every frame may be a stack of a game that outlines its cells); the whole
        # look is the smooth fit's, which a filled cell's whole look stands out from as much
        # as from the cell's own
        outlined = relative_distance(middle_looks[cell], expected_middle[y, x]) <= STANDS_OUT
        if outlined.any() and not outlined.all():
            empty[y + 1, x + 1] = expected[y, x]
            empty_middle[y + 1, x + 1] = np.median(middle_looks[cell][outlined], axis=0)
    odd = _smooth_fit(empty)[1] > STANDS_OUT
    if odd.any():
        cells = ", ".join(f"({x + 1}, {rows - y})" for y, x in zip(*np.nonzero(odd)))
        raise BoardNotEmpty(
            f"the board is not empty: {int(odd.sum())} cells look filled in every frame (x, y from the bottom"
            f" left: {cells}); show an empty board (start a new game) and calibrate again"
        )
    return GridCalibration(
        np.asarray(corners, dtype=np.float32), cols, rows, empty.astype(np.float32), empty_middle=empty_middle.astype(np.float32)
    )
