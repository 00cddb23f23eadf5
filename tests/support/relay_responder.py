"""A minimal device side of the four relay boards on a real pty, for the driver tests.

It answers exactly as hardware.md describes the boards (ADR2200 silent writes and RPK binary reply,
Numato echo + `\\n\\r` + `>` prompt, KMtronic status bytes, LCUS silence), keeps every byte it
received, can hold a relay stuck, and can be unplugged and replugged behind a stable symlink. The
full virtual board with its faults is hardware/sim/relay_board.py; this stays small on purpose.
"""

from __future__ import annotations

import os
import re
import select
import threading
import tty
from pathlib import Path

FRAME_LENGTH = {"kmtronic": 3, "lcus": 4}


class RelayResponder:
    """Owns a pty master and speaks one board's device protocol; `path` is the symlink to open."""

    def __init__(self, protocol: str, link_path: Path, channels: int = 8, address: int | None = None) -> None:
        self.protocol = protocol
        self.link_path = link_path
        self.channels = channels
        self.address = address
        self.closed: set[int] = set()
        self.stuck: dict[int, bool] = {}
        self._received = bytearray()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.replug()

    @property
    def path(self) -> str:
        return str(self.link_path)

    def received(self) -> bytes:
        with self._lock:
            return bytes(self._received)

    def unplug(self) -> None:
        """Close the pty: the driver's next I/O fails and the /dev/pts node disappears."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        os.close(self._master)
        os.close(self._slave)

    def replug(self) -> None:
        """A new pty behind the same symlink, all relays open (a power-cycled board)."""
        self._master, self._slave = os.openpty()
        tty.setraw(self._master)  # before the driver opens it: no cooked echo of early bytes
        temporary = self.link_path.with_suffix(".new")
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(os.ttyname(self._slave))
        os.replace(temporary, self.link_path)
        self.closed = set()
        self._pending = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.unplug()
        self.link_path.unlink(missing_ok=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            if not select.select([self._master], [], [], 0.02)[0]:
                continue
            try:
                data = os.read(self._master, 1024)
            except OSError:
                continue  # EIO while no client has the slave open beyond ours
            with self._lock:
                self._received += data
            self._pending += data
            self._pending = self._handle(self._pending)

    def _relays(self) -> set[int]:
        state = set(self.closed)
        for output, closed in self.stuck.items():
            (state.add if closed else state.discard)(output)
        return state

    def _reply(self, data: bytes) -> None:
        os.write(self._master, data)

    def _handle(self, pending: bytes) -> bytes:
        if self.protocol in FRAME_LENGTH:
            size = FRAME_LENGTH[self.protocol]
            while len(pending) >= size:
                self._binary(pending[:size])
                pending = pending[size:]
            return pending
        while b"\r" in pending:
            line, pending = pending.split(b"\r", 1)
            (self._adr if self.protocol == "adr2200" else self._numato)(line.decode("ascii"))
        return pending

    def _adr(self, line: str) -> None:
        match = re.fullmatch(r"(\d?)(ID|RPK|MK(\d+)|SK(\d)|RK(\d))", line.replace(" ", ""))
        if not match or (match[1] or "0") != str(self.address or 0):
            return  # unknown lines and other boards' commands are dropped silently, like the board
        if match[2] == "RPK":
            self._reply(f"{sum(1 << n for n in self._relays()):08b}\r".encode())
        elif match[3] is not None:
            self.closed = {n for n in range(8) if int(match[3]) >> n & 1}
        elif match[4] is not None:
            self.closed.add(int(match[4]))
        elif match[5] is not None:
            self.closed.discard(int(match[5]))

    def _numato(self, line: str) -> None:
        names = "0123456789ABCDEFGHIJKLMNOPQRSTUV"
        answer = ""
        if match := re.fullmatch(r"relay (on|off) ([0-9A-V])", line):
            (self.closed.add if match[1] == "on" else self.closed.discard)(names.index(match[2]))
        elif line == "relay readall":
            answer = f"{sum(1 << n for n in self._relays()):02x}\n\r"
        self._reply(f"{line}\n\r{answer}>".encode())

    def _binary(self, frame: bytes) -> None:
        if self.protocol == "kmtronic" and frame == b"\xff\x09\x00":
            state = self._relays()
            self._reply(bytes(1 if n in state else 0 for n in range(self.channels)))
        elif frame[0] in (0xFF, 0xA0) and frame[2] in (0, 1):
            (self.closed.add if frame[2] else self.closed.discard)(frame[1] - 1)
