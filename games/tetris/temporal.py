"""Commit what the camera sees only once it is stable and explainable by play.

A change of the observed board is committed after ``k`` agreeing consecutive frames, so a
single misread frame (noise, a half-drawn screen) never reaches the player, and a frame with
any cell read without confidence does not count; the latency this
adds is reported in frames and in seconds from the frames' own timestamps.  A stable board
that no move explains (more cells appear than one piece has, cells vanish without a full row
to clear or a lock that completes one) is reported as "unsure" and not committed: the rig does
not guess.

Pure: timestamps come in with the observations.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import numpy as np

from .recognition import AMBIGUOUS_CONFIDENCE, Observation

#: Cells one piece has: the most a spawn, a lock or a move can add or remove.
PIECE_CELLS = 4

Status = Literal["steady", "pending", "committed", "resynced", "unsure", "no_observation"]


@dataclass(frozen=True)
class FilterUpdate:
    """The filter's answer to one frame."""

    #: steady: same as committed; pending: a change not yet seen k times; committed: the change
    #: was just committed; resynced: a change no move explains was committed after staying
    #: stable for ``resync_frames`` (``reason`` says what was unexplained); unsure: a stable
    #: change no move explains, or a cell read without confidence; no_observation: a frame
    #: recognition refused.
    status: Status
    #: The committed board (rows x cols bool, bottom row first); None before the first commit.
    board: np.ndarray | None
    #: On a commit: frames and seconds between the change's first frame and its commit.
    latency_frames: int = 0
    latency_s: float = 0.0
    reason: str = ""


def _after_clearing_full_rows(board: np.ndarray) -> np.ndarray:
    """The board with its full rows removed and the rows above dropped down."""
    kept = board[~board.all(axis=1)]
    return np.vstack([kept, np.zeros((board.shape[0] - len(kept), board.shape[1]), dtype=bool)])


def _completed_and_cleared(before: np.ndarray, after: np.ndarray) -> bool:
    """True when a piece can have locked, completed rows that cleared, and the next piece can
    have appeared, all between ``before`` and ``after`` (a drop that locks at once, in a game
    that shows no line-clear animation).

    The completed rows lie within one piece's height and miss at most one piece's cells, within
    its width; after the collapse the piece in the air has gone (at most PIECE_CELLS cells) and
    the locked piece's other cells and the next piece have come (fewer than two pieces' cells).
    """
    missing = (~before).sum(axis=1)
    nearly = np.flatnonzero((missing > 0) & (missing <= PIECE_CELLS))
    for count in range(1, min(PIECE_CELLS, len(nearly)) + 1):
        for rows in map(list, combinations(nearly, count)):
            gaps = np.nonzero(~before[rows])[1]
            if rows[-1] - rows[0] >= PIECE_CELLS or len(gaps) > PIECE_CELLS or np.ptp(gaps) >= PIECE_CELLS:
                continue
            completed = before.copy()
            completed[rows] = True
            cleared = _after_clearing_full_rows(completed)
            if int((cleared & ~after).sum()) <= PIECE_CELLS and int((after & ~cleared).sum()) < 2 * PIECE_CELLS:
                return True
    return False


def _unexplained(before: np.ndarray, after: np.ndarray) -> str:
    """Why no single step of play turns ``before`` into ``after``; "" when one does.

    A step adds and removes at most one piece's cells (a spawn, a lock, a move of the falling
    piece), possibly after clearing the full rows of ``before``, or it is a lock that completed
    rows which cleared at once (``_completed_and_cleared``), or the falling piece dropped and
    locked and the next piece spawned (its cells moved, one piece's cells more).
    """
    added, removed = int((after & ~before).sum()), int((before & ~after).sum())
    if added <= PIECE_CELLS and removed <= PIECE_CELLS:
        return ""
    if 0 < removed <= PIECE_CELLS and added == removed + PIECE_CELLS:
        return ""  # the falling piece dropped and locked, and the next one spawned, between two commits
    if before.all(axis=1).any():
        cleared = _after_clearing_full_rows(before)
        if int((after & ~cleared).sum()) <= PIECE_CELLS and int((cleared & ~after).sum()) <= PIECE_CELLS:
            return ""
    if _completed_and_cleared(before, after):
        return ""
    if added > PIECE_CELLS:
        return f"{added} cells appeared at once; one piece has {PIECE_CELLS}"
    return f"{removed} cells vanished with no full row to clear"


class BoardFilter:
    """Commits an observed board after ``k`` agreeing consecutive valid frames.

    Any frame that disagrees, is no observation or has a cell less sure than
    ``min_confidence`` restarts the count: agreement must be consecutive.  A board no move
    explains stays "unsure" until it has been seen ``resync_frames`` times in a row; then it is
    committed as "resynced", so a missed step (a lock and a clear between two frames, a frame
    gap) cannot freeze the filter for ever.  ``reset`` forgets the committed board (a new game,
    a new calibration).
    """

    def __init__(self, k: int = 2, min_confidence: float = AMBIGUOUS_CONFIDENCE, resync_frames: int = 30) -> None:
        if k < 1:
            raise ValueError(f"k (agreeing frames before a commit) must be at least 1, got {k}")
        if resync_frames < k:
            raise ValueError(f"resync_frames ({resync_frames}) must be at least k ({k})")
        if not 0.0 <= min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be within 0..1, got {min_confidence}")
        self.k = k
        self.min_confidence = min_confidence
        self.resync_frames = resync_frames
        self.reset()

    def reset(self) -> None:
        """Forget the committed board and any pending change."""
        self._committed: np.ndarray | None = None
        self._candidate: np.ndarray | None = None
        self._run = 0
        self._first_seen = 0.0

    @property
    def committed(self) -> np.ndarray | None:
        """The last committed board (rows x cols bool), or None."""
        return self._committed

    def update(self, observation: Observation, timestamp: float) -> FilterUpdate:
        """Feed one frame's observation, captured at ``timestamp`` seconds."""
        if not observation.valid:
            self._candidate, self._run = None, 0
            return FilterUpdate("no_observation", self._committed, reason=observation.reason)
        doubtful = int((observation.confidence < self.min_confidence).sum())
        if doubtful:
            self._candidate, self._run = None, 0
            return FilterUpdate("unsure", self._committed, reason=f"{doubtful} cells read without confidence")
        seen = observation.filled
        if self._committed is not None and np.array_equal(seen, self._committed):
            self._candidate, self._run = None, 0
            return FilterUpdate("steady", self._committed)
        if self._candidate is not None and np.array_equal(seen, self._candidate):
            self._run += 1
        else:
            self._candidate, self._run, self._first_seen = seen.copy(), 1, timestamp
        if self._run < self.k:
            return FilterUpdate("pending", self._committed)
        reason = "" if self._committed is None else _unexplained(self._committed, self._candidate)
        if reason and self._run < self.resync_frames:
            return FilterUpdate("unsure", self._committed, reason=reason)
        latency_frames, latency_s = self._run - 1, timestamp - self._first_seen
        self._committed, self._candidate, self._run = self._candidate, None, 0
        return FilterUpdate("resynced" if reason else "committed", self._committed, latency_frames, latency_s, reason)
