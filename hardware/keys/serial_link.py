"""A serial port that notices its own loss and reopens itself.

pyserial underneath, opened with read and write timeouts and an exclusive lock, and never touching
DTR/RTS (a pty, like some adapters, raises ENOTTY for modem lines; pyserial's own open tolerates it).
A watcher thread checks the idle port every `watch_interval` (the device node still there and still
the one we opened, no I/O error) and, once the port is lost, reopens it with capped exponential
backoff; every (re)open runs the owner's `on_open` (the board's start-up: release everything) before
the link counts as connected, so nothing can be pressed in between. State changes go to `on_state`
and the log. Every byte written can be recorded to a file, exactly as sent.

Tested against real ptys (tests/integration/test_relay_drivers.py): loss while idle and during a
command, recovery after the port returns at the same symlink path, the record file. Real USB adapters
are not tested here (none attached).
"""

from __future__ import annotations

import enum
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import serial

from gamerig.hardware.frames.source import Backoff
from gamerig.hardware.keys.outputs import KeyOutputError
from gamerig.hardware.keys.relay_protocols import Command

log = logging.getLogger(__name__)


class PortLost(KeyOutputError):
    """The serial port vanished or failed; the link is reconnecting and nothing was sent."""


class LinkState(enum.Enum):
    """Where a link stands: talking to the port, waiting for it to come back, or shut."""

    CONNECTED = "connected"
    LOST = "lost"
    CLOSED = "closed"


@dataclass(frozen=True)
class LinkSettings:
    """Where the port is and how long to wait for it (seconds)."""

    port: str
    baud: int = 9600
    reply_timeout: float = 0.25
    write_timeout: float = 0.5
    watch_interval: float = 0.1
    # Capped low so a returning port is reopened well within 2 s.
    backoff: Backoff = field(default_factory=lambda: Backoff(initial=0.1, cap=0.5))


StateCallback = Callable[[LinkState, str], None]


