"""Marks drawn in every empty cell (the dot of a text-mode game's " ." cells), as evidence of
the well's lattice for ``calibration._fit_lines``.

Such a mark sits at the same place in every cell, though not necessarily at its middle (a
text font's full stop sits low), so the marks show the lattice's pitch and perspective over
the whole well, empty rows included, where its lines show little: elektronika1986's empty
top rows had let the top-left corner of a fit run 4-5 px onto the rows of dots.  Where in its
cell a mark sits is measured against the fit it corrects, so the marks shape the lattice and
the lines and walls place it.

Pure: numpy and OpenCV.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

_BLOB_SIGMAS = (1.0, 3.0)  # a difference of Gaussians that answers to a dot a few pixels wide
_MIN_RESPONSE = 6.0  # grey levels; and at least this many times the frame's typical response
_NOISE_TIMES = 8.0
#: A mark this far (cells, per axis) from the common place in its cell is not one of them.
_SPREAD_CELLS = 0.12
#: Marks count when they are in at least this share of the well's cells...
_MIN_CELL_SHARE = 0.5
#: ...and away from the lattice lines on one axis at least: a grid's crossings are lines'
#: evidence, which the line pieces already measure.
_OFF_LINE_CELLS = 0.25
_DRIFT_ROUNDS = 3  # fits of the marks' drift, each taking in the marks it explains
_PLACE_STEPS = 20  # places per axis where the marks' common place is looked for


@dataclass(frozen=True)
class CellMarks:
    """The frame's dot-like marks, and which of them fit a lattice as its cells' marks."""

    points: np.ndarray  # N x 2 frame pixels

    @classmethod
    def of(cls, gray: np.ndarray) -> CellMarks:
        """The dot-like blobs of a grey frame (float32, slightly blurred), sub-pixel."""
        fine, coarse = (cv2.GaussianBlur(gray, (0, 0), s) for s in _BLOB_SIGMAS)
        response = np.abs(fine - coarse)
        floor = max(_MIN_RESPONSE, _NOISE_TIMES * float(np.median(response)))
        peaks = (response >= cv2.dilate(response, np.ones((5, 5), np.uint8))) & (response > floor)
        ys, xs = np.nonzero(peaks[1:-1, 1:-1])
        ys, xs = ys + 1, xs + 1
        if len(xs) == 0:
            return cls(np.zeros((0, 2)))
        window = np.stack([response[ys + dy, xs + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1)], axis=1)
        offsets = np.array([(dx, dy) for dy in (-1, 0, 1) for dx in (-1, 0, 1)], dtype=np.float64)
        centre = (window @ offsets) / window.sum(axis=1, keepdims=True)
        return cls(np.stack([xs, ys], axis=1) + centre)

    def in_cells(self, to_cells: np.ndarray, cols: int, rows: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The marks that sit at one common place in the cells of the lattice ``to_cells`` (the
        homography from frame to cell units) as (cell points, frame points), or None when
        marks are not in most cells or sit on the lattice lines."""
        if len(self.points) < _MIN_CELL_SHARE * cols * rows:
            return None
        q = cv2.perspectiveTransform(self.points.reshape(-1, 1, 2).astype(np.float64), to_cells).reshape(-1, 2)
        inside = (q[:, 0] > 0) & (q[:, 0] < cols) & (q[:, 1] > 0) & (q[:, 1] < rows)
        q, p = q[inside], self.points[inside]
        if len(q) < _MIN_CELL_SHARE * cols * rows:
            return None
        fraction = q - np.floor(q)
        start = _common_place(fraction)
        off = (fraction - start + 0.5) % 1.0 - 0.5
        near = np.all(np.abs(off) <= _SPREAD_CELLS, axis=1)
        # A lattice a little off (a pitch or a perspective) moves the marks in their cells
        # steadily across the well: that drift, fitted (affine in the cell position) and grown
        # from the marks at the common place, takes in the marks the fit has drifted from.
        design = np.column_stack([q, np.ones(len(q))])
        for _ in range(_DRIFT_ROUNDS):
            if near.sum() < 3:
                return None
            drift = np.linalg.lstsq(design[near], off[near], rcond=None)[0]
            residual = (off - design @ drift + 0.5) % 1.0 - 0.5
            near = np.all(np.abs(residual) <= _SPREAD_CELLS, axis=1)
        expected = design @ drift  # each mark's place as the drift has it, from ``start`` (may pass a cell)
        # where the fit has the marks on average: from ``start``'s cells, so not taken modulo a cell
        place = start + (expected + residual)[near].mean(axis=0)
        cells = np.round(q[near] - start - expected[near]).astype(int)  # the cell whose mark it is
        if len({(int(i), int(j)) for i, j in cells}) < _MIN_CELL_SHARE * cols * rows:
            return None
        if np.all(np.minimum(place % 1.0, 1.0 - place % 1.0) < _OFF_LINE_CELLS):
            return None
        return cells + place, p[near]


def _common_place(fraction: np.ndarray) -> np.ndarray:
    """Where in their cells (x, y in [0, 1)) most of the points lie: of a grid of places over
    the cell, the one with the most points within half ``_SPREAD_CELLS`` on both axes (around
    the cell's edges too).  Other blobs (a glyph's corners, the stack's texture) and the marks
    of a row the stack covers do not pull it the way they pull a mean."""
    grid = (np.arange(_PLACE_STEPS) + 0.5) / _PLACE_STEPS
    near = [np.abs((fraction[:, axis, None] - grid[None, :] + 0.5) % 1.0 - 0.5) <= _SPREAD_CELLS / 2 for axis in (0, 1)]
    counts = near[0].astype(np.int32).T @ near[1].astype(np.int32)  # places x by places y
    i, j = np.unravel_index(int(np.argmax(counts)), counts.shape)
    return np.array([grid[i], grid[j]])
