"""The reality check: after each placement, does the board the camera sees equal the board the ai predicted?

Pure: no sockets, no clocks.  The watchdog feeds it the ai's ``plan.keys`` (which piece a plan
places) and ``predict.board`` (the board after that placement and its clears), and the camera's
landings.  A landing is checked against the newest prediction made for the piece that landed
(a prediction whose plan was never seen counts for any piece); that prediction and every older
one are then used up, so a plan whose piece landed unseen is never compared with a later board.

One camera frame may report two landings (a piece that landed unseen, then the next one that
dropped and cleared rows before the camera committed a board): the board after the frame is
compared once, with the prediction for the last piece that landed in it.  The caller groups a
frame's events (see ``watchdog_core``).

Tested in tests/unit/test_reality_check.py with hand-made boards; not tested here: how often the
camera's committed board itself is wrong (that is the vision bench's figure).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

Board = tuple[str, ...]

#: Predictions kept while waiting for their landing; older ones are forgotten.
MAX_PENDING = 8


@dataclass(frozen=True)
class Verdict:
    """The outcome of one comparison."""

    plan_id: object
    matched: bool
    observed: Board
    predicted: Board
    #: Cells that differ between the two boards.
    differing_cells: int

    def describe(self) -> str:
        """One line for logs and the resync reason."""
        if self.matched:
            return f"plan {self.plan_id}: the observed board matches the prediction"
        return f"plan {self.plan_id}: the observed board differs from the prediction in {self.differing_cells} cells"


def differing_cells(a: Board, b: Board) -> int:
    """Cells that differ between two boards of strings ('.' empty, anything else full)."""
    if len(a) != len(b) or any(len(ra) != len(rb) for ra, rb in zip(a, b)):
        return sum(len(row) for row in a) + sum(len(row) for row in b)  # different shapes: all of them
    return sum((ca != ".") != (cb != ".") for ra, rb in zip(a, b) for ca, cb in zip(ra, rb))


class RealityCheck:
    """Matches landings with the ai's predictions; see the module docstring."""

    def __init__(self) -> None:
        self._pieces: OrderedDict[object, str] = OrderedDict()  # plan_id -> piece, from plan.keys
        self._predictions: OrderedDict[object, Board] = OrderedDict()  # plan_id -> board, oldest first

    @property
    def pending(self) -> int:
        """Predictions still waiting for their landing."""
        return len(self._predictions)

    def on_plan(self, plan_id: object, piece: str) -> None:
        """The ai committed plan ``plan_id`` for ``piece``."""
        self._pieces[plan_id] = piece
        self._pieces.move_to_end(plan_id)
        while len(self._pieces) > 4 * MAX_PENDING:
            self._pieces.popitem(last=False)

    def on_prediction(self, plan_id: object, board: Board) -> None:
        """The ai predicts ``board`` once plan ``plan_id`` has been placed."""
        self._predictions.pop(plan_id, None)
        self._predictions[plan_id] = tuple(board)
        while len(self._predictions) > MAX_PENDING:
            self._predictions.popitem(last=False)

    def on_landing(self, piece: str | None, observed: Board) -> Verdict | None:
        """Compare the board after a landing of ``piece`` with the newest prediction for that
        piece; None when there is none (the ai made no plan for it, or it is not playing)."""
        chosen = None
        for plan_id in reversed(self._predictions):
            planned = self._pieces.get(plan_id)
            if planned is None or piece is None or planned == piece:
                chosen = plan_id
                break
        if chosen is None:
            return None
        predicted = self._predictions[chosen]
        while True:  # this prediction and every older one are used up
            plan_id, _ = self._predictions.popitem(last=False)
            if plan_id == chosen:
                break
        observed = tuple(observed)
        cells = differing_cells(observed, predicted)
        return Verdict(chosen, cells == 0, observed, predicted, cells)

    def forget(self) -> None:
        """Drop every pending prediction (play halted: those plans will not be carried out)."""
        self._predictions.clear()
