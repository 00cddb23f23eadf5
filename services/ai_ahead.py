"""The ai service's planning ahead: the next piece planned before it spawns, its first key pressed
as it appears.

With ``play.plan_ahead`` and the preview, once services/ai_timing.py has learned the game's timing
from the rig's own keys and the fall steps it sees.  When the part with the drop of piece N is sent,
the next piece (the preview's) is chosen on the board predicted after N, from its spawn position,
with the one-piece player weighing the piece after it by expectation (it is not shown yet; once it
is, the closed loop may steer the piece on to the two-piece choice: services/ai.py's second
thought).  Every drop is timed to the game's gravity (on its own or at the end of a part's keys, if
the deadline allows): it goes down just after a gravity tick (its ``key_t``), so the next piece
spawns a whole fall step later and its first key, which the relay's hold and gap keep at least a
press cycle after the drop, follows the spawn closely.  When ``relay.key`` reports the drop, the
spawn is predicted on the rig's clock (the first gravity tick the drop acts before) and the next
piece's first part is sent at once with ``start_t`` just after that spawn (no key of it can act
before the piece is there).

A piece planned ahead and confirmed on target when gravity would land it within a fall step and
LATE_DROP_S is left to it: no drop is pressed, and the next piece's first part goes at once, to
start just after the spawn a tick after that landing (reckoned from the piece's predicted spawn:
it falls a row a tick, so a piece that came late, as its first frame shows, is dropped instead).
A drop lost that late could not be pressed again: the next piece's keys, sent with it, moved the
piece astray before any frame could show the loss (services/ai_lost_drop.py: a frame of the
piece a row lower, a fall step after the drop).  A frame of it falling after its landing tick, no
lower than where it lands, is a lagging picture, not a lost drop.

The piece spawns on a gravity tick, so its first fall comes a fall step after the predicted spawn
(``first_fall``): its keys are checked for that phase only, and a turn the spawn row does not allow
waits for that fall (``key_t``) while the column moves go first.  Not planned ahead: the first
pieces, until the timing is learned, and pieces whose keys cannot finish in time.

The piece is adopted when the camera shows it, if it appeared when predicted or shows a pose its
keys lead to (the camera may name it late); only then is its prediction published (the watchdog
checks each landing against the newest prediction for that letter) and the model advanced.  A piece
that appeared at another time off its keys' way (a lost drop, a missed spawn), a halt, a pause or a
resync discards the plan made ahead: the piece is planned from sight, and everything the closed
loop checks still applies.  The lost-drop check
(services/ai_lost_drop.py) is skipped while a plan made ahead for a piece of the same letter is
under way (that piece leaves its spawn pose at once, so the check would take it for the dropped
one).

Measured with ``gamerigctl bench rig`` (the README's Results have the runs).  PlanAhead is a mixin of services/ai.py's AiService: it keeps the plan made ahead (``ahead``,
``ahead_choice``) and the learned timing, and uses the service's model, planner and publishing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import FallingPiece
from gamerig.games.tetris.rules import iteration_delay

from .ai_lost_drop import poses_along
from .ai_model import GameModel
from .ai_planner import PieceDecision, Planner
from .ai_settings import AiSettings
from .ai_state import Counters, PieceInPlay, falling_piece
from .ai_timing import GameTiming, KeyEffects

log = logging.getLogger("gamerig.services.ai")

#: Planning ahead.  A drop goes down this long after a gravity tick (and a drop this close to a
#: tick may act on either side of it): covers the error of the learned tick times.
TICK_MARGIN_S = 0.009
#: The next piece's first key goes down this long after its predicted spawn.
FIRST_KEY_MARGIN_S = 0.01
#: From one key going down to the next at the earliest: hold + gap, plus the release's read-back.
PRESS_OVERHEAD_S = 0.003
#: From publishing a plan to the relay being able to press it.
BUS_MARGIN_S = 0.003
#: From a drop's release to the relay holding the next piece's plan made ahead: the relay reports
#: the drop once it is up, then the ai sends the plan.  3-15 ms in level-10 runs; drops timed as if
#: the plan were there at the release (up to 27 ms after a tick, at 50 ms a step) left the next
#: piece's first key 20-28 ms after its spawn instead of 10: the tail of glass-to-first-key.
AHEAD_ROUND_TRIP_S = 0.015
#: A piece confirmed on target that gravity lands within a fall step and this long is left to it,
#: its drop not pressed: a drop lost this late in the fall cannot be pressed again before the next
#: piece's keys, sent with it, have moved this piece astray (a lost drop shows only in a frame of
#: the piece a row lower; level-10 runs with 2 % lost presses: drops lost 6 rows or fewer above the
#: landing were all lost placements, one of which ended a game).
LATE_DROP_S = 0.35
#: The camera's first picture of a piece planned ahead may come this much more than a fall step
#: after the predicted spawn (it names a piece once it shows whole, maybe a row down) before the
#: piece is taken to have appeared at another time than predicted.
SPAWN_LATE_S = 0.06


class PlanAhead:
    """Planning ahead, mixed into AiService (see the module docstring).  The service provides the
    settings, planner, model, counters and piece in play declared here, and ``_publish_part``,
    ``_publish_prediction``, ``_learn_next_piece``."""

    settings: AiSettings
    planner: Planner
    model: GameModel
    counters: Counters
    active: PieceInPlay | None
    following: bool
    _roots: int
    _root_prefix: str

    timing: GameTiming
    effects: KeyEffects
    last_seen: tuple[FallingPiece, int] | None  # the frame before's falling piece (if ok) and frame_seq
    last_key_down_t: float  # the relay's latest press ...
    last_key: str | None  # ... and its key
    #: The next piece, chosen ahead on the board after the piece in play: (root of the piece in
    #: play, its board, level, decision), sent once the relay reports that piece's drop.
    ahead_choice: tuple[str, Board, int, PieceDecision] | None
    ahead: PieceInPlay | None  # sent ahead, not yet seen

    def _init_ahead(self) -> None:
        self.timing = GameTiming()
        self.effects = KeyEffects()
        self.last_seen = None
        self.last_key_down_t = -float("inf")
        self.last_key = None
        self.ahead_choice = None
        self.ahead = None

    def _learn_timing(self, body: dict[str, Any]) -> None:
        """Feed the timing model: between two directly consecutive ok frames (by frame_seq) of one
        piece, a fall step, or a move or turn that one of the rig's keys made."""
        t_capture, seq = float(body["t_capture"]), int(body["frame_seq"])
        falling = body.get("falling") if body.get("status") == "ok" else None
        before, self.last_seen = self.last_seen, None
        try:
            seen = falling_piece(falling) if falling is not None else None
        except ValueError:
            return  # on_frame reports the bad piece; here it must not stop the frame's other work
        if seen is None:
            return
        self.last_seen = (seen, seq)
        if before is None or before[1] != seq - 1 or before[0].kind != seen.kind or seen.y not in (before[0].y, before[0].y - 1):
            return
        was = before[0]
        if seen.y == was.y - 1:
            # at the level this piece falls at: the model's is the one after the planned pieces' lines
            active = self.active
            planned = active.level if active is not None and active.piece == seen.kind else None
            self.model.see_fall(seen.kind, seen.y, t_capture, planned)
            self.timing.see_fall(t_capture, iteration_delay(planned if planned is not None else self.model.level))
        if (seen.orientation, seen.x) != (was.orientation, was.x):
            down_t = self.effects.seen((was.orientation, was.x), (seen.orientation, seen.x), t_capture)
            if down_t is not None:
                self.timing.see_key_effect(down_t, t_capture)

    def _piece_of(self, plan_id: object) -> PieceInPlay | None:
        """The piece in play or the one sent ahead whose part ``plan_id`` is."""
        for piece in (self.active, self.ahead):
            if piece is not None and piece.part_id == plan_id:
                return piece
        return None

    def _press_cycle_s(self) -> float:
        """From a key going down to the same key's next press at the earliest (hold + gap)."""
        return self.settings.key_interval_s + PRESS_OVERHEAD_S

    def _other_key_after_s(self) -> float:
        """From a key going down to another key's press, a plan's first, at the earliest: the relay
        keeps no gap between different keys across plans (services/relay_runner.py).  Used for the
        next piece's first key after a drop; should that key be a drop itself, the relay keeps the
        gap and the key comes up to a gap later than planned, which a drop from the spawn row has."""
        return self.settings.key_hold_s + PRESS_OVERHEAD_S

    def _drop_time(self, level: int, first_key_t: float, keys: int, deadline_t: float) -> list[float | None] | None:
        """``key_t`` for a part of ``keys`` keys ending with the drop of a piece falling at
        ``level``, its first key going down at ``first_key_t`` at the earliest: the drop waits
        until just after a gravity tick if the next piece will be planned ahead, its plan (sent
        once the relay reports the drop) would not be at the relay in time for its spawn
        otherwise, and the wait fits the deadline; None: no key waits."""
        ticks = self.timing.ticks(iteration_delay(level))
        if not self.settings.plan_ahead or ticks is None or not self.settings.preview:
            return None
        cycle = self._press_cycle_s()
        earliest = first_key_t + (keys - 1) * cycle
        plan_there = self._other_key_after_s() + AHEAD_ROUND_TRIP_S
        t = ticks.drop_time(earliest, deadline_t - BUS_MARGIN_S, plan_there, TICK_MARGIN_S, FIRST_KEY_MARGIN_S)
        if t <= earliest:
            return None
        self.counters.timed_drops += 1
        return [None] * (keys - 1) + [t]

    def _prepare_ahead(self, active: PieceInPlay) -> None:
        """The drop of ``active`` is on its way: choose its next piece's placement now (the costly
        part), on the board predicted after it; it is sent when the drop goes down."""
        if (
            not self.settings.plan_ahead or active is self.ahead or active.next_piece is None or not self.settings.preview or not self.can_play
            or self.ahead is not None or (self.ahead_choice is not None and self.ahead_choice[0] == active.root)
        ):
            return
        level = self.model.level  # the next piece's: after the lines of ``active``
        board = self.model.board
        drop_t = active.dropped_at if active.dropped_at is not None else time.monotonic() + BUS_MARGIN_S
        spawn = spawn_after_drop(self.timing, active.level, drop_t)
        if spawn is None or board is None:
            return
        first_key_t = max(spawn + FIRST_KEY_MARGIN_S, drop_t + self._other_key_after_s())
        rules = self.settings.rules
        start = FallingPiece(active.next_piece, 1, rules.spawn_x, rules.spawn_y)
        decision = self.planner.decide(
            board, start, None, level, spawn, first_key_t=first_key_t, detour=True, key_latency_s=0.0, first_fall_s=first_fall(level)
        )
        if decision is None:
            return
        self.ahead_choice = (active.root, board.copy(), level, decision)
        if active.dropped_at is not None:
            self._send_ahead(active)

    def _send_ahead(self, dropped: PieceInPlay) -> None:
        """``dropped``'s drop went down: send its next piece's first part, to start just after the
        spawn this drop leads to."""
        choice, self.ahead_choice = self.ahead_choice, None
        if choice is None or choice[0] != dropped.root or dropped.dropped_at is None or not self.can_play:
            return
        _, board, level, decision = choice
        spawn = spawn_after_drop(self.timing, dropped.level, dropped.dropped_at)
        if spawn is None:
            return
        start_t = spawn + FIRST_KEY_MARGIN_S
        rules = self.settings.rules
        start = FallingPiece(decision.placement.piece, 1, rules.spawn_x, rules.spawn_y)
        first_key_t = max(start_t, dropped.dropped_at + self._other_key_after_s())
        plan = self.planner.keys_to(
            board, start, decision.plan.target, level, spawn, confirm_again=True, first_key_t=first_key_t, detour=True, key_latency_s=0.0,
            first_fall_s=first_fall(level),
        )
        if plan is None:
            return
        self._roots += 1
        ahead = PieceInPlay(
            root=f"{self._root_prefix}{self._roots}", piece=start.kind, first_seq=-1, t_seen=spawn, level=level,
            board_before=board, placement=decision.placement, plan=plan, start=(start.y, spawn), lowest_y=start.y,
            predicted=decision.predicted, lines_cleared=decision.lines_cleared, spawn_t=spawn,
        )
        self.ahead = ahead
        log.debug("plan %s ahead: %s after the drop at %.4f, spawn %.4f, keys %s from %.4f", ahead.root, start.kind, dropped.dropped_at, spawn, plan.keys, start_t)
        key_t = [spawn + t for t in plan.down_s] if plan.down_s is not None else None
        if self._publish_part(ahead, plan.keys, spawn + plan.deadline_s, plan.final, start_t=start_t, key_t=key_t):
            self.counters.ahead_sent += 1
        else:
            self.ahead = None

    def _promote_ahead(self, seen: FallingPiece, seq: int, t_seen: float, next_piece: str | None) -> bool:
        """A new piece is seen: if it is the one sent ahead and appeared when predicted, it becomes
        the piece in play (its prediction is published now); also when seen later, if it shows at
        the target of its keys, all pressed, or anywhere on their way (:func:`on_its_path`).  The
        camera may not tell a piece for a while after the one before it locked: a piece that moves
        at every frame gives the camera's filter no two frames alike to commit, and at level 10 on
        a loaded machine it named pieces 0.11-0.14 s after their spawn, their keys well under way.
        Planned again from that frame's pose, stale by the keys pressed since, they landed off their
        predictions (3 mismatches and a deadline miss in 1,000 pieces).  False: plan it from sight."""
        ahead = self.ahead
        if ahead is None or ahead.piece != seen.kind:
            return False
        self.ahead = None
        latency = self.timing.view_latency_s
        appeared = t_seen - latency if latency is not None else None
        if appeared is not None:
            self.timing.see_spawn(ahead.start[1], appeared, iteration_delay(ahead.level))
        frame = self.timing.frame_s
        step = iteration_delay(ahead.level)  # a drop that acted just before a tick spawns the piece a step early
        on_time = appeared is not None and ahead.start[1] - step - 2 * frame <= appeared <= ahead.start[1] + step + SPAWN_LATE_S
        steered_home = ahead.relay_done and (seen.orientation, seen.x) == (ahead.plan.target.orientation, ahead.plan.target.x)
        if not on_time and not steered_home and not on_its_path(ahead.board_before, ahead.plan.start, ahead.plan.keys, seen):
            self.counters.ahead_discarded += 1
            log.info("plan %s: piece %s seen at %.3f, predicted to appear at %.3f: planned from sight", ahead.root, seen.kind, appeared or -1, ahead.start[1])
            return False
        assert ahead.predicted is not None
        ahead.first_seq, ahead.t_seen, ahead.lowest_y = seq, t_seen, seen.y
        ahead.start = confirm_from(ahead.start, seen.y, t_seen - self.settings.view_latency_s, step)
        if ahead.start[1] != ahead.spawn_t:
            ahead.spawn_t = None
        self.active = ahead
        self.following = False
        self.model.commit(ahead.predicted, ahead.lines_cleared)
        self._publish_prediction(ahead.root, ahead.predicted)
        self.counters.plans += 1
        self.counters.ahead_used += 1
        self._learn_next_piece(ahead, next_piece)  # once it is the piece in play: it may be steered on at once
        if ahead.finished:
            self._prepare_ahead(ahead)
        return True

    def _leave_to_gravity(self, active: PieceInPlay, seen: FallingPiece, t_state: float) -> bool:
        """``active``, planned ahead, is confirmed on target by a frame showing ``seen`` at
        ``t_state``, its drop due: if gravity lands it within a fall step and LATE_DROP_S (the
        tick reckoned from its spawn), press no drop and send the next piece's plan made ahead to
        start after the spawn that landing leads to.  False (press the drop) unless the frame
        agrees with the spawn's clock: a piece higher than it says came late and would land later."""
        landing_t = self._gravity_landing_t(active)
        step = iteration_delay(active.level)
        if active.spawn_t is None or landing_t is None or landing_t - time.monotonic() > step + LATE_DROP_S:
            return False
        rows_by_clock = self.settings.rules.spawn_y - int((t_state - active.spawn_t) // step)
        if seen.y > rows_by_clock + 1:  # a frame may lag the clock by a row, not more
            return False
        log.debug("plan %s: on target at %s, left to land by gravity at %.4f", active.part_id, (seen.orientation, seen.x, seen.y), landing_t)
        self._land_by_gravity(active, landing_t)
        return True

    def _land_by_gravity(self, active: PieceInPlay, landing_t: float) -> None:
        """``active``, on target, lands by gravity at ``landing_t`` (the relay's clock), its drop not
        pressed: the next piece's plan made ahead starts after the spawn that landing leads to."""
        active.finished, active.left_to_gravity = True, True
        active.dropped_at, active.next_at_drop = landing_t, active.next_piece
        self.counters.gravity_landings += 1
        self._prepare_ahead(active)
        self._send_ahead(active)  # if its choice was made before

    def _gravity_landing_t(self, active: PieceInPlay) -> float | None:
        """The gravity tick (the relay's clock) ``active`` lands on at its target, reckoned from its
        predicted spawn: a drop going down then would land it then (the next piece spawns a tick
        later); None unless it was planned ahead and the next piece will be."""
        ticks = self.timing.ticks(iteration_delay(active.level))
        if active.spawn_t is None or ticks is None or not (self.settings.plan_ahead and self.settings.preview):
            return None
        return ticks.landing(active.spawn_t, self.settings.rules.spawn_y - active.plan.target.y)

    def _discard_ahead(self, why: str) -> None:
        if self.ahead is not None:
            self.counters.ahead_discarded += 1
            log.info("plan %s made ahead discarded: %s", self.ahead.root, why)
        self.ahead = self.ahead_choice = None


def spawn_after_drop(timing: GameTiming, dropped_level: int, drop_t: float) -> float | None:
    """When the piece after one falling at ``dropped_level`` spawns if its drop goes down at
    ``drop_t``: the first tick after it at that level's fall step.  The game set that tick when
    the dropped piece last fell, so a drop whose lines raise the level still waits the old level's
    step (at 9 -> 10, 100 ms, not 50: a plan made ahead pressed its first key before the spawn,
    and the key was lost).  None until those ticks are learned."""
    ticks = timing.ticks(iteration_delay(dropped_level))
    return ticks.spawn_after(drop_t, TICK_MARGIN_S) if ticks is not None else None


def confirm_from(start: tuple[int, float], seen_y: int, t_state: float, fall_step_s: float) -> tuple[int, float]:
    """Where the closed loop reckons a piece planned ahead from: its predicted ``start`` (spawn
    row, spawn time), unless the frame that first shows it (row ``seen_y`` at ``t_state``) has it
    higher than the falls since allow: it came a tick or two late (the piece before lost its drop
    and landed by gravity) and its first keys went elsewhere.  Then that frame: reckoned from the
    predicted spawn, every frame of it looked like a stale repeat, and the closed loop dropped it
    unconfirmed where the astray keys had left it."""
    start_y, spawn_t = start
    if start_y - seen_y < int((t_state - spawn_t) / fall_step_s):
        return (seen_y, t_state)
    return start


def first_fall(level: int) -> tuple[float, float]:
    """When a piece planned ahead falls first, after its predicted spawn: a step later (it spawned
    on a gravity tick), give or take the error of the learned tick times."""
    step = iteration_delay(level)
    return (step - TICK_MARGIN_S, step + TICK_MARGIN_S)


def on_its_path(board: Board, start: FallingPiece, keys: Sequence[str], seen: FallingPiece) -> bool:
    """Whether ``seen`` shows the turn and column that some of ``keys`` (the first ones, none
    included) lead the piece to from ``start``: the piece planned ahead, its keys acting, only
    seen late.  The keys' timing is not checked (the frame may lag them by any number of them);
    keys that went astray before the piece spawned leave it off this path, or the closed loop
    corrects it."""
    return any((pose.orientation, pose.x) == (seen.orientation, seen.x) for pose in poses_along(board, start, keys, above_allowed=True))
