"""The relay service's hands: a thread that presses a plan's keys in order, under deadline, haltable at once.

KeyOutput.press() is not used for plans: it cannot be interrupted mid-hold, and its close cannot be
made conditional on "not halted" without a race (a halt arriving between a check and the close
would let one press through).  So each press here is down(), an interruptible hold, up(), and the
close happens under ``_gate``, the same lock ``halt()`` takes to latch the halt and release every
output: a close either happens before the halt (and the halt's release_all opens it) or sees the
halt and does not happen.  KeyOutput still enforces the rest: the max-hold guard, release on
SIGTERM and at exit, validation of key names.

Deadlines (the plan's ``deadline_t``, time.monotonic()): a plan is not started once its deadline
has passed, and a key whose press would go down after it is not pressed: the plan stops there and
it is a deadline miss.  A start time (``start_t``): no key of the plan goes down before it (the ai
times a drop to the game's gravity and the next piece's first key to just after its spawn); key
times (``key_t``): no key goes down before its own (a turn waits for the piece's first fall).  Gaps
are kept between the presses of a plan (``gap_s`` from the previous release: the cadence the ai
plans with), and before a plan's first key if it is the key released last (the keyboard must see
the release before the next press).  A plan's first key on another relay needs no gap: it goes
down as soon as the last key is up (the next piece's first key after the drop, at level 10 a fall
step of 50 ms, is no longer held a whole 60 ms cycle after the drop).  A newer plan
supersedes the one running (it stops before its next key, also while waiting for its start).

Thread-safety: submit/halt/resume/close from any thread; on_key and on_done are called from the
runner thread (the service queues them for its publisher, which only the main thread uses).
Tested through the relay service in tests/integration/test_relay_service.py.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from gamerig.hardware.keys import KeyOutput, KeyOutputError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Plan:
    """The keys of one plan.keys message, the time by which the last of them must be down, the
    time before which none may (``start_t``) and, optionally, the time before which each may not
    (``key_t``, one per key)."""

    plan_id: object
    keys: tuple[str, ...]
    deadline_t: float
    start_t: float = -float("inf")
    key_t: tuple[float, ...] = ()


@dataclass(frozen=True)
class KeyPressed:
    """One press as executed (relay.key)."""

    plan_id: object
    key: str
    down_t: float
    up_t: float


@dataclass(frozen=True)
class PlanDone:
    """How a plan ended (relay.done); ``deadline_miss`` when the deadline stopped it."""

    plan_id: object
    ok: bool
    reason: str
    pressed: int
    t_done: float
    deadline_miss: bool = False


class PlanRunner:
    """Executes plans on ``output`` in its own thread; see the module docstring."""

    def __init__(
        self,
        output: KeyOutput,
        hold_s: float,
        gap_s: float,
        on_key: Callable[[KeyPressed], None],
        on_done: Callable[[PlanDone], None],
    ) -> None:
        self._output = output
        self._hold_s = hold_s
        self._gap_s = gap_s
        self._on_key = on_key
        self._on_done = on_done
        self._gate = threading.Lock()  # a close, against halt()'s latch and release
        self._wake = threading.Condition()
        self._interrupt = threading.Event()  # a newer plan, a halt or close: no further key of this plan
        self._cut_hold = threading.Event()  # a halt or close: the hold ends now (a newer plan lets it finish)
        self._pending: Plan | None = None
        self._halted_reason: str | None = None
        self._closed = False
        self._last_up = -float("inf")
        self._last_key: str | None = None
        self._thread = threading.Thread(target=self._run, name="relay plan runner", daemon=True)
        self._thread.start()

    @property
    def halted(self) -> bool:
        """True while halted (nothing is executed)."""
        return self._halted_reason is not None

    def submit(self, plan: Plan) -> None:
        """Run ``plan`` next, superseding the running or pending one."""
        with self._wake:
            superseded, self._pending = self._pending, plan
            self._interrupt.set()
            self._wake.notify()
        if superseded is not None:
            self._on_done(PlanDone(superseded.plan_id, False, "superseded before it started", 0, time.monotonic()))

    def halt(self, reason: str) -> None:
        """Safe state now: latch the halt, release every output, drop the pending and running plan."""
        with self._gate:
            self._halted_reason = reason
            self._interrupt.set()
            self._cut_hold.set()
            self._output.release_all()
        with self._wake:
            dropped, self._pending = self._pending, None
        if dropped is not None:
            self._on_done(PlanDone(dropped.plan_id, False, f"halted: {reason}", 0, time.monotonic()))

    def resume(self) -> None:
        """Execute plans again (ones that arrive from now on)."""
        with self._gate:
            self._halted_reason = None
            self._cut_hold.clear()

    def close(self) -> None:
        """Stop the thread and release everything."""
        with self._wake:
            self._closed = True
            self._interrupt.set()
            self._cut_hold.set()
            self._wake.notify()
        self._thread.join(timeout=2.0)
        self._output.release_all()

    # ---- the runner thread -----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._wake:
                while self._pending is None and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                plan, self._pending = self._pending, None
                self._interrupt.clear()
            self._on_done(self._execute(plan))

    def _execute(self, plan: Plan) -> PlanDone:
        pressed = 0
        for index, key in enumerate(plan.keys):
            gap = self._gap_s if index or key == self._last_key else 0.0
            earliest = max(self._last_up + gap, plan.start_t if index == 0 else -float("inf"), plan.key_t[index] if plan.key_t else -float("inf"))
            if not self._pause_until(earliest, self._interrupt):
                return self._stopped(plan, pressed)
            with self._gate:
                now = time.monotonic()
                if self._halted_reason is not None or self._interrupt.is_set():
                    return self._stopped(plan, pressed)
                if now > plan.deadline_t:
                    where = "before it started" if index == 0 else f"after {pressed} of {len(plan.keys)} keys"
                    return PlanDone(plan.plan_id, False, f"deadline passed {where}", pressed, now, deadline_miss=True)
                try:
                    self._output.down(key)
                except (KeyOutputError, ValueError) as exc:
                    return self._failed(plan, pressed, f"{key}: {exc}")
            down_t = now
            self._pause_until(down_t + self._hold_s, self._cut_hold)  # cut short: a halt released it already
            try:
                self._output.up(key)
            except KeyOutputError as exc:
                return self._failed(plan, pressed, f"{key} release: {exc}")
            finally:
                self._last_up, self._last_key = time.monotonic(), key
            pressed += 1
            self._on_key(KeyPressed(plan.plan_id, key, down_t, self._last_up))
        return PlanDone(plan.plan_id, True, "", pressed, time.monotonic())

    @staticmethod
    def _pause_until(t: float, cut: threading.Event) -> bool:
        """Wait until monotonic time ``t`` unless ``cut`` is set; False if it is."""
        remaining = t - time.monotonic()
        if remaining > 0:
            return not cut.wait(remaining)
        return not cut.is_set()

    def _stopped(self, plan: Plan, pressed: int) -> PlanDone:
        reason = f"halted: {self._halted_reason}" if self._halted_reason is not None else "superseded by a newer plan"
        return PlanDone(plan.plan_id, False, reason, pressed, time.monotonic())

    def _failed(self, plan: Plan, pressed: int, reason: str) -> PlanDone:
        log.warning("plan %s stopped: %s", plan.plan_id, reason)
        self._output.release_all()
        return PlanDone(plan.plan_id, False, reason, pressed, time.monotonic())
