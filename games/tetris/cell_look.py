"""Learn from frames of play whether the game fills its cells, and read them by their middles if so.

Pure: no I/O.  A game that fills its cells (flat, bevelled, glossy) is best read by each cell's
middle: there the outline of a ghost piece (the shadow many games draw where the piece would
land, which is no cell of the board) and the colour a blurred camera bleeds from a neighbouring
cell stay out.  A game that draws its cells as outlines or brackets shows nothing in their
middles, and must be read whole.  An empty board cannot tell the two apart, so the calibration
reads cells whole and ``LearningObserver`` counts, over the first frames of play, how many of
the cells read filled are filled in their middle too: at least ``FILLED_MIDDLES`` of them and
the game fills its cells (a falling piece and its ghost alone give half), far fewer and it
draws outlines.  It decides once, after ``MIN_FILLED_CELLS`` filled cells, and keeps the answer.
Until then a frame that shows both kinds of cells (a piece or a stack and a ghost) is no
observation: read whole, the ghost would show as cells of the board.  A ghost alone (its piece
still above the well) is read as cells until then: refusing every frame with outlined cells
would blind a game of outlines for its first piece.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .recognition import GridCalibration, Observation, observe

#: Filled cells to see before deciding: six frames of a falling piece and its ghost, one frame
#: of a stack.  The looks are far apart (see recognition.SOLID_MIDDLE), so few cells tell them.
#: (Frames with a full row, a line clear's flash that fills outlined cells' middles too, are
#: not counted.)
MIN_FILLED_CELLS = 48
#: The fraction of filled cells filled in their middle too above which the game fills its
#: cells.  A piece and its ghost alone give 0.5; outlined cells give nearly 0.
FILLED_MIDDLES = 0.3
#: How a game's cells are read: by their middles, whole, or not decided yet.
CELL_LOOKS = ("middles", "whole", "undecided")
#: The reason of a frame refused while undecided.
UNDECIDED = "solid and outlined cells in one frame before the game's cells are learned (a ghost piece?)"


class LearningObserver:
    """``observe`` over the frames of one game, reading cells by their middles once the frames
    show the game fills its cells (see the module docstring)."""

    def __init__(self, calibration: GridCalibration) -> None:
        self.calibration = calibration
        self.filled_cells = 0
        self.filled_middles = 0
        #: One of CELL_LOOKS: a calibration without a middle look is read whole.
        self.look = "undecided"
        if calibration.read_middles or calibration.empty_middle is None:
            self.look = "middles" if calibration.read_middles else "whole"

    def observe(self, frame: np.ndarray) -> Observation:
        """Read ``frame``; the frame that settles the question is read the new way."""
        observation = observe(frame, self.calibration)
        if self.look != "undecided" or not observation.valid or observation.solid is None:
            return observation
        if not observation.filled.all(axis=1).any():  # a full row may be a flash: not counted
            self.filled_cells += int(observation.filled.sum())
            self.filled_middles += int((observation.filled & observation.solid).sum())
        if self.filled_cells >= MIN_FILLED_CELLS:
            if self.filled_middles < FILLED_MIDDLES * self.filled_cells:
                self.look = "whole"
                return observation
            self.look = "middles"
            self.calibration = dataclasses.replace(self.calibration, read_middles=True)
            return observe(frame, self.calibration)
        filled = observation.filled
        if (filled & observation.solid).any() and (filled & ~observation.solid).any():
            # solid cells beside outlined ones (a piece and its ghost, a stack and a ghost): which
            # are the board's is not known yet, so no guess
            return dataclasses.replace(observation, valid=False, reason=UNDECIDED)
        return observation
