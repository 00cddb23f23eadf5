"""Learn each piece's colour as this camera sees it, from pieces identified by their shape.

Pure: no I/O.  A short calibration capture rarely shows all seven pieces, so the colours are
learned during play: every piece the tracker identifies by shape (a ``spawn`` event names it
and its cells) gives one sample, the mean colour of its four cells in that frame's
observation.  Once every piece has ``min_samples`` samples, each piece's colour is the median
of its samples (a sample taken in a flicker or a half-drawn frame is outvoted), and
``with_colours`` gives the calibration that ``falling_piece`` uses for its colour vote.

A game that draws every piece in one colour learns seven nearly equal colours: the vote then
names every piece and never votes against a shape, which is right for such a game.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from .pieces import PIECE_NAMES
from .recognition import GridCalibration, Observation


class PieceColourLearner:
    """Collects colour samples of pieces named by their shape until every piece has enough."""

    def __init__(self, min_samples: int = 3) -> None:
        if min_samples < 1:
            raise ValueError(f"min_samples must be at least 1, got {min_samples}")
        self.min_samples = min_samples
        self._samples: dict[str, list[np.ndarray]] = {name: [] for name in PIECE_NAMES}

    def add(self, observation: Observation, piece: str, cells: Iterable[tuple[int, int]]) -> None:
        """One sample: the mean colour of ``piece``'s cells (1-based board x, y) in ``observation``."""
        if piece not in self._samples:
            raise ValueError(f"unknown piece {piece!r}; pieces are {''.join(PIECE_NAMES)}")
        if not observation.valid:
            return  # a frame recognition refused has no colours to learn from
        rows, cols = observation.filled.shape
        cells = list(cells)
        if not cells or not all(1 <= x <= cols and 1 <= y <= rows for x, y in cells):
            raise ValueError(f"cells {cells} are not all inside the {cols} x {rows} well")
        colours = np.array([observation.colours[y - 1, x - 1] for x, y in cells], dtype=np.float64)
        self._samples[piece].append(colours.mean(axis=0))

    @property
    def missing(self) -> str:
        """The pieces that still lack samples, in ``PIECE_NAMES`` order."""
        return "".join(name for name in PIECE_NAMES if len(self._samples[name]) < self.min_samples)

    def colours(self) -> np.ndarray | None:
        """Each piece's colour (7 x 3 BGR, O I S Z L J T) once every piece has enough samples."""
        if self.missing:
            return None
        return np.array([np.median(self._samples[name], axis=0) for name in PIECE_NAMES], dtype=np.float32)

    def with_colours(self, calibration: GridCalibration) -> GridCalibration:
        """``calibration`` with the learned piece colours (unchanged while some piece is missing)."""
        colours = self.colours()
        if colours is None:
            return calibration
        return dataclasses.replace(calibration, piece_colours=colours)
