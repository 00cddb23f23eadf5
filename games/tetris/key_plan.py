"""Key plans against gravity: does a key sequence, pressed at a steady cadence while the piece keeps
falling, put the piece where the plan says, and by when must its last key be down?

Pure: times are seconds after a reference instant the caller picks (the moment the piece was on
screen at its observed row); nothing reads a clock.  Keys and gravity are played through the
reference engine's ``after_key`` and ``after_fall`` (the simulator's game runs them too), so what
fits, what a rotation does and where a piece lands are not restated here.

Gravity's phase is unknown: a piece seen at row y got there at most one fall step earlier, so its
next fall comes at some phi in (0, step].  The outcome can only change where a fall time crosses a
key time, so :func:`check_keys` plays one phi inside each interval between those crossings: that
covers every phase, exactly (or every phase of a narrower interval, ``KeyTiming.first_fall_s``).  What this does not model: key edges that drift from the cadence
(the caller adds its measured latency to ``first_key_s`` and keeps a margin) and lost presses
(the closed loop in the ai service is the defence against those).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .board import Board
from .engine import DROP, ROTATE, FallingPiece, NotDefinedByRules, after_fall, after_key, fits
from .pieces import orientation_count
from .placements import keys_for
from .rules import Rules

#: Gravity rows simulated at most after the keys; more than any board is tall.
_MAX_FALLS = 1000


@dataclass(frozen=True)
class KeyTiming:
    """When keys reach the game and how fast it falls, in seconds after the reference instant.

    Key i (0-based) reaches the game at ``first_key_s + i * key_interval_s``; a final drop comes
    ``drop_delay_s`` later still (the closed loop's pause to confirm the piece before dropping it).
    ``first_fall_s``: the interval the piece's next fall comes in, when it is known better than
    "within a step" (a piece planned ahead for its predicted spawn falls a whole step after it,
    give or take the prediction's error).  ``turn_not_before_s``: no rotation reaches the game
    before this time (a piece in its spawn row can turn only after its first fall), the keys
    after it keeping their cadence from it.
    """

    first_key_s: float
    key_interval_s: float
    fall_step_s: float
    drop_delay_s: float = 0.0
    first_fall_s: tuple[float, float] | None = None
    turn_not_before_s: float = -float("inf")

    def __post_init__(self) -> None:
        if self.key_interval_s <= 0 or self.fall_step_s <= 0:
            raise ValueError(f"key interval and fall step must be positive: {self}")
        if self.drop_delay_s < 0:
            raise ValueError(f"drop delay must be >= 0, got {self.drop_delay_s}")
        if self.first_fall_s is not None and not 0.0 <= self.first_fall_s[0] < self.first_fall_s[1]:
            raise ValueError(f"the first fall's interval must be (a, b] with 0 <= a < b, got {self.first_fall_s}")

    def key_times(self, keys: Sequence[str]) -> list[float]:
        """When each of ``keys`` reaches the game."""
        times: list[float] = []
        for key in keys:
            t = times[-1] + self.key_interval_s if times else self.first_key_s
            times.append(max(t, self.turn_not_before_s) if key == ROTATE else t)
        if keys and keys[-1] == DROP:
            times[-1] += self.drop_delay_s
        return times

    def first_fall_window(self) -> tuple[float, float]:
        """The interval (a, b] the next fall comes in: within a step unless known better."""
        return self.first_fall_s if self.first_fall_s is not None else (0.0, self.fall_step_s)


@dataclass(frozen=True)
class KeyCheck:
    """The verdict on one key sequence.

    ``ok``: at every gravity phase the keys all reach the game while the piece is in play and it
    comes to rest on ``target``.  ``reason`` says why not; ``late`` when the piece lands first.  ``land_s``: the earliest (over the
    phases) time the piece lands by gravity alone after the keys before the final drop, i.e. the
    deadline for that drop; a plan without a final drop lands then.
    """

    keys: tuple[str, ...]
    ok: bool
    reason: str
    land_s: float
    late: bool = False  # failed for want of time (the piece lands first), not for a blocked path


class Poses:
    """The engine's keys and gravity on one board, each pose's outcome computed once:
    :func:`check_keys` plays the same poses at every gravity phase, and a planner checks many key
    sequences on one board (fitting each pose cell by cell again was most of the ai's planning
    time: a decision's checks took 7 times as long).  Keeps its own copy of the board."""

    def __init__(self, board: Board, rules: Rules) -> None:
        if rules.name != "standard":
            raise NotDefinedByRules("only Standard Tetris has keys and gravity")
        self.board = board.copy()
        self._after_key: dict[tuple[FallingPiece, str], FallingPiece] = {}
        self._after_fall: dict[FallingPiece, FallingPiece | None] = {}

    def on(self, board: Board) -> bool:
        """Whether ``board`` is the board these poses are on."""
        return self.board == board

    def key(self, piece: FallingPiece, key: str) -> FallingPiece:
        """Where ``key`` takes ``piece`` (:func:`.engine.after_key`)."""
        found = self._after_key.get((piece, key))
        if found is None:
            found = self._after_key[piece, key] = after_key(self.board, piece, key)  # type: ignore[arg-type]  # engine keys
        return found

    def fall(self, piece: FallingPiece) -> FallingPiece | None:
        """Where gravity takes ``piece`` (:func:`.engine.after_fall`): None where it lands."""
        if piece not in self._after_fall:
            self._after_fall[piece] = after_fall(self.board, piece)
        return self._after_fall[piece]


def keys_between(start: FallingPiece, orientation: int, x: int, *, lead: int = 0, drop: bool = True) -> tuple[str, ...]:
    """Keys that turn ``start`` to ``orientation`` and shift it to column ``x``, then drop it.

    Rotations first (Fahey's order, the one placements are enumerated with), except that the first
    ``lead`` column moves come before them: a piece still in its spawn row cannot turn yet (most
    orientations reach above the board), so it can use that time to travel instead.
    """
    turns = (orientation - start.orientation) % orientation_count(start.kind)
    keys = keys_for(turns, x, start.x)[:-1]  # keys_for: rotations, column moves, then the drop
    moves = keys[turns:]
    lead = min(lead, len(moves))
    return moves[:lead] + keys[:turns] + moves[lead:] + ((DROP,) if drop else ())


def check_keys(poses: Poses, start: FallingPiece, keys: Sequence[str], target: FallingPiece, timing: KeyTiming) -> KeyCheck:
    """Play ``keys`` against gravity from ``start`` on ``poses``' board at every phase; see
    :class:`KeyCheck`."""
    keys = tuple(keys)
    if not fits(poses.board, start.cells()):
        return KeyCheck(keys, False, "the observed piece overlaps the board", 0.0)
    moves = keys[:-1] if keys and keys[-1] == DROP else keys
    times = timing.key_times(keys)
    land_s = float("inf")
    for earliest, phase in _phases(times[: len(moves)], timing.fall_step_s, timing.first_fall_window()):
        rest, landed_at, pressed = play_keys(poses, start, moves, times, phase, timing.fall_step_s)
        land_s = min(land_s, landed_at - (phase - earliest))  # the same order of events, gravity as early as it can be
        if pressed < len(moves):
            return KeyCheck(keys, False, f"the piece lands before key {pressed + 1} of {len(keys)} ({moves[pressed]})", land_s, late=True)
        if sorted(rest.cells()) != sorted(target.cells()):
            return KeyCheck(keys, False, f"the keys leave the piece at orientation {rest.orientation} column {rest.x}, not {target.orientation} {target.x}", land_s)
    if len(moves) < len(keys) and times[-1] >= land_s:
        return KeyCheck(keys, False, f"the drop comes {times[-1] - land_s:.3f} s after the piece lands", land_s, late=True)
    return KeyCheck(keys, True, "", land_s)


def plan_keys(poses: Poses, start: FallingPiece, target: FallingPiece, timing: KeyTiming, *, drop: bool = True) -> KeyCheck:
    """Keys from ``start`` to ``target`` on ``poses``' board that work at every phase.

    Tries rotations first, then all column moves first, then fewer moves first (see
    :func:`keys_between`); returns the first that works, or the first order's verdict.  When the
    turns must wait (``timing.turn_not_before_s``) the column moves come first, using the wait, and
    rotations first come last.  Stops at a verdict of too late: another order has as many keys and
    cannot finish sooner.
    """
    shift = abs(target.x - start.x)
    verdicts = []
    leads = (*range(shift, 0, -1), 0) if timing.turn_not_before_s > timing.first_key_s else (0, *range(shift, 0, -1))
    for lead in leads:
        verdict = check_keys(poses, start, keys_between(start, target.orientation, target.x, lead=lead, drop=drop), target, timing)
        if verdict.ok:
            return verdict
        verdicts.append(verdict)
        if verdict.late or start.orientation == target.orientation:
            break  # too late for any order, or no rotations: every lead is the same sequence
    return verdicts[0]


def _phases(move_times: Sequence[float], step: float, window: tuple[float, float]) -> list[tuple[float, float]]:
    """Each interval of the first fall's ``window`` (a, b] in which the order of key and fall times
    is fixed, as (its start, a next-fall time inside it).  A key time t meets a fall when the first
    fall comes at t - k * step for some whole k >= 0."""
    a, b = window
    cuts = {a, b}
    for t in move_times:
        k = max(0, math.floor((t - b) / step))
        while t - k * step > a:
            if t - k * step < b:
                cuts.add(t - k * step)
            k += 1
    ordered = sorted(cuts)
    return [(lo, (lo + hi) / 2) for lo, hi in zip(ordered, ordered[1:])]


def play_keys(
    poses: Poses, start: FallingPiece, moves: Sequence[str], times: Sequence[float], first_fall: float, step: float
) -> tuple[FallingPiece, float, int]:
    """Moves at their times, gravity from ``first_fall`` on; returns where the piece rests, when
    gravity lands it, and how many moves reached it before that."""
    piece = start
    pressed = 0
    fall_t = first_fall
    for _ in range(_MAX_FALLS):
        while pressed < len(moves) and times[pressed] < fall_t:
            piece = poses.key(piece, moves[pressed])
            pressed += 1
        lower = poses.fall(piece)
        if lower is None:
            return piece, fall_t, pressed
        piece = lower
        fall_t += step
    raise RuntimeError("the piece never landed")  # unreachable on a board of at most 400 rows
