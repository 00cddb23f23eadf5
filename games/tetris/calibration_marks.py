"""Marks at one place in many cells, as evidence of the well's lattice for
``calibration._fit_lines``: the dot of a text-mode game's empty " ." cells, or the highlight of
a glossy skin's cells as a falling piece carries them down the well over the frames of play.

Such a mark sits at the same place in every cell, though not necessarily at its middle (a
text font's full stop sits low), so the marks show the lattice's pitch and perspective where
its lines show little or show it biased: elektronika1986's empty top rows had let the
top-left corner of a fit run 4-5 px onto the rows of dots, and the edges of gradient_open's
cells (gaps between them, no grid, no walls) lie inside their squares, so the top of a well
that only its play outlines came out 3-5 px off (``calibration_own_edges`` now fits that inset
too; on tests/unit/test_calibration_marks.py's filmed plays the marks still take find_well's
median worst corner from 0.78 to 0.57 px, and took it from 2.40 to 1.70 before).  Where in its
cell a mark sits is measured against the fit it corrects, so the marks shape the lattice and
the lines and walls place it.

Pure: numpy and OpenCV.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

_BLOB_SIGMAS = (1.0, 3.0)  # a difference of Gaussians that answers to a dot a few pixels wide
_MIN_RESPONSE = 6.0  # grey levels; and at least this many times the frame's typical response
_NOISE_TIMES = 8.0
#: Blobs kept per frame, the strongest: 5 per cell of a 10 x 20 well (600 left out dim dots
#: beside a stack of bright glyphs).
_MAX_PER_FRAME = 1000
#: A mark this far (cells, per axis) from the common place in its cell is not one of them.
_SPREAD_CELLS = 0.12
#: Marks count when they are in at least this share of the well's cells: in one frame (the
#: marks of empty cells), or over the frames of play (a falling piece's cells too)...
_STILL_CELL_SHARE = 0.5
_PLAY_CELL_SHARE = 0.15
#: ...over the frames of play, when at least this share of the blobs in the well are marks (3
#: times what blobs at random give: the blobs of many frames are many)...
_PLAY_MARK_SHARE = 3 * (2 * _SPREAD_CELLS) ** 2
#: ...and away from the lattice lines on one axis at least: a grid's crossings are lines'
#: evidence, which the line pieces already measure.
_OFF_LINE_CELLS = 0.25
_DRIFT_ROUNDS = 3  # fits of the marks' drift, each taking in the marks it explains
_PLACE_STEPS = 20  # places per axis where the marks' common place is looked for


@dataclass(frozen=True)
class CellMarks:
    """Dot-like blobs of the frames, and what makes them a lattice's marks (see ``in_cells``)."""

    points: np.ndarray  # N x 2 frame pixels
    min_cell_share: float = _STILL_CELL_SHARE  # of the well's cells that show a mark
    min_mark_share: float = 0.0  # of the blobs in the well that are marks

    @classmethod
    def still(cls, gray: np.ndarray) -> CellMarks:
        """The blobs of one grey frame (float32, slightly blurred): marks drawn in empty cells."""
        return cls(_blobs(gray))

    @classmethod
    def over_play(cls, grays: Sequence[np.ndarray]) -> CellMarks:
        """The blobs of grey frames of play, filmed by one still camera: also the marks a
        falling piece's cells carry.  A blob seen in several frames (a static one) is taken
        once, so each weighs the same."""
        points = np.vstack([np.zeros((0, 2)), *(_blobs(gray) for gray in grays)])
        _, first = np.unique(np.round(points).astype(np.int64), axis=0, return_index=True)
        return cls(points[np.sort(first)], _PLAY_CELL_SHARE, _PLAY_MARK_SHARE)

    def in_cells(self, to_cells: np.ndarray, cols: int, rows: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The marks that sit at one common place in the cells of the lattice ``to_cells`` (the
        homography from frame to cell units) as (cell points, frame points), or None when
        marks are in too few cells, too few of the blobs, or on the lattice lines."""
        inside = self._inside(to_cells, cols, rows)
        if inside is None:
            return None
        q, p = inside
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
        if len(np.unique(cells, axis=0)) < self.min_cell_share * cols * rows or near.mean() < self.min_mark_share:
            return None
        if np.all(np.minimum(place % 1.0, 1.0 - place % 1.0) < _OFF_LINE_CELLS):
            return None
        return cells + place, p[near]

    def unplaced(self, to_cells: np.ndarray, cols: int, rows: int) -> bool:
        """Whether the lattice ``to_cells`` has blobs in as many of its cells as marks would be
        in but does not place them as marks (``in_cells``: at one place in its cells, off its
        lines): a lattice drawn across a text-mode well's dots, not on its cells.  (Sensor noise
        and the edges of walls give an empty well a hundred blobs or so, in 40-60 cells.)"""
        inside = self._inside(to_cells, cols, rows)
        if inside is None or len(np.unique(np.floor(inside[0]).astype(int), axis=0)) < self.min_cell_share * cols * rows:
            return False
        return self.in_cells(to_cells, cols, rows) is None

    def _inside(self, to_cells: np.ndarray, cols: int, rows: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The blobs inside the lattice ``to_cells``'s well as (cell points, frame points), or
        None when they are fewer than the marks' share of its cells."""
        if len(self.points) < self.min_cell_share * cols * rows:
            return None
        q = cv2.perspectiveTransform(self.points.reshape(-1, 1, 2).astype(np.float64), to_cells).reshape(-1, 2)
        inside = (q[:, 0] > 0) & (q[:, 0] < cols) & (q[:, 1] > 0) & (q[:, 1] < rows)
        if inside.sum() < self.min_cell_share * cols * rows:
            return None
        return q[inside], self.points[inside]


def first_in_cells(
    kinds: Sequence[CellMarks], to_cells: np.ndarray, cols: int, rows: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """``in_cells`` of the first of ``kinds`` that has marks in the lattice's cells."""
    for marks in kinds:
        found = marks.in_cells(to_cells, cols, rows)
        if found is not None:
            return found
    return None


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


def _blobs(gray: np.ndarray) -> np.ndarray:
    """One frame's dot-like blobs (N x 2 frame pixels), the strongest first."""
    fine, coarse = (cv2.GaussianBlur(gray, (0, 0), s) for s in _BLOB_SIGMAS)
    response = np.abs(fine - coarse)
    floor = max(_MIN_RESPONSE, _NOISE_TIMES * float(np.median(response)))
    peaks = (response >= cv2.dilate(response, np.ones((5, 5), np.uint8))) & (response > floor)
    ys, xs = np.nonzero(peaks[1:-1, 1:-1])
    ys, xs = ys + 1, xs + 1
    strongest = np.argsort(-response[ys, xs], kind="stable")[:_MAX_PER_FRAME]
    ys, xs = ys[strongest], xs[strongest]
    window = np.stack([response[ys + dy, xs + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1)], axis=1)
    offsets = np.array([(dx, dy) for dy in (-1, 0, 1) for dx in (-1, 0, 1)], dtype=np.float64)
    centre = (window @ offsets) / np.maximum(window.sum(axis=1, keepdims=True), 1e-9)
    return np.stack([xs, ys], axis=1) + centre
