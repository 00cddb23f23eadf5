"""The ai's decisions for one piece: a placement whose keys can finish in time, and corrections.

No I/O; the clock is injected (it only measures how long planning took, which the key timing must
include).  Times are seconds after a reference instant ``t_state``: when the screen showed the
piece where it was observed (a frame's t_capture minus the view latency).

Choosing: the configured Player picks a placement, with its weights for the level (a player's
``at_speed``: the gamerig player keeps the pile lower at level 10, where the keys reach less far)
(two-piece with the preview; without the piece after it, as when planning ahead, re-valuing its
best few by the expected reply over the seven at every height), with a search budget of
PLAN_BUDGET_STEPS fall steps.  Its keys are simulated against gravity at the level
(games/tetris/key_plan.py); if they cannot finish before the piece lands, the next best placements
by the player's one-piece rating are tried in turn (at most MAX_ALTERNATIVES), and if none works
there is no plan (the piece falls where it is: a deadline miss).  A piece still in its spawn row
whose first choice does not work is deferred instead: most rotations only fit one row lower, and
planning again from there costs at most a fall step.

Planning ahead (the ai plans the next piece before it appears, from its spawn position at the
predicted spawn time): ``first_key_t`` is when the relay will press the first key at the earliest
(the plan's ``start_t``), ``t_state`` is the predicted spawn on the relay's clock (a key down before
it acts before the spawn, one down after it after), so ``key_latency_s`` is 0 there, and ``detour`` lets a placement that needs only turns step aside and back
around them (``<side>, rotate.., <other side>``) when the direct keys cannot start at once: a piece
in its spawn row cannot turn (most orientations reach above the board), so without the detour the
first key would wait a whole fall step.  The piece spawned on a gravity tick, so its first fall
comes a step later (``first_fall_s``: that, give or take the spawn prediction's error): where the
keys at the relay's cadence would turn it too early, its turns wait for that fall (``KeyPlan.down_s``,
published as ``key_t``) and the column moves go first, in the spawn row.  A placement right below the spawn gets the same step
aside and back before its confirmed drop (closed loop): dropped at once, the piece would be gone
before the camera showed it (the ai could neither adopt it nor read the preview it brings, so the
piece after it could not be planned ahead).  Two extra presses; used only when the keys still
finish in time at every gravity phase, else the plain keys.

Closed loop (policy ``play.closed_loop``), taken only when it costs no deadline: the plan's keys
stop before the drop, and the drop (or a correction) follows once a camera frame confirms the
piece's orientation and column.  It is used when the simulation says the drop, delayed by the
confirmation's round trip (``confirm_delay_s``), still comes before the piece would land; else the
plan carries its drop (open loop).

A target that touches a wall gets one more move towards it after the others, where the keys
still finish in time with a key to spare (``_wall_guarded``): a no-op at the wall, it makes a lost
move good before the camera could show the loss.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from gamerig.games.tetris import kernel
from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import DROP, LEFT, RIGHT, ROTATE, FallingPiece, after_key
from gamerig.games.tetris.key_plan import KeyCheck, KeyTiming, Poses, check_keys, plan_keys
from gamerig.games.tetris.pieces import orientation_count
from gamerig.games.tetris.placements import Placement, enumerate_placements, kind_of, placement_from_row
from gamerig.games.tetris.players import Player
from gamerig.games.tetris.rules import iteration_delay

from .ai_settings import AiSettings

#: The player's search budget, in fall steps at the current level.
PLAN_BUDGET_STEPS = 0.25
#: Placements tried after the player's choice when its keys cannot finish in time ...
MAX_ALTERNATIVES = 12
#: ... while planning has taken less than this many fall steps.
PLAN_LIMIT_STEPS = 1.0
#: Between the timing computed here and the plan leaving on the bus.
PUBLISH_MARGIN_S = 0.003


@dataclass(frozen=True)
class KeyPlan:
    """Keys to publish now and what they lead to.

    ``final``: the keys end with the drop (open loop, or the last step of a closed loop);
    otherwise the drop waits for a confirming frame.  ``deadline_s``: the latest time a key may go
    down at the relay (relative to t_state).
    """

    target: FallingPiece
    keys: tuple[str, ...]
    final: bool
    deadline_s: float
    check: KeyCheck
    start: FallingPiece  # where the keys were planned from
    timing: KeyTiming  # when they act, as ``check`` found them in time
    #: When each key may go down at the earliest (relative to t_state), if some must wait for
    #: more than the relay's cadence (a turn after the first fall); None: each as soon as it can.
    down_s: tuple[float, ...] | None = None


@dataclass(frozen=True)
class PieceDecision:
    """A placement with its first keys, the board it predicts and how it was chosen."""

    placement: Placement
    plan: KeyPlan
    predicted: Board
    lines_cleared: int
    alternative: int  # 0: the player's choice; n: the n-th best one-piece placement instead; -1: dropped where it is
    elapsed_s: float


class Planner:
    """Plans pieces and corrections for one rule set, player and key cadence."""

    def __init__(self, settings: AiSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.rules = settings.rules
        # The piece after the one planned is unknown when planning ahead (the preview shows the
        # planned piece itself): the player weighs it by expectation over the seven at every height,
        # not only near the top (its expect_rows): at level 10 the keys' reach ends games well below
        # the top.  About 0.3 ms a decision.
        self._spec = replace(settings.player, expect_rows=0)
        self._players: dict[int, Player] = {}
        self._poses: Poses | None = None
        self.clock = clock

    def player_at(self, level: int) -> Player:
        """The player that chooses at ``level``: the configured one, with its weights for that speed."""
        if level not in self._players:
            self._players[level] = Player(self._spec.at_level(level), self.rules)
        return self._players[level]

    def decide(
        self, board: Board, start: FallingPiece, next_piece: str | None, level: int, t_state: float,
        first_key_t: float | None = None, detour: bool = False, key_latency_s: float | None = None,
        first_fall_s: tuple[float, float] | None = None,
    ) -> PieceDecision | None:
        """Plan the piece ``start`` on ``board``; None to defer (spawn row) or when nothing fits in
        time.  ``first_key_t``, ``detour``, ``key_latency_s`` and ``first_fall_s``: see the module
        docstring (planning ahead)."""
        began = self.clock()
        step = iteration_delay(level)
        decision = self.player_at(level).choose(board, start.kind, next_piece if self.settings.preview else None, PLAN_BUDGET_STEPS * step)
        if decision.placement is None:
            return None
        for rank, placement in enumerate(self._candidates(board, decision.placement, level)):
            if rank and self.clock() - began > PLAN_LIMIT_STEPS * step:
                return None  # a plan found later than this could hardly still be in time
            target = FallingPiece(placement.piece, placement.orientation, placement.x, placement.y)
            plan = self.keys_to(
                board, start, target, level, t_state, confirm_again=True, first_key_t=first_key_t, detour=detour, key_latency_s=key_latency_s,
                first_fall_s=first_fall_s,
            )
            if plan is not None:
                predicted, cleared = self.settle(board, placement)
                return PieceDecision(placement, plan, predicted, cleared, rank, self.clock() - began)
            if rank == 0 and start.y == self.rules.spawn_y:
                return None  # deferred: planned again one row lower
        return None

    def warm_up(self) -> None:
        """Load every compiled kernel that planning calls, so that no piece in play waits for one:
        a kernel's first call loads it from numba's cache (most of a second) or compiles it (some
        20 s, once per installation).  Each is called here directly rather than through
        ``decide``, whose keys, late after that wait, would not reach the settling of a placement:
        the first piece planned in play did, and waited a second at level 10 (five pieces fell
        unsteered at the start of a bench run)."""
        rules = self.rules
        board = Board(rules.width, rules.height)
        player = self.player_at(self.settings.initial_level)
        player.choose(board, "T", "I")  # the two-piece search, with the preview
        placement = player.choose(board, "T", None).placement  # the one-piece search, without
        assert placement is not None, "every piece has a placement on an empty board"
        self._candidates(board, placement, self.settings.initial_level)
        self.landing(board, placement)
        self.settle(board, placement)

    def keys_to(
        self, board: Board, start: FallingPiece, target: FallingPiece, level: int, t_state: float, confirm_again: bool,
        first_key_t: float | None = None, detour: bool = False, key_latency_s: float | None = None,
        first_fall_s: tuple[float, float] | None = None, confirm_rounds: int = 1,
    ) -> KeyPlan | None:
        """Keys from ``start`` (observed at t_state) to ``target`` that finish in time, closed loop
        if allowed and ``confirm_rounds`` confirmations fit before the piece would land (the plan
        waits for one; more leave room for a correction or a repeated drop); None if none do.  The
        first key goes down at ``first_key_t`` or as soon as the plan can be published, whichever is
        later; a key acts ``key_latency_s`` after it goes down (the settings' by default).  ``first_fall_s``: when the piece's next fall comes
        (after t_state), if known; a piece in its spawn row may then turn after it (see the module
        docstring, planning ahead)."""
        step = iteration_delay(level)
        latency = self.settings.key_latency_s if key_latency_s is None else key_latency_s
        first_key_s = max(self.clock() + PUBLISH_MARGIN_S, first_key_t or -float("inf")) + latency - t_state
        timing = KeyTiming(first_key_s, self.settings.key_interval_s, step, first_fall_s=first_fall_s)
        in_place = start.orientation == target.orientation and start.x == target.x
        at_spawn = detour and start.x == target.x and start.y == self.rules.spawn_y
        if in_place and not (at_spawn and confirm_again and self.settings.closed_loop):
            verdict = check_keys(self._poses_on(board), start, (DROP,), target, timing)
            return self._plan(start, target, verdict, final=True, latency=latency, timing=timing) if verdict.ok else None
        timings = [timing]
        if first_fall_s is not None and start.y == self.rules.spawn_y and not in_place:
            timings.append(replace(timing, turn_not_before_s=first_fall_s[1]))
        verdict = None
        for timing in timings:
            verdict = plan_keys(self._poses_on(board), start, target, timing) if not in_place else None
            if (verdict is None or not verdict.ok) and at_spawn:
                verdict = self._detour(board, start, target, timing) or verdict
            if verdict is not None and verdict.ok:
                break
        if verdict is None or not verdict.ok:
            if in_place:
                return self.keys_to(board, start, target, level, t_state, False, first_key_t, False, key_latency_s, first_fall_s)
            return None
        guarded = self._wall_guarded(board, start, target, verdict.keys, timing)
        verdicts = [guarded, verdict] if guarded is not None else [verdict]
        if confirm_again and self.settings.closed_loop:  # only where the open loop works: it is the easier
            closed_timing = replace(timing, drop_delay_s=confirm_rounds * self.settings.confirm_delay_s)
            for open_verdict in verdicts:
                closed = check_keys(self._poses_on(board), start, open_verdict.keys, target, closed_timing)
                if closed.ok and (open_verdict is not guarded or self._spares_a_key(board, start, target, closed.keys, closed_timing)):
                    return self._plan(start, target, closed, final=False, latency=latency, timing=closed_timing)
        return self._plan(start, target, verdicts[0], final=True, latency=latency, timing=timing)

    def still_in_time(self, board: Board, plan: KeyPlan) -> bool:
        """Whether ``plan``'s keys, timed as planned, still take its piece to its target on
        ``board`` (a resync's) before it lands."""
        return check_keys(self._poses_on(board), plan.start, plan.check.keys, plan.target, plan.timing).ok

    def _poses_on(self, board: Board) -> Poses:
        """Keys and gravity on ``board``, shared by every check on it until planning moves to
        another board (a decision checks a dozen key sequences on one)."""
        if self._poses is None or not self._poses.on(board):
            self._poses = Poses(board, self.rules)
        return self._poses

    def second_thought(self, board: Board, chosen: Placement, next_piece: str, level: int) -> Placement | None:
        """Where the player puts ``chosen``'s piece on ``board`` now that the piece after it is known
        (``chosen`` was planned without it, as every plan made ahead is), if not at ``chosen``."""
        better = self.player_at(level).choose(board, chosen.piece, next_piece, PLAN_BUDGET_STEPS * iteration_delay(level)).placement
        if better is None or (better.rotations, better.x) == (chosen.rotations, chosen.x):
            return None
        return better

    def _wall_guarded(self, board: Board, start: FallingPiece, target: FallingPiece, keys: tuple[str, ...], timing: KeyTiming) -> KeyCheck | None:
        """``keys`` with one more move towards the wall ``target`` touches, after the others, if they
        still finish in time; None if the target touches no wall or the keys move away from it.

        At the target the extra move is blocked (a no-op); after a lost move it makes the loss
        good with no correction.  A lost move towards a wall shows only once the moves are done
        (every pose short of the wall is also on the keys' own way), a view latency and the closed
        loop's evidence later: at level 10 too late for a correction when the stack is high, and
        in `gamerigctl bench rig` faults runs such a piece (an I stood one column short of its well)
        began the end of a game."""
        columns = [x for x, _ in target.cells()]
        side = LEFT if min(columns) == 1 else RIGHT if max(columns) == self.rules.width else None
        if side is None or {key for key in keys if key in (LEFT, RIGHT)} != {side}:
            return None
        moves = keys[:-1] if keys[-1] == DROP else keys
        guarded = check_keys(self._poses_on(board), start, (*moves, side, DROP), target, timing)
        return guarded if guarded.ok and self._spares_a_key(board, start, target, guarded.keys, timing) else None

    def _spares_a_key(self, board: Board, start: FallingPiece, target: FallingPiece, keys: tuple[str, ...], timing: KeyTiming) -> bool:
        """Whether ``keys`` would still finish in time with their drop a key later: the extra move
        must not eat the margin the relay's cadence needs (it runs a few ms a key behind the
        nominal one; a level-10 run without faults missed two deadlines on such moves)."""
        later = replace(timing, drop_delay_s=timing.drop_delay_s + self.settings.key_interval_s)
        return check_keys(self._poses_on(board), start, keys, target, later).ok

    def _detour(self, board: Board, start: FallingPiece, target: FallingPiece, timing: KeyTiming) -> KeyCheck | None:
        """Turns only (or none), from the spawn row: a step aside, the turns, the step back (either side)."""
        turns = (ROTATE,) * ((target.orientation - start.orientation) % orientation_count(start.kind))
        for side, back in ((LEFT, RIGHT), (RIGHT, LEFT)):
            verdict = check_keys(self._poses_on(board), start, (side, *turns, back, DROP), target, timing)
            if verdict.ok:
                return verdict
        return None

    def _plan(self, start: FallingPiece, target: FallingPiece, verdict: KeyCheck, final: bool, latency: float, timing: KeyTiming) -> KeyPlan:
        keys = verdict.keys if final else verdict.keys[:-1]
        waits = timing.turn_not_before_s > timing.first_key_s and ROTATE in keys
        down_s = tuple(t - latency for t in timing.key_times(keys)) if waits else None
        return KeyPlan(target, keys, final, verdict.land_s - latency, verdict, start, timing, down_s)

    def _candidates(self, board: Board, chosen: Placement, level: int) -> list[Placement]:
        """The player's choice, then the other placements by the player's one-piece rating."""
        rules, player = self.rules, self.player_at(level)
        out = np.zeros((kernel.MAX_CANDIDATES, 3), dtype=np.int64)
        ratings = np.zeros(kernel.MAX_CANDIDATES, dtype=np.float64)
        n, _, _ = kernel.rate_candidates(
            board.cells, kind_of(chosen.piece), rules.name == "standard", rules.clearable_rows, player.weights,
            player.use_priority, out, ratings, np.zeros((rules.height, rules.width), dtype=np.uint8),
            np.zeros(rules.width, dtype=np.int64), np.zeros(rules.width, dtype=np.int64), np.zeros(kernel.N_FEATURES),
        )
        order = np.argsort(-ratings[: max(n, 0)], kind="stable")
        others = [placement_from_row(chosen.piece, out[i], rules) for i in order if ratings[i] > kernel.NEG_INF]
        return [chosen] + [p for p in others if (p.rotations, p.x) != (chosen.rotations, chosen.x)][:MAX_ALTERNATIVES]

    def drop_in_place(self, board: Board, start: FallingPiece, level: int, t_state: float) -> PieceDecision | None:
        """``start`` dropped where it is (no turn, no move): the placement that is always quickest,
        for a piece nothing else can reach in time; None if even its drop comes too late."""
        began = self.clock()
        plan = self.keys_to(board, start, after_key(board, start, DROP), level, t_state, confirm_again=False)
        if plan is None:
            return None
        placement, predicted, cleared = self.fall_in_place(board, start)
        return PieceDecision(placement, plan, predicted, cleared, -1, self.clock() - began)

    def fall_in_place(self, board: Board, start: FallingPiece) -> tuple[Placement, Board, int]:
        """Where ``start`` lands if nothing moves it: its placement, the board after, the rows cleared."""
        landed = after_key(board, start, DROP)
        placement = Placement(start.kind, start.orientation - 1, start.x, landed.y, self.rules.spawn_x)
        predicted, cleared = self.settle(board, placement)
        return placement, predicted, cleared

    def landing(self, board: Board, placement: Placement) -> Placement | None:
        """``placement``'s turns and column on ``board``: where the piece lands there (a resync can
        change the stack under a piece in play), or None if the rules no longer reach it."""
        for found in enumerate_placements(board, placement.piece, self.rules):
            if (found.rotations, found.x) == (placement.rotations, placement.x):
                return found
        return None

    def settle(self, board: Board, placement: Placement) -> tuple[Board, int]:
        """The board after ``placement`` lands and its rows clear, and how many rows cleared."""
        after = board.copy()
        heights = np.zeros(board.width, dtype=np.int64)
        lines, _ = kernel.settle(
            after.cells, kind_of(placement.piece), placement.rotations, placement.x - 1, placement.y - 1, self.rules.clearable_rows, heights
        )
        return after, int(lines)
