"""The watchdog's decisions: from the bus messages it hears to halt, resync and resume.

Pure: ``Watchdog.receive(topic, body, now)`` and ``Watchdog.tick(now)`` return the messages to
publish as (topic, body) pairs; the caller owns the sockets and the clock, and ticks after taking
every message that is waiting.  The rules:

* Play is halted (``wd.halt {reason}``) when a watched service is dead or in fault, when the
  camera's frames are stale (``watchdog_health``), when the camera reports its calibration
  ``moved`` or ``lost``, or after ``mismatch_halt_count`` consecutive reality-check mismatches.
* The reality check (``watchdog_reality``): a frame's landings (``obs.event`` ``landed``, with the
  stack after every event of that frame) are compared, once that frame's ``obs.frame`` or a later
  one arrived, with the ai's prediction for the last piece that landed.  A mismatch publishes
  ``wd.resync {reason, board}`` with the observed board; a match ends a run of mismatches.
  While halted nothing is compared (the relay presses nothing, so no plan is carried out).
* Play resumes (``wd.resume``) after ``resume_healthy_s`` without any problem; a halt for
  mismatches clears then too.  A halt for stale frames alone ends sooner: once the frames have
  been fresh for as many frame periods as made them stale and a frame has shown the board again
  (a loaded camera late by a few frames should cost the piece in play its plan, not a wait in
  which a level-10 piece falls ten rows out of reach).  Just before, ``wd.resync`` hands the ai
  the board last observed: the pieces fell where gravity took them while play was halted.
* The watchdog starts halted, waiting for every watched service and for frames; that first halt
  is no fault and is counted neither in ``halts`` nor in ``max_halt_s``.
* ``wd.state {halted, reason, counters, max_halt_s}`` on every change and every
  ``STATE_EVERY_S``; counters: mismatches, resyncs, halts, stale_frames (times the frames went
  stale), dead_services (times a service stopped beating), deadline_misses (the sum of what the
  relay and the ai report), and beyond the contract's keys: checks (comparisons made) and
  malformed (messages with bodies that do not fit their topic, plus what the caller adds from
  its subscriber).  A malformed body is counted and ignored, never raised.

Tested in tests/unit/test_reality_check.py (this class, with hand-made messages and times) and
tests/integration/test_watchdog_service.py (the process on real sockets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gamerig.daemon.rig_config import WatchdogConfig

from .watchdog_health import DeadlineTally, FrameClock, Heartbeats
from .watchdog_reality import Board, RealityCheck

Output = tuple[str, dict[str, Any]]
#: wd.state is published at least this often.
STATE_EVERY_S = 0.5
#: The services whose heartbeats play depends on.
WATCHED_SERVICES = ("camera", "ai", "relay")
COUNTERS = ("mismatches", "resyncs", "halts", "stale_frames", "dead_services", "deadline_misses", "checks", "malformed")


class BadBody(ValueError):
    """A message body that does not fit its topic."""


def _field(body: dict[str, Any], key: str, kinds: type | tuple[type, ...], optional: bool = False) -> Any:
    value = body.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise BadBody(f"{key} must not be a boolean")
    if not isinstance(value, kinds):
        raise BadBody(f"{key} is {value!r}")
    return value


def _board(body: dict[str, Any], key: str = "board", optional: bool = False) -> Board | None:
    rows = _field(body, key, list, optional)
    if rows is None:
        return None
    if not rows or not all(isinstance(r, str) and r and len(r) == len(rows[0]) and set(r) <= {".", "#"} for r in rows):
        raise BadBody(f"{key} must be rows of equal length of '.' and '#'")
    return tuple(rows)


@dataclass
class _Landing:
    """The landings of one camera frame, waiting for the board after it."""

    frame_seq: int
    piece: str | None
    board: Board


class Watchdog:
    """See the module docstring."""

    def __init__(self, settings: WatchdogConfig, now: float, services: tuple[str, ...] = WATCHED_SERVICES) -> None:
        self.settings = settings
        self.heartbeats = Heartbeats(services, settings.heartbeat_timeout_s)
        self.frames = FrameClock(settings.stale_frame_periods, now)
        self.deadlines = DeadlineTally()
        self.reality = RealityCheck()
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.halted = True
        self.reason = "starting: waiting for the services and the camera's frames"
        self.max_halt_s = 0.0
        self._halted_at: float | None = None  # start of the current fault halt (None: the start-up wait)
        self._healthy_since: float | None = None
        self._stale_only = False  # the fault halt had no cause but stale frames (see the module docstring)
        self._observed_at = -math.inf  # when a frame last showed the board (status ok)
        self._mismatch_run = 0
        self._mismatch_halt = False
        self._landing: _Landing | None = None
        self._observed: Board | None = None
        self._calibration = "ok"
        self._seen_frame = False
        self._was_stale = False
        self._was_dead: set[str] = set()
        self._state_at = -math.inf

    # ---- input ---------------------------------------------------------------------------------

    def start(self, now: float) -> list[Output]:
        """What to publish at start: the start-up halt and the state."""
        return [("wd.halt", {"reason": self.reason}), self._state(now)]

    def receive(self, topic: str, body: dict[str, Any], now: float) -> list[Output]:
        """Take one bus message that arrived at ``now``; a body that does not fit is counted and ignored.

        The health is not checked here: call ``tick`` once the messages that arrived are all
        taken, or a watchdog that was not scheduled for a while would judge the camera by the
        oldest frame in its queue."""
        out: list[Output] = []
        try:
            self._take(topic, body, now, out)
        except BadBody:
            self.counters["malformed"] += 1
        return out

    def continue_from(self, previous: dict[str, Any]) -> None:
        """Carry on the counts of the watchdog this one replaces (its last ``wd.state``, which the
        proxy keeps), so a restart does not reset what status shows.  ``deadline_misses`` is not
        carried: the tally re-adds the services' cumulative counts from their current states."""
        counters = previous.get("counters")
        if isinstance(counters, dict):
            for key in COUNTERS:
                value = counters.get(key)
                if key != "deadline_misses" and isinstance(value, int) and not isinstance(value, bool):
                    self.counters[key] += value
        max_halt_s = previous.get("max_halt_s")
        if isinstance(max_halt_s, (int, float)) and math.isfinite(max_halt_s):
            self.max_halt_s = max(self.max_halt_s, float(max_halt_s))

    def count_malformed(self, count: int) -> None:
        """Add messages the caller's subscriber dropped as malformed."""
        self.counters["malformed"] += count

    def _take(self, topic: str, body: dict[str, Any], now: float, out: list[Output]) -> None:
        if not isinstance(body, dict):
            raise BadBody("the body is not a mapping")
        if topic.startswith("hb."):
            self.heartbeats.beat(topic[3:], _field(body, "state", str), str(body.get("message", "")), now)
        elif topic == "obs.frame":
            self._frame(body, now, out)
        elif topic == "obs.event":
            self._event(body, now, out)
        elif topic == "plan.keys":
            plan_id, piece = _field(body, "plan_id", (int, str)), _field(body, "piece", str, optional=True)
            if piece is not None:  # a plan that moves no piece (new_game) leaves nothing to check
                self.reality.on_plan(plan_id, piece)
        elif topic == "predict.board":
            self.reality.on_prediction(_field(body, "plan_id", (int, str)), _board(body))
        elif topic in ("relay.state", "ai.state"):
            new = self.deadlines.report(topic, _field(body, "deadline_misses", int))
            self.counters["deadline_misses"] += new
            if new:
                out.append(self._state(now))

    def _frame(self, body: dict[str, Any], now: float, out: list[Output]) -> None:
        frame_seq = _field(body, "frame_seq", int)
        t_capture = _field(body, "t_capture", (int, float))
        status = _field(body, "status", str)
        board = _board(body, optional=True)
        self._calibration = _field(body, "calibration", str)
        self._seen_frame = True
        self.frames.frame(float(t_capture), now)
        if board is not None and status == "ok":
            self._observed, self._observed_at = board, now
        if self._landing is not None and frame_seq >= self._landing.frame_seq:
            self._check(now, out)

    def _event(self, body: dict[str, Any], now: float, out: list[Output]) -> None:
        kind = _field(body, "kind", str)
        frame_seq = _field(body, "frame_seq", int)
        board = _board(body)
        piece = _field(body, "piece", str, optional=True)
        if self._landing is not None and frame_seq > self._landing.frame_seq:
            self._check(now, out)
        if self._landing is not None and frame_seq == self._landing.frame_seq:
            self._landing.board = board  # every event of a frame carries the stack after the frame
            if kind == "landed":
                self._landing.piece = piece
        elif kind == "landed":
            self._landing = _Landing(frame_seq, piece, board)

    # ---- the reality check ---------------------------------------------------------------------

    def _check(self, now: float, out: list[Output]) -> None:
        landing, self._landing = self._landing, None
        if landing is None or self.halted:
            return
        verdict = self.reality.on_landing(landing.piece, landing.board)
        if verdict is None:
            return
        self.counters["checks"] += 1
        if verdict.matched:
            self._mismatch_run = 0
            return
        self.counters["mismatches"] += 1
        self._mismatch_run += 1
        self._resync(verdict.describe(), landing.board, out)
        if self._mismatch_run >= self.settings.mismatch_halt_count:
            self._mismatch_halt = True
        out.append(self._state(now))

    def _resync(self, reason: str, board: Board, out: list[Output]) -> None:
        self.counters["resyncs"] += 1
        out.append(("wd.resync", {"reason": reason, "board": list(board)}))

    # ---- health ----------------------------------------------------------------------------------

    def problems(self, now: float) -> list[str]:
        """What keeps play from running now, one phrase each (the mismatch halt aside)."""
        found = self.heartbeats.problems(now)
        if not self._seen_frame:
            found.append("no camera frame yet")
        elif self.frames.stale(now):
            found.append(
                f"no new camera frame for {self.frames.stale_for(now) * 1000:.0f} ms"
                f" ({self.settings.stale_frame_periods:g} frame periods of {self.frames.period_s * 1000:.1f} ms)"
            )
        if self._calibration in ("moved", "lost"):
            found.append(f"the camera's calibration is {self._calibration}")
        return found

    def tick(self, now: float) -> list[Output]:
        """Check the health at ``now``: halt, resume, and the periodic wd.state."""
        out: list[Output] = []
        problems = self.problems(now)
        self._count_transitions(now)
        if self._mismatch_halt and not self.halted:
            problems.append(f"{self._mismatch_run} consecutive reality-check mismatches")
        if not self.halted and problems:
            self._halt(problems, now, out)
        elif self.halted:
            if problems:
                self._healthy_since = None
                self.reason = "; ".join(problems)
                self._stale_only = self._stale_only and self._only_stale(problems, now)
            elif self._healthy_since is None:
                self._healthy_since = now
            elif self._may_resume(now):
                self._resume(now, out)
        if self._halted_at is not None:
            self.max_halt_s = max(self.max_halt_s, now - self._halted_at)
        if out or now - self._state_at >= STATE_EVERY_S:
            out.append(self._state(now))
        return out

    def _count_transitions(self, now: float) -> None:
        dead = set(self.heartbeats.dead(now))
        self.counters["dead_services"] += len(dead - self._was_dead)
        self._was_dead = dead
        stale = self._seen_frame and self.frames.stale(now)
        self.counters["stale_frames"] += stale and not self._was_stale
        self._was_stale = stale

    def _only_stale(self, problems: list[str], now: float) -> bool:
        """Whether ``problems`` are the stale frames' alone (their phrase is in them when they are stale)."""
        return len(problems) == 1 and self._seen_frame and self.frames.stale(now)

    def _may_resume(self, now: float) -> bool:
        """Healthy long enough since ``_healthy_since`` to resume (see the module docstring)."""
        assert self._healthy_since is not None
        healthy_for = now - self._healthy_since
        if self._stale_only:
            fresh = self.settings.stale_frame_periods * self.frames.period_s
            return healthy_for >= fresh and self._observed_at >= self._healthy_since
        return healthy_for >= self.settings.resume_healthy_s

    def _halt(self, problems: list[str], now: float, out: list[Output]) -> None:
        reason = "; ".join(problems)
        self._stale_only = self._only_stale(problems, now)
        self.halted, self.reason = True, reason
        self._halted_at, self._healthy_since = now, None
        self.counters["halts"] += 1
        self.reality.forget()
        self._landing = None
        out.append(("wd.halt", {"reason": reason}))

    def _resume(self, now: float, out: list[Output]) -> None:
        if self._halted_at is not None:
            self.max_halt_s = max(self.max_halt_s, now - self._halted_at)
        if self._observed is not None:
            self._resync("resuming after a halt: adopt the board the camera sees", self._observed, out)
        self.halted, self.reason = False, ""
        self._halted_at = self._healthy_since = None
        self._mismatch_halt, self._mismatch_run = False, 0
        out.append(("wd.resume", {}))

    def _state(self, now: float) -> Output:
        self._state_at = now
        return "wd.state", {
            "halted": self.halted,
            "reason": self.reason,
            "counters": dict(self.counters),
            "max_halt_s": round(self.max_halt_s, 3),
        }
