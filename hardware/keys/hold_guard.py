"""The max-hold guard: a timer thread that releases any output held past its deadline.

It is the actuator-side limit DESIGN.md asks for: whatever the caller does (hangs after down(), dies
in a loop, forgets up()), an output is opened at most max_hold_ms after it closed, give or take the
thread's wake-up latency. Tested in tests/unit/test_key_output.py and through KeyOutput on a pty.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class HoldGuard:
    """Calls on_expire(output) from its own thread once an armed output's deadline passes.

    The callback runs without the guard's lock held; it must itself check that the hold it is about
    to end is still the one that expired (the caller may have released and re-pressed in between).
    """

    def __init__(self, on_expire: Callable[[int], None], name: str = "hold guard") -> None:
        self._on_expire = on_expire
        self._deadlines: dict[int, float] = {}
        self._wake = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def arm(self, output: int, deadline: float) -> None:
        """Release `output` at time.monotonic() `deadline` unless disarmed first."""
        with self._wake:
            self._deadlines[output] = deadline
            self._wake.notify()

    def disarm(self, output: int) -> None:
        """Forget `output`'s deadline (it was released in time)."""
        with self._wake:
            self._deadlines.pop(output, None)

    def stop(self) -> None:
        """End the thread; armed deadlines are dropped (the owner releases everything itself)."""
        with self._wake:
            self._stopped = True
            self._deadlines.clear()
            self._wake.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._stopped:
                    now = time.monotonic()
                    expired = [output for output, deadline in self._deadlines.items() if deadline <= now]
                    if expired:
                        break
                    soonest = min(self._deadlines.values(), default=None)
                    self._wake.wait(None if soonest is None else soonest - now)
                if self._stopped:
                    return
                for output in expired:
                    del self._deadlines[output]
            for output in expired:
                self._on_expire(output)
