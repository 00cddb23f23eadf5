"""Where the frames of play show a new piece, as a cue to which of two fits a whole column
apart is the well, for ``calibration._settle_cell_shift`` and ``calibration._chosen``.

An open well (no walls, no grid, no fill) whose stack spans eight of its ten columns fits
just as well a column or two to either side: the lattices score alike, and which came first
decided it.  Nearly every Tetris shows a new piece at the top of the well, in its middle
columns (Standard Tetris: columns 5-7 for the three-wide pieces, 4-7 for the I, 5-6 for the
O; others a column to the left): the first frame that shows a tetromino appear in a fit's
top two rows (the frame before showed nothing new there, or only the part of it that had
come in from above, where it may have fallen a row since) says whether that fit's middle is
the well's.  Failing that, a piece there in the first frame says it: it may have been moved
aside already, but most often it has not.  One moved aside between its spawn and the frame
that shows it misleads the cue (frames far apart while someone plays), so the cue only
chooses between fits that score within ``calibration._SPAWN_MARGIN`` of each other, never
against the lattice.

"New" is against the frames' median, which is neither the piece nor the background where
a piece sat about half the frames (a player who waits at the top): such pixels, new in
nearly every frame (``_STEADY_SHARE``), are not looked at.  Over the 960 scenes of the
tuned skins in calibration_eval's seeds 2-7 (24 frames 70 ms apart), on the true well, the
cue spoke in 352 when it took only pieces appearing from nothing, always right; with the
entering pieces, the first frame and the steady pixels it speaks in 583 and is wrong in 3;
with entering pieces that fell a row, in 608, wrong in 3 (in 17 of them it now decides on
an earlier piece, one that fits a column to the right as well).

The same first frames say where the well's top is (``top_row``): a new piece shows its top in
the well's top row (it enters the well there; Standard Tetris spawns it in the top two rows),
so a lattice a row too tall shows it in its second row, one a row short above its first.  A
piece may first show a row down, when the frames are far apart, never a row up: of several
pieces the highest counts.  ``calibration._top_at_spawn_instead`` takes this only between fits
within ``_SPAWN_MARGIN`` of each other, as the column cue.

Pure: numpy and OpenCV.
"""
from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

#: Grey levels a pixel differs from the frames' median by to be new (a piece that came).
_NEW_LEVEL = 20.0
_SAMPLES = 3  # per cell and axis, in the cell's middle half
#: A cell is new when this share of its samples is.
_NEW_CELL_SHARE = 0.4
#: A pixel new in more than this share of the frames is not looked at.
_STEADY_SHARE = 0.8
_PIECE_CELLS = 4
_SPAWN_ROWS = 2
#: The middle of a piece just shown lies within this many columns of the well's middle.
_MIDDLE_REACH = 0.5
#: The rows asked where a new piece's top is (from, to): a lattice up to two rows off.
_TOP_BAND = (-2, 4)


class SpawnCue:
    """The frames' new pixels (against their median), asked per fit where a piece appeared."""

    def __init__(self, grays: Sequence[np.ndarray]) -> None:
        self._new: list[np.ndarray] = []
        if len(grays) >= 3:
            stack = np.stack(grays)
            new = np.abs(stack - np.median(stack, axis=0)) > _NEW_LEVEL
            # new in nearly every frame: a piece sat there about half the frames, and the median
            # is neither it nor the background
            new[:, new.mean(axis=0) > _STEADY_SHARE] = False
            self._new = list(new.astype(np.float32))

    def top_row(self, homography: np.ndarray, cols: int) -> int | None:
        """The row of the lattice ``homography`` (cell units to frame) that holds the top of a
        new piece when it first shows (a tetromino whole in ``_TOP_BAND``, see ``_appearing``):
        0 on the true well, 1 on a lattice a row too tall, -1 on one a row short.  Of several
        pieces, the highest (a piece may first show a row down, never up); None when no frame
        shows one appear."""
        first, last = _TOP_BAND
        top_rows = self._appearing(homography, cols, np.arange(first, last), _PIECE_CELLS)
        return min(first + int(np.flatnonzero(cells.any(axis=1))[0]) for cells in top_rows) if top_rows else None

    def _new_cells(self, homography: np.ndarray, cols: int, rows: np.ndarray) -> list[np.ndarray]:
        """In the lattice ``homography``'s ``rows``, each frame's new cells (rows x cols, boolean)."""
        offsets = (np.arange(_SAMPLES) + 0.5) / _SAMPLES * 0.5 + 0.25  # the middle half of a cell
        xs = (np.arange(cols)[:, None] + offsets[None, :]).ravel()
        ys = (rows[:, None] + offsets[None, :]).ravel()
        grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 1, 2).astype(np.float64)
        points = cv2.perspectiveTransform(grid, homography).reshape(len(rows) * _SAMPLES, cols * _SAMPLES, 2).astype(np.float32)
        sampled = (cv2.remap(new, points[..., 0], points[..., 1], cv2.INTER_NEAREST, borderValue=0.0) for new in self._new)
        return [cells.reshape(len(rows), _SAMPLES, cols, _SAMPLES).mean(axis=(1, 3)) >= _NEW_CELL_SHARE for cells in sampled]

    def _appearing(self, homography: np.ndarray, cols: int, rows: np.ndarray, cells: int) -> list[np.ndarray]:
        """In the lattice ``homography``'s ``rows``, the new cells (rows x cols, boolean) of each
        frame that shows exactly ``cells`` of them where the frame before showed fewer, all
        among them or among them a row up: none, or the part of a piece that had come in from
        above the rows (and may have fallen a row since)."""
        shown = self._new_cells(homography, cols, rows)
        return [now for before, now in zip(shown, shown[1:])
                if now.sum() == cells and before.sum() < cells and any(not (before & ~_up(now, k)).any() for k in (0, 1))]

    def centred(self, homography: np.ndarray, cols: int) -> bool | None:
        """Whether the first frame showing a piece appear in the top rows of the lattice
        ``homography`` maps (cell units to frame), else the first frame if it shows one there,
        shows it in the lattice's middle columns; None when no frame shows one there."""
        top_rows = np.arange(_SPAWN_ROWS)
        appeared = self._appearing(homography, cols, top_rows, _PIECE_CELLS)
        if not appeared:
            # a piece in the top rows from the first frame on: most often where it came in
            first = self._new_cells(homography, cols, top_rows)[:1]
            appeared = [cells for cells in first if cells.sum() == _PIECE_CELLS]
        if not appeared:
            return None
        columns = np.flatnonzero(appeared[0].any(axis=0))
        middle = 0.5 * (columns.min() + columns.max() + 1)
        return bool(abs(middle - 0.5 * cols) <= _MIDDLE_REACH)


def _up(cells: np.ndarray, rows: int) -> np.ndarray:
    """``cells`` (rows x cols, boolean) moved up by ``rows`` rows, empty rows coming in below."""
    return np.vstack([cells[rows:], np.zeros_like(cells[:rows])])
