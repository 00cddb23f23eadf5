"""Serial relay boards as key outputs: one class for all four boards, parameterised by protocol.

On every (re)open the board is brought to a known state (the protocol's start-up, which opens every
relay) and, where the board can report, read back to confirm. After every write the board is read
back and compared with what was commanded: the ADR2200 never acknowledges, so this is the only way to
catch a lost command or a stuck relay; a mismatch raises ReadbackMismatch naming the outputs. The
LCUS cannot report, so its state is the commanded one (read_back() is None).

Tested with real ptys and pyserial against the simulator's VirtualRelayBoard for all four protocols
(tests/integration/test_relay_drivers.py); no real board is attached here.
"""

from __future__ import annotations

import logging
from pathlib import Path

from gamerig.hardware.keys.outputs import KeyOutputError
from gamerig.hardware.keys.relay_protocols import RelayProtocol, ReplyError
from gamerig.hardware.keys.serial_link import LinkSettings, LinkState, SerialLink, StateCallback

log = logging.getLogger(__name__)

#: How long release_all waits for another thread's exchange to finish before giving up.
RELEASE_LOCK_TIMEOUT_S = 1.0


class ReadbackMismatch(KeyOutputError):
    """The board reports relays in a state other than the one commanded (lost command, stuck relay)."""


class RelayBoard:
    """A serial relay board implementing Outputs; opens the port (releasing everything) on creation."""

    def __init__(
        self,
        protocol: RelayProtocol,
        settings: LinkSettings,
        *,
        record: Path | None = None,
        on_state: StateCallback | None = None,
    ) -> None:
        self.name = f"{protocol.kind} {settings.port}"
        self.protocol = protocol
        self._commanded: set[int] = set()
        self._link = SerialLink(settings, name=self.name, on_open=self._start_up, on_state=on_state, record=record)
        self._link.open()

    @property
    def link_state(self) -> LinkState:
        """CONNECTED, LOST (reconnecting; nothing can be pressed) or CLOSED."""
        return self._link.state

    def set(self, output: int, on: bool) -> None:
        """Close or open one relay and confirm it by readback where the board can report."""
        command = self.protocol.set_relay(output, on)
        with self._link.lock:
            try:
                self._link.exchange(command)
                if on:
                    self._commanded.add(output)
                else:
                    self._commanded.discard(output)
                self._confirm()
            except KeyOutputError as exc:
                raise type(exc)(f"cannot turn output {output} {'on' if on else 'off'}: {exc}") from exc

    def release_all(self) -> None:
        """Open every relay; best effort: logs instead of raising, and gives up on a dead port."""
        if self._link.state is not LinkState.CONNECTED:
            return  # nothing to reach; the start-up on reconnect releases everything first
        if not self._link.lock.acquire(timeout=RELEASE_LOCK_TIMEOUT_S):
            log.error("%s: release_all could not get the port within %s s", self.name, RELEASE_LOCK_TIMEOUT_S)
            return
        try:
            self._commanded.clear()
            for command in self.protocol.release_all():
                self._link.exchange(command)
            self._confirm()  # a relay that stays closed (stuck) can only be reported, so say so loudly
        except ReadbackMismatch as exc:
            log.error("%s: release_all: %s", self.name, exc)
        except KeyOutputError as exc:
            log.warning("%s: release_all incomplete: %s", self.name, exc)
        finally:
            self._link.lock.release()

    def read_back(self) -> frozenset[int] | None:
        """The relays the board reports closed; None for a board that cannot report."""
        command = self.protocol.read_back()
        if command is None:
            return None
        with self._link.lock:
            return self._parse(self._link.exchange(command))

    def close(self) -> None:
        """Release every relay, then close the port."""
        self.release_all()
        self._link.close()

    def _start_up(self) -> None:
        """Run on every (re)open under the link lock: the protocol's start-up, then confirm all open."""
        self._commanded.clear()
        for command in self.protocol.start_up():
            self._link.exchange(command)
        self._confirm()

    def _confirm(self) -> None:
        command = self.protocol.read_back()
        if command is None:
            return
        reported = self._parse(self._link.exchange(command))
        expected = frozenset(self._commanded)
        if reported != expected:
            differ = sorted(reported ^ expected)
            raise ReadbackMismatch(
                f"{self.name}: readback disagrees on output(s) {', '.join(map(str, differ))}: "
                f"commanded closed {sorted(expected)}, board reports closed {sorted(reported)}"
            )

    def _parse(self, reply: bytes) -> frozenset[int]:
        try:
            return self.protocol.parse_read_back(reply)
        except ReplyError as exc:
            raise KeyOutputError(f"{self.name}: {exc}") from exc
