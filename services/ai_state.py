"""What the ai service keeps about the pieces it steers, and how it reads a piece from a message."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import FallingPiece
from gamerig.games.tetris.pieces import PIECE_NAMES, orientation_count
from gamerig.games.tetris.placements import Placement

from .ai_planner import KeyPlan

PLAN_TIMES_KEPT = 200  # planning times the heartbeat's p50/max summarise


@dataclass
class PieceInPlay:
    """The piece being steered: its plan lineage and what the closed loop waits for."""

    root: str
    piece: str
    first_seq: int  # the frame it was first seen in
    t_seen: float
    level: int
    board_before: Board
    placement: Placement
    plan: KeyPlan  # the part sent last
    part: int = 0
    start: tuple[int, float] = (0, 0.0)  # the row it was planned from and when it was there (t_state)
    lowest_y: int = 1 << 30
    relay_done: bool = False
    last_down_t: float | None = None
    corrections: int = 0
    deadline_t: float = float("inf")  # of the part sent last
    dropped_at: float | None = None  # when the relay pressed its drop: the piece landed then
    next_at_drop: str | None = None  # the preview's piece when the drop went down
    pressed: int = 0  # keys of the part sent last that the relay reported down
    #: Frames showing the game before this show the piece short of where its part starts: an early
    #: second thought starts where the keys were counted to put it, not where a frame showed it.
    fresh_after: float = -float("inf")
    #: The part starts where keys counted since a known pose put the piece, not where a frame showed
    #: it (an early second thought): that pose (a frame's, or the spawn) and those keys, one of
    #: which may have been lost as well as one of the part's (services/ai.py's ``_watch_keys``).
    counted_from: tuple[FallingPiece, tuple[str, ...]] | None = None
    #: Planned ahead: the predicted spawn its keys were timed from (the relay's clock); None once its
    #: first frame showed it came later (services/ai_ahead.py's ``confirm_from``).
    spawn_t: float | None = None
    drop_retries: int = 0
    #: Confirmed on target too late in its fall for a lost drop to be pressed again: no drop was
    #: pressed, and ``dropped_at`` is the tick gravity lands it on (services/ai_ahead.py).
    left_to_gravity: bool = False
    #: The part an empty part is stopping so that the piece goes to its second thought at once
    #: (services/ai.py's ``_think_early``), and that part's deadline; its keys reported down still
    #: count in ``pressed``.
    rethinking: tuple[str, float] | None = None
    #: Its drop was lost: the frame that showed it still falling (pose, t_state) and when the lost
    #: drop went down, kept while an empty part stops the keys after the drop (services/ai.py).
    stopping: tuple[FallingPiece, float, float] | None = None
    #: Off target in a frame: (orientation, x) and the t_state it was first seen so; a correction
    #: waits until frames have agreed for CORRECTION_EVIDENCE_S.
    suspect: tuple[tuple[int, int], float] | None = None
    #: A frame's pose that only a lost key of the part explains (services/ai_lost_key.py): where the
    #: part's keys leave the piece (the frame's row), the frame's t_state, and how many frames agreed.
    lost_key: tuple[FallingPiece, float, int] | None = None
    finished: bool = False  # the drop was sent, or the loop gave up
    next_piece: str | None = None  # the preview's piece while this one was in play
    #: Where the player puts this piece once the preview showed the piece after it, if elsewhere
    #: than its placement, chosen without that piece; tried at its confirmation (services/ai.py).
    second_thought: Placement | None = None
    predicted: Board | None = None  # the board after its placement
    lines_cleared: int = 0

    @property
    def part_id(self) -> str:
        return self.root if self.part == 0 else f"{self.root}.{self.part}"

    def previews_its_next(self, t_capture: float, key_latency_s: float) -> bool:
        """Whether a frame taken at ``t_capture`` shows, in the preview, the piece after this one:
        not once its drop acted, when the next piece may have spawned with the piece after that
        in the preview.  At level 10, with a camera that could not read the I in the preview, a
        frame taken just after a drop named the piece after the I, which was then planned ahead
        as the piece after the dropped one: its keys moved the I, a mismatch each time."""
        return self.dropped_at is None or t_capture < self.dropped_at + key_latency_s


@dataclass
class PendingSpawn:
    """A spawn event waiting for the frame that shows its preview."""

    body: dict[str, Any]
    until: float


@dataclass
class Counters:
    """What the heartbeat's stats report."""

    plans: int = 0
    corrections: int = 0
    lost_keys: int = 0  # corrections sent early: a frame showed a key of the part was lost
    retargets: int = 0  # off target and out of reach: planned again from where the piece was
    second_thoughts: int = 0  # confirmed on target, then sent to where the piece after it is better served
    confirmations: int = 0
    deferred: int = 0
    key_waits: int = 0  # new pieces planned from a later frame, one sure to show the keys pressed on them
    blind_drops: int = 0
    drop_retries: int = 0
    deadline_misses: int = 0
    bad_messages: int = 0
    timed_drops: int = 0
    gravity_landings: int = 0  # pieces on target left to land by gravity, their drop not pressed
    stale_stops: int = 0  # parts stopped because a resync's stack left their keys astray
    ahead_sent: int = 0
    ahead_used: int = 0
    ahead_discarded: int = 0
    plan_ms: deque[float] = field(default_factory=lambda: deque(maxlen=PLAN_TIMES_KEPT))


def falling_piece(body: dict[str, Any]) -> FallingPiece:
    """An obs.frame's falling piece; ValueError for an impossible one."""
    kind = piece_name(body["piece"])
    orientation = int(body["orientation"])
    if not 1 <= orientation <= orientation_count(kind):
        raise ValueError(f"piece {kind} has no orientation {orientation}")
    return FallingPiece(kind, orientation, int(body["x"]), int(body["y"]))


def piece_name(value: object) -> str:
    """A message's piece letter; ValueError for anything else."""
    if not isinstance(value, str) or len(value) != 1 or value not in PIECE_NAMES:
        raise ValueError(f"piece must be one of {PIECE_NAMES}, got {value!r}")
    return value
