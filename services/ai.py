"""The ai service: keeps the game model, plans each piece the moment it is seen, and steers it home.

    python -m gamerig.services.ai --endpoints JSON --config PATH

Seeing a piece.  A new piece comes from an ``obs.event`` spawn or from the first ``obs.frame``
showing a falling piece that is not the one in play (a frame that came first, or an ai started
mid-piece); whichever comes first plans it.  Only frames with status ok count as evidence of where
a piece is, here and in the closed loop.  A frame shows the piece in play if it has its letter and
is no higher than it was seen before (unless the piece in play was dropped a fall step earlier: see
``_next_piece``).  With the preview configured, a spawn event waits up to SPAWN_PREVIEW_WAIT_S for
its own frame, which carries the new next piece and where the piece is (the camera sends a frame's
events just before the frame).

Planning (services/ai_planner.py) starts from where the piece was observed, at that frame's capture
time minus the view latency (moved by the keys since the last drop that acted after that time:
after a halt the halted plan's keys did; once the relay presses no more of them, only a frame sure to
show them all plans the piece), and simulates the keys against gravity at the level (the screen's
level when shown and ``play.level_from_screen``, else the one the fall step shows, else the initial
level raised by the lines: services/ai_model.py).
``plan.keys`` carries ``deadline_t`` (the latest time a key may go down: after it the piece would
land by gravity first) and lifespan ``deadline_t - now``; ``predict.board`` the board after the
placement and its clears, which the model believes at once.

Closed loop (``play.closed_loop``; used for a piece only when the delayed drop still fits its
deadline).  The first part, plan id ``<root>``, has the moves but no drop.  After its ``relay.done``
the ai waits for a frame taken after the last ``relay.key`` reached the game, showing the piece
lower than where the part was planned from by at least the whole fall steps since (the camera's
tracker can report a piece it lost where it last saw it, even in ok frames).  A frame before that
whose pose only a lost key of the part explains (services/ai_lost_key.py; LOST_KEY_FRAMES agreeing)
has the correction sent from where the keys leave the piece as soon as the relay is done
(``lost_keys`` in the stats).  On target (orientation and column): part ``<root>.1`` = [drop] (or no
part: a piece planned ahead, late in its fall, is left to gravity: services/ai_ahead.py; so is one
confirmed too late for its drop, which gravity lands there all the same: ``_lands_on_target``), unless the
piece was planned without the piece after it (every plan made ahead is) and the preview, showing
that piece since, has the player put it elsewhere: then, while its keys from the confirmed pose
still finish in time, closed loop again with room for another round, it is steered on there first (a
second thought; ``second_thoughts`` in the stats).  A second thought known while the first part's
keys are still under way is taken at once instead, with room for one confirmation: the keys still to
come are stopped (an empty part) and the piece is steered on from where the keys the relay reported
put it (``_think_early``); frames from before those keys acted do not count against the new part,
and a lost key is looked for among those keys as well as the part's.  Off target, once frames have
agreed on it for CORRECTION_EVIDENCE_S, or a fall step if shorter (a lagging frame looks just like a
lost key): a correction from the observed position to the same target, itself closed loop while
another confirmation fits (at most MAX_CORRECTIONS), then the drop; parts are numbered
``<root>.<n>``.  When the target is out of reach from there (or a lost drop cannot be pressed again
in time), the piece is planned again from where it is, to the best placement still in reach, at
worst its drop where it is, with a new prediction: at level 10 a piece left to fall unpredicted cost
a mismatch, and runs of them halted play.  If no frame confirms the piece by the time its plan
assumed for the drop (the camera lost the piece, or sends only unsure frames), the drop goes
unconfirmed, as the open loop would have pressed it; but not before a frame that can confirm it has
had time to come, while the drop's deadline allows (services/ai_blind_drop.py: a piece still in its
spawn row can only be confirmed after its first fall).  A frame that shows the piece still falling
after its drop (services/ai_lost_drop.py: the drop key never reached the game) is not taken for the
next piece: an empty part first stops the keys after the drop (the next piece's plan made ahead
would move this piece, then the next one, astray), and once the relay has answered it, every key it
pressed is known and the drop is pressed again from where they put the piece, or where the frame
shows one of them was lost as well (at most MAX_DROP_RETRIES times); if not even the drop is in
time, the piece is predicted where it falls.  ``predict.board`` always carries the root id.  A part
that cannot finish in time is not sent and the piece falls where it is: a deadline miss, counted in
``ai.state``.

Planning ahead (``play.plan_ahead``, with the preview): services/ai_ahead.py.  Second thoughts: services/ai_second_thought.py.

``wd.resync`` replaces the model's board with the observed one (and re-applies the piece in play
if its landing is still to come; keys of its part still under way that the new stack blocks, or
outlasts, are stopped and the piece is steered on from where they put it).  Plans are made only
while playing (``ctl.play``; ``ctl.pause`` and ``ctl.stop`` stop it; the supervisor repeats the
mode every second, so a restarted ai learns it) and not halted (``wd.halt`` / ``wd.state`` halted,
until ``wd.resume``; a halt forgets the piece in play unless only its landing is to come:
``_halt_play``).  While the ai places no pieces itself, its model follows the observed boards.
``ai.state`` is published on every change and once a second.  After a game over, the next game is
started with a ``new_game`` key (``play.new_game_after_s``: services/ai_new_game.py).

Tested in tests/integration/test_ai_service.py: this process on a real proxy, fed by a test
publisher; its keys, played in games/tetris/engine.py, land where its prediction says (planned from
sight there; tests/integration/test_rig_end_to_end.py plays the whole rig, planning ahead).  Measured
ad hoc against `gamerigctl sim --level 5 --preview` through the real camera, relay and watchdog
services (90 s, load average 4.6 on the shared 2-core machine, 2026-12-02): 25 plans, and by the
simulator's ground truth all 25 pieces came to rest on their targets; 12 drops confirmed by a
frame, 13 sent unconfirmed (the camera had lost the piece), no correction, no deadline miss;
planning p50 3.4 ms, max 33 ms.  (The run before CORRECTION_EVIDENCE_S: one piece of 22 missed its
target after a correction made from a lagging frame.)
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from gamerig.daemon.bus import Message
from gamerig.daemon.rig_config import NEW_GAME_KEY
from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import DROP, FallingPiece, after_key
from gamerig.games.tetris.placements import Placement
from gamerig.games.tetris.rules import iteration_delay

from .ai_ahead import BUS_MARGIN_S, PlanAhead
from .ai_blind_drop import ConfirmWait, blind_drop_due
from .ai_lost_drop import DroppedPiece, keys_unseen_since_drop, last_key_since_drop, pose_after, still_falling
from .ai_lost_key import end_if_one_key_lost, pose_since_lost_drop
from .ai_model import GameModel, rows_of
from .ai_new_game import PRESS_DEADLINE_S, NextGame
from .ai_planner import KeyPlan, Planner
from .ai_second_thought import SecondThought
from .ai_settings import AiSettings
from .ai_state import Counters, PendingSpawn, PieceInPlay, falling_piece, piece_name
from .lifecycle import Service, service_main

log = logging.getLogger("gamerig.services.ai")

POLL_S = 0.002
STATE_PERIOD_S = 1.0
SPAWN_PREVIEW_WAIT_S = 0.03
MAX_CORRECTIONS = 2
#: A drop key the game never got (a dropped press) is pressed again at most this often per piece.
MAX_DROP_RETRIES = 2
#: Keys remembered from relay.key: more than a view latency's worth at the relay's cadence.
RECENT_KEYS = 16
#: How long frames must agree that the piece is off target before a correction is sent: the real
#: camera's "ok" frames were seen lagging the game by 0.25 s, which looks just like a lost key.
CORRECTION_EVIDENCE_S = 0.1
#: Frames that must agree that a key of the part in play was lost before it is corrected early.
LOST_KEY_FRAMES = 2
SUBSCRIPTIONS = ("obs.event", "obs.frame", "wd.", "ctl.", "relay.key", "relay.done")


class AiService(PlanAhead, SecondThought):
    """The loop's state and reactions; see the module docstring."""

    def __init__(self, service: Service, settings: AiSettings) -> None:
        self.service = service
        self.settings = settings
        self.planner = Planner(settings)
        self.model = GameModel(settings.rules, settings.initial_level, settings.level_from_screen)
        self.playing = False
        self.halted = False
        self.active: PieceInPlay | None = None
        #: The model takes every observed board while the ai is not placing pieces itself (not
        #: playing, halted, a piece it could not place): its predictions would be stale.
        self.following = True
        self.deferred: FallingPiece | None = None  # in its spawn row, to be planned one row lower
        self.skipped: FallingPiece | None = None  # no placement reachable in time: left to fall
        self.pending: PendingSpawn | None = None
        self.next_piece: tuple[str | None, int] = (None, -1)  # (piece, frame_seq)
        self.counters = Counters()
        self.recent_keys: deque[tuple[str, float]] = deque(maxlen=RECENT_KEYS)  # (key, down_t), from relay.key
        self.last_plan_id: str | None = None
        #: The relay answered the last part sent (done, stopped or refused): it presses no more keys.
        self.relay_idle = True
        #: A new piece waits for a frame that shows every key pressed on it (``_keys_may_not_show``).
        self.waiting_for_keys = False
        #: The piece in play was kept over a halt (``_halt_play``) and no resync has come since.
        self.kept_over_halt = False
        self.next_game = NextGame(settings.new_game_after_s)
        self._root_prefix = f"{os.getpid()}-"
        self._roots = 0
        self._state_sent: dict[str, Any] | None = None
        self._state_at = -float("inf")
        self._init_ahead()

    def run(self) -> None:
        """Until SIGTERM: take every message as it comes, then the time-driven work."""
        service = self.service
        inbox = service.subscriber(SUBSCRIPTIONS)
        self.planner.warm_up()
        service.publisher.wait_connected(1.0)
        service.set_state("ready", "waiting for ctl.play")
        while not service.stopping:
            message = inbox.receive(POLL_S)
            while message is not None:
                self.take(message)
                message = inbox.receive(0)
            self.tick(time.monotonic())
            service.heartbeat_if_due()

    # ---- inputs ----------------------------------------------------------------------------

    def take(self, message: Message) -> None:
        """React to one message; a malformed body is counted and logged, never raised."""
        try:
            handler = {
                "obs.event": self.on_event,
                "obs.frame": self.on_frame,
                "wd.resync": self.on_resync,
                "relay.done": self.on_relay_done,
                "relay.key": self.on_relay_key,
            }.get(message.topic)
            if handler is not None:
                handler(message.body)
            else:
                self.on_control(message.topic, message.body)
        except (KeyError, TypeError, ValueError) as exc:
            self.counters.bad_messages += 1
            log.warning("%s ignored: %s", message.topic, exc)

    def on_control(self, topic: str, body: dict[str, Any]) -> None:
        """ctl.play / ctl.pause / ctl.stop, and the watchdog's halt state."""
        if topic in ("ctl.play", "ctl.pause", "ctl.stop"):
            playing = topic == "ctl.play"
            if playing != self.playing:
                self.playing = playing
                self._drop_piece()
                self.timing.restart_gravity()
                self.service.set_state("active" if playing else "ready", "" if playing else topic)
        elif topic == "wd.halt" or (topic == "wd.state" and body.get("halted") is True):
            if not self.halted:
                self.halted = True
                self._halt_play()
        elif topic == "wd.resume" or (topic == "wd.state" and body.get("halted") is False):
            self.halted = False

    def _halt_play(self) -> None:
        """Play halted, the relay stops: forget the piece in play, unless nothing is left to steer
        of it, only its landing to come (its drop went down or may be going down, or it is left to
        gravity on target): then frames of it, which may lag the game by more than a halt, must not
        be taken for a new piece.  Forgotten, a piece whose drop went down as a 134 ms stall of the
        machine halted play was planned again from such frames after the resume, and its second
        drop went to the next piece.  A part the halt stopped before its drop forgets it after all
        (``on_relay_done``): the piece falls unsteered, to be planned again from sight."""
        active = self.active
        keep = active is not None and active.finished and (
            active.dropped_at is not None or active.left_to_gravity or (self.last_plan_id == active.part_id and not self.relay_idle)
        )
        if keep:
            self._forget_plans()
            self.active, self.following, self.kept_over_halt = active, False, True
        else:
            self._drop_piece()

    def on_resync(self, body: dict[str, Any]) -> None:
        """wd.resync: believe the observed board, plus the piece in play if it has not landed yet,
        its drop sent or not: the board comes from the landing before it (at level 10 its drop often
        went down before the mismatch was seen, and the boards predicted for it and the piece after
        it, both on the old stack, made a run of mismatches that halted play); its keys still under
        way are stopped if they no longer take it there in time (``_stop_stale_keys``).  The next
        piece's plan made ahead on the old stack is made again.  A piece kept over a halt whose stack
        the board no longer shows landed while play was halted (the camera, its filter reset by a
        long outage, may report no landing for it): it is forgotten."""
        board = self.model.adopt(body["board"])
        self._discard_ahead("resync")
        active, kept, self.kept_over_halt = self.active, self.kept_over_halt, False
        if active is None:
            return
        if kept and board != active.board_before:
            self._forget_plans()  # it landed: its lines stand
            return
        active.board_before = board.copy()
        landing = self.planner.landing(board, active.placement)
        if landing is not None and landing.y != active.placement.y:
            # The stack under it differs: the same turns and column land elsewhere, and the
            # closed loop steers (and checks the time left) towards where it lands now.
            active.placement = landing
            active.plan = replace(active.plan, target=replace(active.plan.target, y=landing.y))
        predicted, cleared = self.planner.settle(board, active.placement)
        self.model.lines += cleared - active.lines_cleared
        active.predicted, active.lines_cleared = predicted, cleared
        self.model.board = predicted
        self._publish_prediction(active.root, predicted)
        if self._keys_in_flight(active) and (landing is None or not self.planner.still_in_time(board, active.plan)):
            self._stop_stale_keys(active)
        if active.left_to_gravity:
            active.dropped_at = self._gravity_landing_t(active) or active.dropped_at
        if active.finished:
            self._prepare_ahead(active)

    def on_event(self, body: dict[str, Any]) -> None:
        """obs.event: a spawn plans the piece (unless a frame did), a landing ends it, game over resets."""
        kind = body["kind"]
        if kind == "game_over":
            self.model.new_game()
            self.timing.restart_gravity()
            self.following = True
            self._forget_plans()
            self.next_game.game_over(time.monotonic())
            return
        if kind == "landed":
            if self.active is not None and not self.active.finished:
                self._give_up(self.active, "landed before its drop was sent")
            if self.active is None:
                self.following = True  # a piece the ai did not place: only the screen knows the board now
            if self.following and isinstance(body.get("board"), list):
                self.model.adopt(body["board"])
            self.active = self.deferred = self.skipped = None
            return
        if kind != "spawn":
            return
        self.next_game.game_on()
        if self.following and isinstance(body.get("board"), list):
            self.model.adopt(body["board"])
        piece, seq = piece_name(body["piece"]), int(body["frame_seq"])
        active = self.active
        if active is not None and active.piece == piece and seq <= active.first_seq:
            return  # a frame showed it first
        if self.settings.preview and self.next_piece[1] < seq:
            self.pending = PendingSpawn(body, time.monotonic() + SPAWN_PREVIEW_WAIT_S)
        else:
            self._spawned(body)

    def on_frame(self, body: dict[str, Any]) -> None:
        """A camera frame: level, preview, a spawn's own frame, the board while following, and the
        falling piece: a new one is planned, the one in play may be confirmed (closed loop)."""
        seq = int(body["frame_seq"])
        self.model.see_level(body.get("level"))
        self._learn_timing(body)
        if "next_piece" in body:
            self.next_piece = (body["next_piece"], seq)
            active = self.active
            if (
                active is not None and active.next_piece is None and seq >= active.first_seq
                and active.previews_its_next(float(body["t_capture"]), self.settings.key_latency_s)
            ):
                self._learn_next_piece(active, body["next_piece"])
                if active.finished:
                    self._prepare_ahead(active)
        if self.pending is not None and seq >= int(self.pending.body["frame_seq"]):
            pending, self.pending = self.pending, None
            shown = body.get("falling") if body.get("status") == "ok" else None
            if shown is None or shown.get("piece") != pending.body["piece"]:
                self._spawned(pending.body)
            # else: planned below from where this frame shows the piece (the camera identifies a
            # new piece once it shows whole, which may be a row below the spawn)
        if self.following and body.get("status") == "ok" and isinstance(body.get("board"), list):
            self.model.adopt(body["board"])
        falling = body.get("falling")
        if falling is None or body.get("status") != "ok" or not self.can_play:
            return  # an unsure frame may carry the tracker's last piece, not what the screen shows now
        seen = falling_piece(falling)
        t_state = float(body["t_capture"]) - self.settings.view_latency_s
        active = self.active
        if active is not None and self._drop_was_lost(active, seen, t_state):
            self._drop_again(active, seen, t_state)
        elif active is not None and active.piece == seen.kind and seen.y <= active.lowest_y and not self._next_piece(active, seen, t_state):
            active.lowest_y = seen.y
            self._confirm(active, seen, t_state)
        elif self.skipped is not None and self.skipped.kind == seen.kind and seen.y <= self.skipped.y:
            self.skipped = seen
        elif self.deferred is not None and self.deferred.kind == seen.kind and seen.y <= self.deferred.y:
            if seen.y < self.deferred.y:
                self.deferred = None
                self._plan_piece(seen, seq, float(body["t_capture"]), t_state, defer=False)
        else:
            self._plan_piece(seen, seq, float(body["t_capture"]), t_state, defer=True)

    def on_relay_done(self, body: dict[str, Any]) -> None:
        """The relay finished (or refused) the part in play: the closed loop may confirm now."""
        if body["plan_id"] == self.last_plan_id:
            self.relay_idle = True
        active = self._piece_of(body["plan_id"])
        if active is None:
            return
        if not body["ok"] and self.halted and active is self.active and active.dropped_at is None:
            self._drop_piece()  # kept over the halt (``_halt_play``), its drop stopped before it went down
            return
        if not body["ok"] and active is self.ahead:
            self._discard_ahead(f"relay: {body.get('reason')}")
            return
        if body["ok"] and active.stopping is not None:
            self._way_back(active)
        elif body["ok"] and active.rethinking is not None:
            self._steer_early(active)
        elif body["ok"]:
            active.relay_done = True
            self._correct_lost_key(active)
        elif not active.finished:
            self._give_up(active, f"relay: {body.get('reason')}")

    def on_relay_key(self, body: dict[str, Any]) -> None:
        """A key went down: the timing learns from it; for the part in play the confirming frame
        must be later than its effect, and its drop lets the next piece's plan go."""
        if body["key"] == NEW_GAME_KEY:
            return  # it steers no piece
        down_t = float(body["down_t"])
        self.effects.pressed(body["key"], down_t)
        self.recent_keys.append((body["key"], down_t))
        if down_t >= self.last_key_down_t:
            self.last_key_down_t, self.last_key = down_t, body["key"]
        active = self._piece_of(body["plan_id"])
        in_play = self.active
        if active is None and in_play is not None and in_play.rethinking is not None and body["plan_id"] == in_play.rethinking[0]:
            in_play.pressed += 1  # a key of the part being stopped went down before the stop
        if active is not None:
            active.pressed += 1
            active.last_down_t = float(body["down_t"])
            if body["key"] == "drop":
                active.dropped_at = active.last_down_t
                active.next_at_drop = self.next_piece[0]
        if active is not None and body["key"] == "drop":
            self._send_ahead(active)

    def tick(self, now: float) -> None:
        """Time-driven work: a spawn that waited long enough for its preview, an unconfirmed drop
        that is due, a part past its deadline, the next game's start; ai.state."""
        if self.pending is not None and now >= self.pending.until:
            pending, self.pending = self.pending, None
            self._spawned(pending.body)
        active = self.active
        if active is not None and not active.finished and active.relay_done and active.last_down_t is not None:
            if now >= self._blind_drop_due(active, active.last_down_t):
                self._drop_blind(active)
        if active is not None and active.stopping is not None and now > active.deadline_t:
            self._way_back(active)  # the relay did not answer the stop in time: plan from the keys it reported
        if active is not None and active.rethinking is not None and now > active.deadline_t:
            self._steer_early(active)
        if active is not None and not active.finished and now > active.deadline_t:
            self._give_up(active, "its deadline passed before the relay finished it")
        if self.playing and not self.halted and self.next_game.due(now):
            self._press_new_game(now)
        self._publish_state(now)

    # ---- planning ----------------------------------------------------------------------------

    @property
    def can_play(self) -> bool:
        return self.playing and not self.halted and self.model.synced

    def _spawned(self, body: dict[str, Any]) -> None:
        if not self.can_play:
            return
        rules = self.settings.rules
        start = FallingPiece(piece_name(body["piece"]), 1, rules.spawn_x, rules.spawn_y)
        t_capture = float(body["t_capture"])
        self._plan_piece(start, int(body["frame_seq"]), t_capture, t_capture - self.settings.view_latency_s, defer=True)

    def _plan_piece(self, start: FallingPiece, seq: int, t_seen: float, t_state: float, defer: bool) -> None:
        board = self.model.board
        assert board is not None
        self.deferred = self.skipped = self.active = None
        next_piece = self.next_piece[0] if self.next_piece[1] >= seq else None
        if self._promote_ahead(start, seq, t_seen, next_piece):
            return
        if self._keys_may_not_show(t_seen):
            return  # the frames to come plan it
        if self.waiting_for_keys:
            self.waiting_for_keys = False
            self.counters.key_waits += 1
        start = self._moved_since_seen(board, start, t_state)
        level = self.model.level
        decision = self.planner.decide(board, start, next_piece, level, t_state)
        if decision is None and defer and start.y == self.settings.rules.spawn_y:
            self.deferred = start
            self.counters.deferred += 1
            return
        if decision is None:
            self.skipped = start
            self.following = True
            pose = (start.orientation, start.x, start.y)
            if after_key(board, start, DROP) == start:
                # First seen resting on the stack: no plan could have placed it, so no deadline was
                # missed (after a halt for a camera hiccup: its drop had gone down before it).
                log.info("piece %s at %s: first seen resting on the stack, left to lock", start.kind, pose)
                return
            self.counters.deadline_misses += 1
            # what the planner had to go on: a late frame, or a stack the screen does not show
            age_ms = (time.monotonic() - t_state) * 1000.0
            log.warning(
                "piece %s at %s: no placement can be reached in time (seen %.0f ms ago; stack heights %s)", start.kind, pose, age_ms,
                board.column_heights(),
            )
            return
        self.counters.plan_ms.append(decision.elapsed_s * 1000.0)
        self._roots += 1
        active = PieceInPlay(
            root=f"{self._root_prefix}{self._roots}", piece=start.kind, first_seq=seq, t_seen=t_seen, level=level,
            board_before=board, placement=decision.placement, plan=decision.plan, start=(start.y, t_state), lowest_y=start.y,
            next_piece=next_piece, predicted=decision.predicted, lines_cleared=decision.lines_cleared,
        )
        self.active = active
        self.following = False
        self.model.commit(decision.predicted, decision.lines_cleared)
        self._publish_prediction(active.root, decision.predicted)
        self._send(active, t_state)
        self.counters.plans += 1

    def _keys_may_not_show(self, t_capture: float) -> bool:
        """Whether a frame captured at ``t_capture`` may show the new piece before or after the last
        key pressed on it (by a plan made ahead, then halted or discarded) while the relay presses
        no more: then a later frame, one sure to show them all, plans it.  The view latency is a
        range, not a figure: after a 50 ms camera hiccup, a frame taken 90 ms after a key went down
        showed its move, the ai counted the key as still to come and moved the piece on by it once
        more, and dropped it a column off its prediction.  Waiting is for an idle relay only: keys
        still coming would move the piece astray meanwhile."""
        last_down_t = last_key_since_drop(self.recent_keys)
        if not self.relay_idle or last_down_t is None:
            return False
        settings, learned = self.settings, self.timing.view_latency_s
        latency = max(settings.key_latency_s + settings.view_latency_s, learned if learned is not None else 0.0)
        waiting = t_capture < last_down_t + latency + self.timing.frame_s
        self.waiting_for_keys = self.waiting_for_keys or waiting
        return waiting

    def _moved_since_seen(self, board: Board, seen: FallingPiece, t_state: float) -> FallingPiece:
        """Where the keys pressed since the last drop that the frame showing ``seen`` at ``t_state``
        cannot show yet put the new piece: after a halt, or a plan made ahead discarded, keys pressed
        on it before the plan from sight still act (after a 50 ms halt for a camera hiccup at level
        10, a T planned from a frame one turn behind was turned once too often and landed off its
        prediction)."""
        return pose_after(board, seen, keys_unseen_since_drop(self.recent_keys, t_state, self.settings.key_latency_s))

    def _confirm(self, active: PieceInPlay, seen: FallingPiece, t_state: float) -> None:
        """Closed loop: once the frame shows the piece after the last key, drop it or correct it;
        before that, a frame may show that one of the part's keys was lost."""
        if active.finished or active.stopping is not None or active.rethinking is not None or t_state < active.fresh_after:
            return
        start_y, start_t = active.start
        # Fresh evidence only: the piece must show lower than where this part was planned from, by
        # at least the whole fall steps since (the next fall came within a step).  The camera's
        # tracker can go on reporting a piece it lost where it last saw it, even in "ok" frames.
        if start_y - seen.y < max(1, int((t_state - start_t) / iteration_delay(active.level))):
            return
        if not active.relay_done or (active.last_down_t is not None and t_state < active.last_down_t + self.settings.key_latency_s):
            self._watch_keys(active, seen, t_state)  # this frame may be from before the last key acted
            return
        pose = (seen.orientation, seen.x)
        on_target = pose == (active.plan.target.orientation, active.plan.target.x)
        if not on_target:
            if active.suspect is None or active.suspect[0] != pose:
                active.suspect = (pose, t_state)
            if t_state - active.suspect[1] < self._evidence_s(active.level):
                return
        self._correct(active, seen, t_state, on_target)

    def _watch_keys(self, active: PieceInPlay, seen: FallingPiece, t_state: float) -> None:
        """A frame while the part's keys may still be acting: if its pose shows one of them was lost
        (services/ai_lost_key.py) in LOST_KEY_FRAMES frames, correct from where the keys leave the
        piece as soon as the relay is done, without waiting for the closed loop's frames."""
        start, counted = active.counted_from or (active.plan.start, ())
        end = end_if_one_key_lost(active.board_before, start, (*counted, *active.plan.keys), seen)
        if end is None:
            return
        before = active.lost_key
        agreed = before[2] + 1 if before is not None and (before[0].orientation, before[0].x) == (end.orientation, end.x) else 1
        active.lost_key = (end, t_state, agreed)
        self._correct_lost_key(active)

    def _correct_lost_key(self, active: PieceInPlay) -> None:
        """Once the relay is done with a part that frames showed lost a key: correct from its end."""
        if active.finished or not active.relay_done or active.lost_key is None or active.lost_key[2] < LOST_KEY_FRAMES:
            return
        end, t_state, _ = active.lost_key
        target = active.plan.target
        if (end.orientation, end.x) == (target.orientation, target.x):
            # The move towards the wall made the loss good, if it was the only one: the frames to
            # come confirm it like any part's end.  Taken as on target, the piece was dropped at
            # once, and one that had lost two keys landed a column short (a faults run's T, the
            # mismatch that began the end of its game).  No correction: not counted (frames that
            # lag the last key may find the same loss again).
            log.debug("plan %s: a key was lost, made good by the move to the wall: confirming", active.part_id)
            active.lost_key = None
            return
        self.counters.lost_keys += 1
        log.info("plan %s: a key was lost, correcting from %s", active.part_id, (end.orientation, end.x, end.y))
        self._correct(active, end, t_state, on_target=False)

    def _evidence_s(self, level: int) -> float:
        """How long frames must agree that the piece is off target: CORRECTION_EVIDENCE_S, or one
        fall step if shorter (a frame that lags more than a step shows the piece too high to count)."""
        return min(CORRECTION_EVIDENCE_S, iteration_delay(level))

    def _stop_part(self, active: PieceInPlay) -> None:
        """Send an empty part: at the relay it supersedes the keys still to come, and it is done
        once the key the relay holds is up, its ``relay.key`` sent (the deadline: a press cycle)."""
        active.part += 1
        active.relay_done, active.last_down_t, active.suspect, active.lost_key = False, None, None, None
        self._publish_part(active, (), time.monotonic() + self._press_cycle_s(), final=False)

    def _keys_in_flight(self, active: PieceInPlay) -> bool:
        """Whether the relay may still be pressing keys of ``active``'s part sent last (no stop of
        it under way, no drop of it down yet)."""
        return (
            self.last_plan_id == active.part_id and bool(active.plan.keys) and not active.relay_done and active.dropped_at is None
            and active.stopping is None and active.rethinking is None
        )

    def _stop_stale_keys(self, active: PieceInPlay) -> None:
        """A resync's stack blocks the keys of the part in play, planned on the board predicted
        before (or lands the piece before they are done): stop them, then steer the piece from
        where the keys pressed by then put it, or confirm it there (``_steer_early``).  Left to
        run, such keys land the piece short of its prediction, and a drop still to come goes to
        the next piece: in a level-10 run, a J planned on a stack without the piece before it
        (which had landed off its prediction) was blocked on its way, and the next piece was
        dropped in its spawn column; three mismatches in a row halted play, and the game was lost."""
        log.info("plan %s: the resync's board leaves its keys astray: stopped, steered on from where they put it", active.part_id)
        self.counters.stale_stops += 1
        active.second_thought = None  # chosen on the board before
        active.rethinking = (active.part_id, active.deadline_t)
        self._stop_part(active)

    def _correct(self, active: PieceInPlay, seen: FallingPiece, t_state: float, on_target: bool) -> None:
        """The piece is at ``seen`` once the part's keys acted: its drop if on target (or on to its
        second thought), else the keys back to the target (closed loop again while corrections are
        left), else a new target."""
        if on_target and active.second_thought is not None and self._think_again(active, seen, t_state):
            return
        again = not on_target and active.corrections < MAX_CORRECTIONS
        plan = self.planner.keys_to(active.board_before, seen, active.plan.target, active.level, t_state, confirm_again=again)
        if plan is None:
            if on_target and self._lands_on_target(active, seen):
                return
            if not self._retarget(active, seen, t_state):
                # Not even its drop is in time: it lands where gravity takes it from ``seen``, and
                # predicted so, the watchdog finds no mismatch and the next piece is planned on
                # the board it leaves (unpredicted, 3 of a level-10 faults run's 8 mismatches).
                self._predict_again(active, *self.planner.fall_in_place(active.board_before, seen))
                self._give_up(active, f"no time left to correct from {(seen.orientation, seen.x, seen.y)}, predicted where it falls")
            return
        if on_target:
            self.counters.confirmations += 1
            if plan.keys == (DROP,) and self._leave_to_gravity(active, seen, t_state):
                return
        else:
            active.corrections += 1
            self.counters.corrections += 1
            active.start = (seen.y, t_state)
        self._send_next(active, plan, t_state)

    def _lands_on_target(self, active: PieceInPlay, seen: FallingPiece) -> bool:
        """Confirmed on target too late for its drop: gravity lands it where the drop would have, so
        no deadline was missed (both deadline misses of a level-10 run without faults were such
        pieces: I pieces steered upright to the wall); the next piece's plan made ahead goes as
        after a drop.  False if it would land elsewhere."""
        placement, _, _ = self.planner.fall_in_place(active.board_before, seen)
        if placement != active.placement:
            return False
        log.info("plan %s: on target at %s too late for its drop, left to land by gravity", active.part_id, (seen.orientation, seen.x, seen.y))
        landing_t = self._gravity_landing_t(active)
        self._land_by_gravity(active, landing_t if landing_t is not None else time.monotonic())
        return True

    def _retarget(self, active: PieceInPlay, seen: FallingPiece, t_state: float) -> bool:
        """Off target (a lost key) with no time left to reach the target: plan the piece again from
        where it is, to the best placement still in reach (at worst its drop where it is), rather
        than let it fall unpredicted (the watchdog's mismatch, a resync, and at level 10 a run of
        them halted play).  False if not even the drop is in time."""
        board, level = active.board_before, active.level
        decision = self.planner.decide(board, seen, active.next_piece, level, t_state) or self.planner.drop_in_place(board, seen, level, t_state)
        if decision is None:
            return False
        self.counters.retargets += 1
        log.info("plan %s: out of reach from %s, retargeted to %s", active.part_id, (seen.orientation, seen.x, seen.y), decision.placement)
        self._steer_anew(active, decision.placement, decision.plan, seen, t_state)
        return True

    def _steer_anew(self, active: PieceInPlay, placement: Placement, plan: KeyPlan, seen: FallingPiece, t_state: float) -> None:
        """Send the piece in play, seen at ``seen``, to ``placement`` by ``plan``, predicting the board after it."""
        predicted, cleared = self.planner.settle(active.board_before, placement)
        self._predict_again(active, placement, predicted, cleared)
        active.start = (seen.y, t_state)
        self._send_next(active, plan, t_state)

    def _predict_again(self, active: PieceInPlay, placement: Placement, predicted: Board, cleared: int) -> None:
        """The piece in play lands at ``placement`` instead: the model, and the prediction the watchdog checks."""
        self.model.lines += cleared - active.lines_cleared
        self.model.board = predicted
        active.placement, active.predicted, active.lines_cleared = placement, predicted, cleared
        self._publish_prediction(active.root, predicted)

    def _send_next(self, active: PieceInPlay, plan: KeyPlan, t_state: float) -> None:
        """Make ``plan`` the piece's next part and send it."""
        active.plan, active.part, active.pressed, active.fresh_after = plan, active.part + 1, 0, -float("inf")
        active.counted_from = None
        active.relay_done, active.last_down_t, active.suspect, active.lost_key = False, None, None, None
        self._send(active, t_state)

    def _send(self, active: PieceInPlay, t_state: float) -> None:
        """Publish the part ``active.plan``, its deadline counted from ``t_state``."""
        self._publish_part(active, active.plan.keys, t_state + active.plan.deadline_s, active.plan.final)

    def _blind_drop_due(self, active: PieceInPlay, last_down_t: float) -> float:
        """When the drop goes unconfirmed (services/ai_blind_drop.py)."""
        start_y, start_t = active.start
        suspect_t = active.suspect[1] if active.suspect is not None else None
        first_seen_t = active.t_seen - self.settings.view_latency_s
        wait = ConfirmWait(last_down_t, start_y, start_t, active.lowest_y, suspect_t, active.deadline_t, first_seen_t)
        settings = self.settings
        return blind_drop_due(
            wait, iteration_delay(active.level), settings.key_interval_s, settings.confirm_delay_s, self._evidence_s(active.level), self._press_cycle_s()
        )

    def _drop_blind(self, active: PieceInPlay) -> None:
        """No frame confirmed the piece when the drop was due: drop it unconfirmed, as the open loop would."""
        self.counters.blind_drops += 1
        active.part += 1
        active.relay_done, active.last_down_t = False, None
        self._publish_part(active, ("drop",), active.deadline_t, final=True)

    def _publish_part(
        self, active: PieceInPlay, keys: Sequence[str], deadline_t: float, final: bool, start_t: float | None = None,
        key_t: Sequence[float | None] | None = None,
    ) -> bool:
        """Send a part; its drop is timed to the gravity when a plan ahead will follow it.
        False (a deadline miss) if its deadline passed already."""
        now = time.monotonic()
        if deadline_t <= now:
            self._give_up(active, "its deadline passed before it could be sent")
            return False
        if key_t is None and keys and keys[-1] == "drop":
            after_last = self._press_cycle_s() if keys[0] == self.last_key else self._other_key_after_s()
            first_key_t = max(now + BUS_MARGIN_S, self.last_key_down_t + after_last, start_t or -float("inf"))
            key_t = self._drop_time(active.level, first_key_t, len(keys), deadline_t)
        target = active.plan.target
        predicted = active.predicted if active.predicted is not None else self.model.board
        body = {
            "plan_id": active.part_id,
            "piece": active.piece,
            "orientation": target.orientation,
            "x": target.x,
            "keys": list(keys),
            "t_seen": active.t_seen,
            "deadline_t": deadline_t,
            "level": active.level,
            "predicted_board": rows_of(predicted) if predicted is not None else None,
        }
        if start_t is not None:
            body["start_t"] = start_t
        if key_t is not None:
            body["key_t"] = list(key_t)
        self.service.publisher.publish("plan.keys", body, lifespan_s=deadline_t - now)
        self.last_plan_id, self.relay_idle = active.part_id, False
        active.deadline_t = deadline_t
        active.finished = final
        if final and keys:  # no keys: no drop on its way to plan the next piece from
            self._prepare_ahead(active)
        return True

    def _next_piece(self, active: PieceInPlay, seen: FallingPiece, t_state: float) -> bool:
        """Whether ``seen``, of the same letter as the piece in play, is the next piece: the camera
        may miss a landing and a spawn.  Only if the piece in play was dropped (it landed at once)
        and a new piece had time to spawn (one fall step later), and ``seen`` is lower than the
        piece in play was ever seen (a stale frame repeats a lost piece where it was last seen)."""
        if active.dropped_at is None or seen.y >= active.lowest_y or self._falling_to_gravity(active, seen):
            return False
        return t_state > active.dropped_at + self.settings.key_latency_s + iteration_delay(active.level)

    @staticmethod
    def _falling_to_gravity(active: PieceInPlay, seen: FallingPiece) -> bool:
        """``seen`` shows ``active``, left to land by gravity, at or above where it lands: a frame
        that lags the game shows it falling after its landing tick, each lower than the one before,
        neither the next piece nor a lost drop (only a fall past its landing row is)."""
        return active.left_to_gravity and seen.y >= active.plan.target.y

    def _drop_was_lost(self, active: PieceInPlay, seen: FallingPiece, t_state: float) -> bool:
        """The frame shows the piece in play still falling after its drop (services/ai_lost_drop.py).
        While a plan made ahead for a piece of the same letter is under way, that piece is moved
        from its spawn at once: only a height the new piece cannot have fallen to yet tells them apart."""
        if not active.finished or active.dropped_at is None or active.drop_retries >= MAX_DROP_RETRIES:
            return False
        if self._falling_to_gravity(active, seen):
            return False
        dropped = DroppedPiece(active.piece, active.lowest_y, active.dropped_at + self.settings.key_latency_s)
        moved_at_once = self.ahead is not None and self.ahead.piece == seen.kind
        return still_falling(
            dropped, seen, t_state, active.next_at_drop, self.settings.rules, iteration_delay(active.level), next_moved_at_once=moved_at_once
        )

    def _drop_again(self, active: PieceInPlay, seen: FallingPiece, t_state: float) -> None:
        """The drop was lost: first stop the keys that may still come after it, then press it again
        (``_way_back``).  The next piece's plan made ahead went to the relay with the drop, and its
        keys have been moving this piece; the relay reports a key only once it is up, so a way back
        planned at once missed the key being held (a level-10 run: the way back came 3 ms after the
        third of the plan's R presses, counted two, and the closed loop had to save the piece).  An
        empty part supersedes the plan at the relay, which answers once its last key is up."""
        active.lowest_y = seen.y
        active.drop_retries += 1
        assert active.dropped_at is not None
        active.stopping = (seen, t_state, active.dropped_at)
        active.dropped_at = None  # until the relay presses the drop again
        active.left_to_gravity = False
        self._discard_ahead("the drop before it was lost")
        self._stop_part(active)

    def _way_back(self, active: PieceInPlay) -> None:
        """The relay stopped the keys after the lost drop: press the drop again from where the keys
        it pressed put the piece (with the moves back to the target, confirmed by a fresh frame if
        they moved it), if it can go down before gravity lands the piece; else retarget, or let it
        land where it falls."""
        assert active.stopping is not None
        (seen, t_state, dropped_at), active.stopping = active.stopping, None
        since = [key for key, down_t in self.recent_keys if down_t > dropped_at]
        seen = self._pose_now(active, seen, t_state, since)
        plan = self.planner.keys_to(active.board_before, seen, active.plan.target, active.level, t_state, confirm_again=bool(since))
        if plan is None:
            if not self._retarget(active, seen, t_state):
                self._let_it_fall(active, seen)
            return
        self.counters.drop_retries += 1
        log.info("plan %s: its drop was lost, pressing it again from %s", active.part_id, (seen.orientation, seen.x, seen.y))
        self._send_next(active, plan, t_state)
        if since:
            active.fresh_after = self.last_key_down_t + self.settings.key_latency_s  # as for an early second thought

    def _let_it_fall(self, active: PieceInPlay, seen: FallingPiece) -> None:
        """The lost drop cannot go down again before gravity lands the piece from ``seen`` (the
        keys after the drop are stopped already): predict the landing where it falls (a level-10
        run with 2 % lost presses lost its game after such landings, left unpredicted)."""
        log.warning("plan %s: its drop was lost and gravity lands it first, from %s", active.part_id, (seen.orientation, seen.x, seen.y))
        self._predict_again(active, *self.planner.fall_in_place(active.board_before, seen))
        active.finished = True

    def _pose_now(self, active: PieceInPlay, seen: FallingPiece, t_state: float, since: Sequence[str]) -> FallingPiece:
        """Where the piece whose drop was lost is now: ``seen`` is a frame old, and ``since``, the
        keys pressed after the drop, went on moving it (services/ai_lost_drop.py)."""
        board, target = active.board_before, active.plan.target
        at_drop = FallingPiece(active.piece, target.orientation, target.x, seen.y)
        now = pose_since_lost_drop(board, at_drop, since, seen)
        if now is not None:
            return now
        return pose_after(board, seen, [key for key, down_t in self.recent_keys if down_t + self.settings.key_latency_s > t_state])

    def _give_up(self, active: PieceInPlay, why: str) -> None:
        active.finished = True
        self.counters.deadline_misses += 1
        log.warning("plan %s: %s", active.part_id, why)

    def _drop_piece(self) -> None:
        """Forget the piece in play, which has not landed, and take its lines back from the count
        (``GameModel.withdraw``)."""
        if self.active is not None:
            self.model.withdraw(self.active.lines_cleared)
        self._forget_plans()

    def _forget_plans(self) -> None:
        """Forget the piece in play and every plan made around it; the count stands."""
        self.active = self.deferred = self.skipped = self.pending = None
        self.waiting_for_keys = self.kept_over_halt = False
        self._discard_ahead("play stopped")
        self.following = True

    # ---- outputs -----------------------------------------------------------------------------

    def _press_new_game(self, now: float) -> None:
        """The game is over and its last board has been shown long enough: start the next one."""
        self.next_game.pressed(now)
        plan_id = f"{self._root_prefix}new-game-{self.next_game.presses}"
        body = {"plan_id": plan_id, "keys": [NEW_GAME_KEY], "deadline_t": now + PRESS_DEADLINE_S, "level": self.model.level}
        self.service.publisher.publish("plan.keys", body, lifespan_s=PRESS_DEADLINE_S)
        self.last_plan_id, self.relay_idle = plan_id, False
        log.info("game over: %s pressed (%d so far)", NEW_GAME_KEY, self.next_game.presses)

    def _publish_prediction(self, root: str, predicted: Board) -> None:
        self.service.publisher.publish("predict.board", {"plan_id": root, "board": rows_of(predicted), "pieces": self.model.pieces})

    def _publish_state(self, now: float) -> None:
        body = {
            "synced": self.model.synced,
            "pieces": self.model.pieces,
            "lines": self.model.lines,
            "level": self.model.level,
            "last_plan_id": self.last_plan_id,
            "deadline_misses": self.counters.deadline_misses,
        }
        if body == self._state_sent and now - self._state_at < STATE_PERIOD_S:
            return
        self.service.publisher.publish("ai.state", body)
        self._state_sent, self._state_at = body, now
        c = self.counters
        recent = sorted(c.plan_ms)
        self.service.stats = {
            "plans": c.plans, "corrections": c.corrections, "retargets": c.retargets, "second_thoughts": c.second_thoughts,
            "confirmations": c.confirmations, "deferred": c.deferred,
            "lost_keys": c.lost_keys, "blind_drops": c.blind_drops, "drop_retries": c.drop_retries,
            "timed_drops": c.timed_drops, "gravity_landings": c.gravity_landings, "stale_stops": c.stale_stops,
            "key_waits": c.key_waits, "ahead_sent": c.ahead_sent, "ahead_used": c.ahead_used, "ahead_discarded": c.ahead_discarded,
            "deadline_misses": c.deadline_misses, "bad_messages": c.bad_messages, "new_games": self.next_game.presses,
            "playing": self.playing, "halted": self.halted,
            "plan_ms_p50": round(recent[len(recent) // 2], 2) if recent else None,
            "plan_ms_max": round(recent[-1], 2) if recent else None,
        }


def run(service: Service, config_path: Path) -> None:
    """The ai service (see the module docstring)."""
    AiService(service, AiSettings.from_file(config_path)).run()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``python -m gamerig.services.ai --endpoints JSON --config PATH``."""
    return service_main("ai", run, argv)


if __name__ == "__main__":
    sys.exit(main())