class SerialLink:
    """One serial port, command by command, that reconnects by itself.

    `lock` (reentrant) serialises every use of the port; hold it around a sequence of exchanges that
    must not be interleaved (a write and its readback). `on_open` runs under it after every open.
    `on_state(state, detail)` is called from whichever thread saw the change, with the lock held, so
    it must not use the link itself. `record` is truncated when the link is made and then receives
    every byte written, across reconnects.
    """

    def __init__(
        self,
        settings: LinkSettings,
        *,
        name: str,
        on_open: Callable[[], None],
        on_state: StateCallback | None = None,
        record: Path | None = None,
    ) -> None:
        self.settings = settings
        self.name = name
        self.lock = threading.RLock()
        self._on_open = on_open
        self._on_state = on_state
        self._record: BinaryIO | None = open(record, "wb") if record else None  # noqa: SIM115 - lives as long as the link
        self._port: serial.Serial | None = None
        self._device: int | None = None  # st_rdev of the open port, to notice the path naming another
        self._state = LinkState.LOST
        self._stop = threading.Event()
        self._nudge = threading.Event()  # wakes the watcher early: to reconnect at once, or to stop
        self._watcher = threading.Thread(target=self._watch, name=f"serial watch {settings.port}", daemon=True)

    @property
    def state(self) -> LinkState:
        """CONNECTED, LOST (reconnecting) or CLOSED."""
        return self._state

    def open(self) -> None:
        """Open the port and run on_open; raise KeyOutputError if either fails. Starts the watcher."""
        with self.lock:
            try:
                self._connect()
            except Exception:
                self._close_record()
                raise
        self._watcher.start()

    def exchange(self, command: Command) -> bytes:
        """Send one command and read its reply (b"" if it has none).

        Raises PortLost if the port is gone or fails (the watcher then reconnects), KeyOutputError
        if the device does not answer completely within reply_timeout.
        """
        with self.lock:
            port = self._port
            if port is None and self._state is LinkState.CLOSED:
                raise KeyOutputError(f"{self.name}: link is closed; nothing sent")
            if port is None:
                raise PortLost(f"{self.name}: port lost, reconnecting; nothing sent")
            try:
                if command.reply is not None:
                    port.reset_input_buffer()  # a late reply to an earlier command must not pass for this one
                sent = port.write(command.frame)
                self._write_record(command.frame[: sent or 0])
                reply = command.reply
                if reply is None:
                    return b""
                data = port.read_until(reply.until) if reply.until else port.read(reply.length or 0)
            except serial.SerialTimeoutException as exc:
                raise KeyOutputError(f"{self.name}: write of {command.frame!r} timed out") from exc
            except (serial.SerialException, OSError) as exc:
                self._lose(f"{exc}")
                raise PortLost(f"{self.name}: port lost ({exc}), reconnecting") from exc
            complete = data.endswith(reply.until) if reply.until else len(data) == reply.length
            if not complete:
                raise KeyOutputError(
                    f"{self.name}: no complete reply to {command.frame!r} within "
                    f"{self.settings.reply_timeout} s (got {data!r})"
                )
            return data

    def close(self) -> None:
        """Stop the watcher and close the port and the record file."""
        self._stop.set()
        self._nudge.set()
        if self._watcher.is_alive() and self._watcher is not threading.current_thread():
            self._watcher.join(timeout=2.0)
        with self.lock:
            self._close_port()
            self._close_record()
            self._set_state(LinkState.CLOSED, "closed")

    def _connect(self) -> None:
        """Open the port and run on_open (under the lock); on failure leave the port closed and raise."""
        port = serial.Serial()
        port.port = self.settings.port
        port.baudrate = self.settings.baud
        port.timeout = self.settings.reply_timeout
        port.write_timeout = self.settings.write_timeout
        port.exclusive = True
        try:
            port.open()
        except (serial.SerialException, OSError) as exc:
            raise KeyOutputError(f"{self.name}: cannot open {self.settings.port}: {exc}") from exc
        self._port = port
        self._device = os.fstat(port.fileno()).st_rdev
        try:
            self._on_open()
        except Exception:
            self._close_port()
            raise
        self._set_state(LinkState.CONNECTED, f"opened {self.settings.port}")

    def _watch(self) -> None:
        """Check the idle port while connected; reopen it with backoff while lost."""
        failures = 0
        delay = self.settings.watch_interval
        while True:
            self._nudge.wait(delay)
            self._nudge.clear()
            with self.lock:
                if self._stop.is_set():
                    return
                if self._state is LinkState.CONNECTED:
                    self._check_idle_port()
                    delay = self.settings.watch_interval
                    continue
                try:
                    self._connect()
                except Exception as exc:  # noqa: BLE001 - any failed attempt just means: try again later
                    failures += 1
                    delay = self.settings.backoff.delay(failures)
                    log.debug("%s: reopen attempt %d failed: %s", self.name, failures, exc)
                else:
                    failures = 0
                    delay = self.settings.watch_interval

    def _check_idle_port(self) -> None:
        """Declare the port lost if its node is gone or replaced, or the port reports an error."""
        port = self._port
        if port is None:
            return
        try:
            if os.stat(self.settings.port).st_rdev != self._device:
                self._lose(f"{self.settings.port} now names another device")
                return
            waiting = port.in_waiting
            if waiting:
                log.warning("%s: discarding unsolicited bytes %r", self.name, port.read(waiting))
        except (serial.SerialException, OSError) as exc:
            self._lose(f"{exc}")

    def _lose(self, reason: str) -> None:
        self._close_port()
        if self._state is LinkState.CONNECTED:
            self._set_state(LinkState.LOST, reason)
            self._nudge.set()

    def _close_port(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            try:
                port.close()
            except (serial.SerialException, OSError):
                pass  # the port is already gone; nothing left to release

    def _set_state(self, state: LinkState, detail: str) -> None:
        if state is self._state:
            return
        self._state = state
        level = logging.WARNING if state is LinkState.LOST else logging.INFO
        log.log(level, "%s: %s (%s)", self.name, state.value, detail)
        if self._on_state is not None:
            self._on_state(state, detail)

    def _write_record(self, data: bytes) -> None:
        if self._record is not None and data:
            self._record.write(data)
            self._record.flush()  # a killed process still leaves every byte it sent

    def _close_record(self) -> None:
        record, self._record = self._record, None
        if record is not None:
            record.close()
