"""The watchdog's health signals: heartbeats, fresh camera frames, deadline misses.

Pure: the caller passes the time (its own ``time.monotonic()`` when a message arrived, or at a
tick), so every decision is made on the watchdog's clock and a constant bus or recognition
latency shifts nothing.

* ``Heartbeats``: a watched service is dead when its last ``hb.<name>`` arrived more than
  ``timeout_s`` ago; it is unhealthy while dead, before its first heartbeat, and while its
  heartbeat says ``fault``.
* ``FrameClock``: frames are stale when no ``obs.frame`` with a newer ``t_capture`` arrived for
  ``periods`` frame periods and one that did not advance came meanwhile.  The camera keeps
  ``t_capture`` at the first capture of an image it keeps receiving (a frozen camera), and
  reports status none with the last capture time when the source sends nothing, so a frozen or
  lost stream is stale within ``periods`` periods even while frames flow.  Frames that are merely
  late (the camera service busy on a loaded machine: its p99 per frame was 56 ms on the 2-core
  test machine with the whole rig running) are stale only after LATE_LIMIT_S as well.
  The frame period is the median interval between advancing ``t_capture`` values of the last
  ``WINDOW`` frames (what the camera really delivers, not what it was asked for).
* ``DeadlineTally``: services report cumulative deadline-miss counters; a counter that goes
  down is a restarted service whose new count adds on.
"""

from __future__ import annotations

from collections import deque
from statistics import median

#: Intervals the frame period is the median of.
WINDOW = 31
#: The frame period assumed before two frames have been seen (a 30 fps camera).
DEFAULT_PERIOD_S = 1 / 30
#: No obs.frame at all for this long is stale however short the frame period (the obs.frame lifespan).
LATE_LIMIT_S = 0.25


class Heartbeats:
    """When each watched service was last heard from, and in which lifecycle state."""

    def __init__(self, services: tuple[str, ...], timeout_s: float) -> None:
        if timeout_s <= 0:
            raise ValueError(f"heartbeat timeout must be positive, got {timeout_s}")
        self.services = services
        self.timeout_s = timeout_s
        self._last: dict[str, float] = {}
        self._state: dict[str, tuple[str, str]] = {}  # name -> (state, message)

    def beat(self, name: str, state: str, message: str, now: float) -> None:
        """A heartbeat of ``name`` arrived at ``now``."""
        self._last[name] = now
        self._state[name] = (state, message)

    def dead(self, now: float) -> list[str]:
        """Watched services that were heard from, but not within the timeout."""
        return [name for name in self.services if name in self._last and now - self._last[name] > self.timeout_s]

    def problems(self, now: float) -> list[str]:
        """Why the services are not all alive and well, one phrase each; empty when they are."""
        found = []
        for name in self.services:
            if name not in self._last:
                found.append(f"no heartbeat from {name} yet")
            elif now - self._last[name] > self.timeout_s:
                found.append(f"{name} is not alive (last heartbeat {now - self._last[name]:.2f} s ago)")
            elif self._state[name][0] == "fault":
                found.append(f"{name} is in fault: {self._state[name][1]}")
        return found


class FrameClock:
    """Whether the camera's frames are fresh; see the module docstring."""

    def __init__(self, periods: float, now: float) -> None:
        if periods <= 0:
            raise ValueError(f"stale_frame_periods must be positive, got {periods}")
        self.periods = periods
        self._last_capture: float | None = None
        self._advanced_at = now  # when a frame with a newer capture time last arrived
        self._repeated = False  # a frame that did not advance arrived since then
        self._intervals: deque[float] = deque(maxlen=WINDOW)

    @property
    def period_s(self) -> float:
        """The camera's frame period as measured (DEFAULT_PERIOD_S until measured)."""
        return median(self._intervals) if self._intervals else DEFAULT_PERIOD_S

    def frame(self, t_capture: float, now: float) -> bool:
        """An ``obs.frame`` captured at ``t_capture`` arrived at ``now``; True when it is newer than the last."""
        if self._last_capture is not None and t_capture <= self._last_capture:
            self._repeated = True
            return False
        if self._last_capture is not None:
            self._intervals.append(t_capture - self._last_capture)
        self._last_capture, self._advanced_at, self._repeated = t_capture, now, False
        return True

    def stale_for(self, now: float) -> float:
        """Seconds since a newer frame arrived."""
        return now - self._advanced_at

    def stale(self, now: float) -> bool:
        """True when no newer frame arrived for ``periods`` frame periods and the camera said it
        has none (a repeated capture time), or for LATE_LIMIT_S as well."""
        waited = self.stale_for(now)
        return waited > self.periods * self.period_s and (self._repeated or waited > LATE_LIMIT_S)


class DeadlineTally:
    """The sum of every service's deadline misses, across restarts."""

    def __init__(self) -> None:
        self._last: dict[str, int] = {}
        self.total = 0

    def report(self, source: str, cumulative: int) -> int:
        """``source`` reports ``cumulative`` misses since it started; returns the new misses."""
        last = self._last.get(source, 0)
        new = cumulative - last if cumulative >= last else cumulative  # went down: it restarted
        self._last[source] = cumulative
        self.total += new
        return new
