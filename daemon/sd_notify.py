"""systemd's notify protocol in pure Python: READY=1, STATUS=..., WATCHDOG=1, STOPPING=1.

Each message is one datagram of newline-separated KEY=VALUE lines sent to $NOTIFY_SOCKET, an
AF_UNIX datagram socket (a leading "@" is the abstract namespace). Without $NOTIFY_SOCKET (not under
systemd, or Type=simple) every call does nothing. The kernel attaches the sender's pid itself; with
the default NotifyAccess=main the supervisor's main process sends, never its children
(hardware.md section 6). The watchdog is petted at half of $WATCHDOG_USEC, and only when the caller
says the rig is healthy, so systemd restarts a daemon whose services stay dead.

Tested by tests/integration/test_sd_notify.py against a real AF_UNIX datagram socket standing in
for the manager (file path and abstract names); not tested under a real systemd here.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping


class Notifier:
    """Sends notify messages to the service manager named by the environment, if any."""

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        self.address = _address(environ.get("NOTIFY_SOCKET", ""))
        self.watchdog_period_s = _watchdog_period(environ)
        self._last_ping: float | None = None

    @property
    def enabled(self) -> bool:
        """True when a manager listens (NOTIFY_SOCKET set to a usable address)."""
        return self.address is not None

    def send(self, **fields: str) -> bool:
        """Send one datagram with the given KEY=VALUE fields (keys as given, e.g. READY="1").
        Returns whether it was sent; an unreachable manager is not an error worth stopping for."""
        if self.address is None:
            return False
        # A newline in a value would start a new field; STATUS is free text, so flatten it.
        payload = "\n".join(f"{key}={str(value).replace(chr(10), ' ')}" for key, value in fields.items())
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.connect(self.address)
                sock.sendall(payload.encode())
        except OSError:
            return False
        return True

    def ready(self, status: str) -> bool:
        """Start-up is complete (Type=notify units are "active" from here)."""
        return self.send(READY="1", STATUS=status)

    def status(self, text: str) -> bool:
        """The one-line status `systemctl status` shows."""
        return self.send(STATUS=text)

    def stopping(self, status: str = "stopping") -> bool:
        """Shutdown has begun."""
        return self.send(STOPPING="1", STATUS=status)

    def watchdog_if_due(self, now: float, healthy: bool) -> bool:
        """Pet the watchdog if the rig is healthy and half the watchdog interval has passed since
        the last ping (``now``: time.monotonic()). Returns whether a ping was sent."""
        if not healthy or self.watchdog_period_s is None:
            return False
        if self._last_ping is not None and now - self._last_ping < self.watchdog_period_s:
            return False
        if self.send(WATCHDOG="1"):
            self._last_ping = now
            return True
        return False


def _address(value: str) -> str | None:
    """The socket address in $NOTIFY_SOCKET; None for unset or a kind we do not speak (vsock)."""
    if value.startswith("/"):
        return value
    if value.startswith("@") and len(value) > 1:
        return "\0" + value[1:]
    return None


def _watchdog_period(environ: Mapping[str, str]) -> float | None:
    """Half of $WATCHDOG_USEC in seconds, if the watchdog is on and meant for this process."""
    pid = environ.get("WATCHDOG_PID")
    if pid and pid != str(os.getpid()):
        return None
    try:
        usec = int(environ.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    return usec / 2e6 if usec > 0 else None
