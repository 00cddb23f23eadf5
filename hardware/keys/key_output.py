"""KeyOutput: presses named keys on any Outputs backend with safe timing, and measures the timing.

press(key) waits out the gap since the last release, closes the key's output, holds it, and opens
it again, in a try/finally so an exception (KeyboardInterrupt included) mid-press still releases.
The safety rules are enforced here rather than left to callers: everything is released on open and
close; a max-hold guard thread releases any output held past max_hold_ms even if the caller hangs;
interpreter exit and SIGTERM/SIGINT release everything (safety.py).

Timing: holds and gaps are timed on time.monotonic() with a sleep followed by a short spin (about
1.5 ms). Each press is measured from just before the close command to just before the open command,
and timing_stats() summarises the errors. Measured with tests/support/relay_timing.py (ADR2200
driver and the simulator's virtual board in one process over a pty, presses of 60 ms, this 2-core
machine shared with other work): at load average 1.5, 500 presses, hold error p50 0.04 ms, p99
0.13 ms, max 1.7 ms; at load average 3, 1000 presses, p99 4.6 ms and one press 60 ms late (the
process was not scheduled); that run under SCHED_FIFO (`chrt -f 10`): p99 0.10 ms. So on a busy
machine the scheduler, not this code, sets the tail; a rig should run its relay process with a
real-time priority. What reaches the target also depends on the wire (about 1 ms/byte at 9600
baud, the same for press and release), the relay and the keyboard, which this cannot see.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from dataclasses import dataclass
from types import TracebackType

import numpy as np

from gamerig.hardware.keys import safety
from gamerig.hardware.keys.config import MIN_TIME_MS, KeyOutputConfig
from gamerig.hardware.keys.hold_guard import HoldGuard
from gamerig.hardware.keys.outputs import KeyOutputError, Outputs

log = logging.getLogger(__name__)

#: The final stretch of every wait is spun rather than slept: sleep() overshoots by up to a millisecond.
SPIN_S = 0.0015
#: How many recent presses timing_stats() summarises.
KEPT_PRESSES = 10_000
#: How long an emergency release waits for a press in another thread to finish its I/O.
EMERGENCY_LOCK_TIMEOUT_S = 1.0


@dataclass(frozen=True, slots=True)
class PressRecord:
    """One press as it happened. Times are time.monotonic() seconds.

    down_t / up_t: just before the close / open command was sent. gap_s: down_t minus the previous
    release (None for the first press). waited: the press had to wait for the gap, so gap_s - the
    configured gap is a timing error; otherwise the caller simply came later.
    """

    key: str
    output: int
    hold_ms: float
    gap_ms: float
    down_t: float
    up_t: float
    gap_s: float | None
    waited: bool

    @property
    def measured_hold_ms(self) -> float:
        """How long the output was held, as timed here."""
        return (self.up_t - self.down_t) * 1000.0

    @property
    def hold_error_ms(self) -> float:
        """Measured minus requested hold (positive: held too long)."""
        return self.measured_hold_ms - self.hold_ms


@dataclass(frozen=True, slots=True)
class ErrorStats:
    """Absolute timing errors in milliseconds over `count` samples (zeros when there are none)."""

    count: int
    p50_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, errors_ms: list[float]) -> ErrorStats:
        if not errors_ms:
            return cls(0, 0.0, 0.0, 0.0)
        magnitudes = np.abs(np.asarray(errors_ms))
        return cls(len(magnitudes), *(float(v) for v in np.percentile(magnitudes, [50, 99])), float(magnitudes.max()))


@dataclass(frozen=True, slots=True)
class TimingStats:
    """How well presses kept their timing: hold and gap errors, jitter (standard deviation of the
    hold error), and how often the max-hold guard had to release an output."""

    presses: int
    hold_error: ErrorStats
    gap_error: ErrorStats
    hold_jitter_ms: float
    guard_releases: int


def sleep_until(deadline: float) -> None:
    """Return at time.monotonic() `deadline`: sleep most of the way, spin the last SPIN_S."""
    while (remaining := deadline - time.monotonic()) > SPIN_S:
        time.sleep(remaining - SPIN_S)
    while time.monotonic() < deadline:
        pass


class KeyOutput:
    """Named keys on an Outputs backend, with safe timing and safety on every exit path.

    Thread-safe: the guard thread and other callers may release while a press is in progress.
    Closing the KeyOutput closes the backend.
    """

    def __init__(self, outputs: Outputs, config: KeyOutputConfig) -> None:
        self._outputs = outputs
        self._config = config
        self._wiring = dict(config.outputs)
        self._io = threading.RLock()  # every backend call, so the guard cannot cut a newer hold
        self._held: dict[int, float] = {}  # output -> when it closed
        self._last_release: float | None = None
        self._records: collections.deque[PressRecord] = collections.deque(maxlen=KEPT_PRESSES)
        self._guard_releases = 0
        self._closed = False
        outputs.release_all()
        self._guard = HoldGuard(self._expire, name=f"hold guard {outputs.name}")
        safety.protect(self)

    @property
    def name(self) -> str:
        """The backend's name, e.g. "adr2200 /dev/ttyUSB0"."""
        return self._outputs.name

    @property
    def keys(self) -> tuple[str, ...]:
        """The configured key names."""
        return tuple(self._wiring)

    def press(self, key: str, hold_ms: float | None = None) -> PressRecord:
        """Tap `key`: wait the gap since the last release, close, hold `hold_ms` (default: the
        configured hold), open. Blocks for the whole press; returns what was measured.

        ValueError for an unknown key, a hold outside MIN_TIME_MS..max_hold_ms, or a key currently
        held by down(); KeyOutputError if the device fails (the key is released before it propagates).
        """
        output = self._output(key)
        hold = self._config.hold_ms if hold_ms is None else float(hold_ms)
        if not MIN_TIME_MS <= hold <= self._config.max_hold_ms:
            raise ValueError(f"hold_ms must be {MIN_TIME_MS:g}..{self._config.max_hold_ms:g} ms, got {hold:g}")
        if output in self._held:
            raise ValueError(f"{key!r} is held down; up() it before press()")
        previous = self._last_release
        due = None if previous is None else previous + self._config.gap_ms / 1000.0
        waited = due is not None and time.monotonic() < due
        if due is not None:
            sleep_until(due)
        down_t = self._close(output)
        try:
            sleep_until(down_t + hold / 1000.0)
        finally:
            up_t = self._open(output)
        record = PressRecord(
            key=key,
            output=output,
            hold_ms=hold,
            gap_ms=self._config.gap_ms,
            down_t=down_t,
            up_t=up_t,
            gap_s=None if previous is None else down_t - previous,
            waited=waited,
        )
        self._records.append(record)
        return record

    def down(self, key: str) -> None:
        """Close `key`'s output until up(key), for deliberate holds; the max-hold guard still applies.
        Pressing a key that is already down changes nothing (its guard deadline stays)."""
        output = self._output(key)
        if output not in self._held:
            self._close(output)

    def up(self, key: str) -> None:
        """Open `key`'s output (sent even if it is not known to be down)."""
        self._open(self._output(key))

    def release_all(self) -> None:
        """Open every output; never raises."""
        with self._io:
            for output in list(self._held):
                self._guard.disarm(output)
            self._held.clear()
            self._outputs.release_all()

    def state(self) -> dict[str, bool]:
        """Every key and whether its output is closed, as commanded here (the relay boards confirm
        each command by readback; see Outputs.read_back for the device's own report)."""
        held = set(self._held)
        return {key: output in held for key, output in self._wiring.items()}

    def presses(self) -> list[PressRecord]:
        """The most recent presses (up to KEPT_PRESSES), oldest first."""
        return list(self._records)

    def timing_stats(self) -> TimingStats:
        """Hold and gap errors of the recent presses, and the guard's release count."""
        records = list(self._records)
        hold_errors = [r.hold_error_ms for r in records]
        gap_errors = [r.gap_s * 1000.0 - r.gap_ms for r in records if r.waited and r.gap_s is not None]
        return TimingStats(
            presses=len(records),
            hold_error=ErrorStats.of(hold_errors),
            gap_error=ErrorStats.of(gap_errors),
            hold_jitter_ms=float(np.std(hold_errors)) if hold_errors else 0.0,
            guard_releases=self._guard_releases,
        )

    def emergency_release(self) -> None:
        """Release everything from a signal handler or at exit; never raises or blocks for long."""
        if self._io.acquire(timeout=EMERGENCY_LOCK_TIMEOUT_S):
            try:
                self._held.clear()
            finally:
                self._io.release()
        self._outputs.release_all()

    def close(self) -> None:
        """Release everything and close the backend. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._guard.stop()
        safety.unprotect(self)
        with self._io:
            self._held.clear()
            self._outputs.close()

    def __enter__(self) -> KeyOutput:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _output(self, key: str) -> int:
        if self._closed:
            raise KeyOutputError(f"{self.name}: key output is closed")
        try:
            return self._wiring[key]
        except KeyError:
            raise ValueError(f"unknown key {key!r} (configured: {', '.join(self._wiring)})") from None

    def _close(self, output: int) -> float:
        """Close `output` and arm its guard; returns when the command was sent. On failure the
        output is released again before the error propagates."""
        with self._io:
            down_t = time.monotonic()
            try:
                self._outputs.set(output, True)
            except BaseException:
                self._release_after_failure(output)
                raise
            self._held[output] = down_t
            self._guard.arm(output, down_t + self._config.max_hold_ms / 1000.0)
            return down_t

    def _open(self, output: int) -> float:
        """Open `output` (falling back to releasing everything if that fails); returns when the
        command was sent. Counts as a release for the gap, from when it is done, even if it failed."""
        with self._io:
            self._guard.disarm(output)
            self._held.pop(output, None)
            up_t = time.monotonic()
            try:
                self._outputs.set(output, False)
            except BaseException:
                self._outputs.release_all()
                raise
            finally:
                # the gap runs from the release done (written and read back), as the target sees it
                self._last_release = time.monotonic()
            return up_t

    def _release_after_failure(self, output: int) -> None:
        try:
            self._outputs.set(output, False)
        except KeyOutputError:
            self._outputs.release_all()

    def _expire(self, output: int) -> None:
        """Guard callback: release `output` if the hold that expired is still the current one."""
        with self._io:
            down_t = self._held.get(output)
            if down_t is None or time.monotonic() - down_t < self._config.max_hold_ms / 1000.0:
                return  # released, or released and pressed again, in the meantime
            self._guard_releases += 1
            log.error("%s: output %d held past max_hold_ms=%g; releasing it", self.name, output, self._config.max_hold_ms)
            try:
                self._open(output)
            except KeyOutputError as exc:
                log.error("%s: guard release of output %d failed: %s", self.name, output, exc)
