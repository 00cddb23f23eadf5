"""Commit what the camera sees only once it is stable and explainable by play.

A change of the observed board is committed after ``k`` agreeing consecutive frames, so a
single misread frame (noise, a half-drawn screen) never reaches the player, and a frame with
any cell read without confidence does not count; the latency this
adds is reported in frames and in seconds from the frames' own timestamps.  A stable board
that no move explains (more cells appear than one piece has, cells vanish without a full row
to clear or a lock that completes one), or that no game shows at rest (more than two pieces' cells
over an empty row: a line clear drawn row by row, even as the first board seen), is reported as
"unsure" and not committed: the rig does not guess.

An unexplained board is committed anyway ("resynced", for the tracker to re-read the stack) once
play itself vouches for it: when it is the last of ``resync_links`` stable boards in a row (each
seen ``k`` times) that each follow from the one before by one step of play.  After a camera
outage, freeze or reconnect, or when the filter started on a screen that was no play (the
calibration), the committed board is stale by many steps, and play at level 10 shows no board
for long (a new row every 3 frames, a new piece every ~20): waiting for ``resync_frames``
identical frames left the camera blind for seconds (a replayed level-10 run: 3 s after a 1 s
outage, and never, 266 of 320 pieces unnamed, when started during calibration).  Misreads do
not chain so: a line-clear animation flashes back to the committed board (which restarts the
chain), a well filling at game over adds a row at a time, a still misread repeats one board.
Until the next commit, the frames after an unexplained board, or after a gap in the frames
longer than ``gap_s`` (an outage; a frozen camera's repeats keep their first capture time, so
its end is such a gap), are "unsure" rather than "pending": the committed board is stale then.
The first commit after a gap is "resynced" (with the gap as its reason) even when one step of play
would explain it: pieces may have landed and spawned unseen, and a reader that cannot follow the
change (after a 1 s freeze at level 10 a piece had locked and the next was half-way down) re-reads
the stack at once instead of waiting out its own timeout, which cost 0.75 s of blindness.

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
    #: stable for ``resync_frames`` or ending a chain of play, or the first commit after a gap
    #: in the frames (``reason`` says what was unexplained, or the gap); unsure: a stable change
    #: no move explains, or a cell read without confidence, or (until the next commit) a frame
    #: after such a change or after a gap in the frames; no_observation: a frame recognition refused.
    status: Status
    #: The committed board (rows x cols bool, bottom row first); None before the first commit.
    board: np.ndarray | None
    #: On a commit: frames and seconds between the change's first frame and its commit.
    latency_frames: int = 0
    latency_s: float = 0.0
    reason: str = ""
    #: On a resync that ends a chain of play: the stable board before it in the chain (what
    #: moved between the two is the falling piece); else None.
    previous: np.ndarray | None = None


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


def _floating(board: np.ndarray) -> str:
    """Why no game at rest shows ``board``: more than two pieces' cells over an empty row (a
    line clear being drawn, the full rows already erased and the stack not yet dropped); ""
    when it could be a stack under a piece in the air (and the first cells of the next one, or
    a misread cell, above it)."""
    empty_rows = np.flatnonzero(~board.any(axis=1))
    above = int(board[empty_rows[0] :].sum()) if len(empty_rows) else 0
    return f"{above} cells over an empty row: a line clear being drawn" if above > 2 * PIECE_CELLS else ""


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
    gap) cannot freeze the filter for ever; it is committed sooner when it ends a chain of
    ``resync_links`` stable boards that follow one another by steps of play.  Capture times more
    than ``gap_s`` apart are a gap in the frames (module docstring).  ``reset`` forgets the
    committed board (a new game, a new calibration).
    """

    def __init__(
        self,
        k: int = 2,
        min_confidence: float = AMBIGUOUS_CONFIDENCE,
        resync_frames: int = 30,
        resync_links: int = 3,
        gap_s: float = 0.1,
    ) -> None:
        if k < 1:
            raise ValueError(f"k (agreeing frames before a commit) must be at least 1, got {k}")
        if resync_frames < k:
            raise ValueError(f"resync_frames ({resync_frames}) must be at least k ({k})")
        if not 0.0 <= min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be within 0..1, got {min_confidence}")
        if resync_links < 2:
            raise ValueError(f"resync_links (stable boards in a chain of play) must be at least 2, got {resync_links}")
        if gap_s <= 0:
            raise ValueError(f"gap_s must be positive, got {gap_s}")
        self.k = k
        self.min_confidence = min_confidence
        self.resync_frames = resync_frames
        self.resync_links = resync_links
        self.gap_s = gap_s
        self.reset()

    def reset(self) -> None:
        """Forget the committed board and any pending change."""
        self._committed: np.ndarray | None = None
        self._candidate: np.ndarray | None = None
        self._run = 0
        self._first_seen = 0.0
        self._stable: np.ndarray | None = None  # the last board seen k times in a row
        self._links = 0  # stable boards in a row, up to _stable, each one step of play from the one before
        self._previous: np.ndarray | None = None  # the link before _stable, if it is one
        self._stale = ""  # why the committed board may be stale, until the next commit
        self._gap = ""  # a gap in the frames since the last commit (its reason)
        self._last_t: float | None = None

    @property
    def committed(self) -> np.ndarray | None:
        """The last committed board (rows x cols bool), or None."""
        return self._committed

    def update(self, observation: Observation, timestamp: float) -> FilterUpdate:
        """Feed one frame's observation, captured at ``timestamp`` seconds."""
        if self._last_t is not None and timestamp - self._last_t > self.gap_s:
            self._candidate, self._run = None, 0  # agreement across a gap is not consecutive
            self._stale = self._gap = f"no frame for {timestamp - self._last_t:.2f} s: the board may have changed unseen"
        self._last_t = timestamp
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
            self._stable, self._links, self._stale, self._gap = self._committed, 1, "", ""  # a flash back to it ends any chain
            return FilterUpdate("steady", self._committed)
        if self._candidate is not None and np.array_equal(seen, self._candidate):
            self._run += 1
        else:
            self._candidate, self._run, self._first_seen = seen.copy(), 1, timestamp
        if self._run < self.k:
            return FilterUpdate("unsure" if self._stale else "pending", self._committed, reason=self._stale)
        if self._run == self.k:
            self._link(self._candidate)
        reason = _floating(self._candidate) or ("" if self._committed is None else _unexplained(self._committed, self._candidate))
        if reason and self._run < self.resync_frames and self._links < self.resync_links:
            self._stale = reason
            return FilterUpdate("unsure", self._committed, reason=reason)
        latency_frames, latency_s = self._run - 1, timestamp - self._first_seen
        previous = self._previous if reason and self._links >= self.resync_links else None
        self._committed, self._candidate, self._run = self._candidate, None, 0
        self._stable, self._links, self._stale = self._committed, 1, ""
        reason, self._gap = reason or self._gap, ""
        status = "resynced" if reason else "committed"
        return FilterUpdate(status, self._committed, latency_frames, latency_s, reason, previous)

    def _link(self, board: np.ndarray) -> None:
        """Note a board just seen ``k`` times in a row: the chain grows when one step of play
        leads to it from the last stable board, and starts again from it otherwise."""
        if self._stable is not None and np.array_equal(board, self._stable):
            return
        follows = self._stable is not None and not _floating(board) and not _unexplained(self._stable, board)
        self._previous = self._stable if follows else None
        self._stable, self._links = board, (self._links + 1 if follows else 1)
