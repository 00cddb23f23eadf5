"""A virtual relay board on a pseudo-terminal, which a driver opens with pyserial like a USB adapter.

``VirtualRelayBoard`` owns an ``os.openpty()`` pair and a thread that reads the master, feeds the
device side of the chosen protocol (board_protocols.py), writes the board's replies, and calls
``on_change(output, closed, t)`` for every relay contact change, ``t`` being ``time.monotonic()``
when the command that caused it completed.  The driver opens ``.path``: the ``/dev/pts/N`` node
or, with ``link_path``, a symlink to it that survives an unplug/replug, like a
``/dev/serial/by-id`` name.

pty facts this relies on (shared/research/hardware.md section 4, verified there): the master is
made raw at once, so nothing the board says is echoed or cooked before pyserial opens the slave;
the board keeps its own slave fd open, so reads on the master never fail with EIO while no driver
has the port open; closing the master is an unplug (the driver's read and write raise
SerialException and the node disappears).  The board speaks only when spoken to.

Faults: ``stick``/``unstick`` a relay (it ignores commands; readback shows the stuck contact),
``unplug`` (the master closes, the link goes away as udev's would, and every relay opens since
a board without power releases them), ``replug`` (a new pty, the link re-pointed).  ``baud``
paces both directions like a real UART (10 bits a byte: 1.04 ms at 9600): a command completes
when its last byte would have arrived, a reply is written when its last byte would have been
sent.  Off by default; a pty transfers instantly.

Tested (tests/integration/test_virtual_relay_board.py) with real ptys and real pyserial for every
protocol, unplug/replug, stuck relays and pacing.  Measured ad hoc on the shared 2-core machine
(pyserial writes ``SK0``/``RK0`` 400 times; time from the write to on_change's t): pacing off,
p50 0.12 ms and p99 0.2 ms when quiet, 1-4 ms while another process kept a core busy; at 9600
baud p50 4.4 ms (the wire alone is 4.17 ms) and p99 5.8-6.6 ms, the tail being scheduling.  Not modelled: baud or parity mismatches,
modem lines (a pty has none), the ADR2200's digital inputs, counters and interrupt messages.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
import tty
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from types import TracebackType

from gamerig.hardware.realtime import try_realtime

from .board_protocols import DEFAULT_RELAYS, DeviceProtocol, RelayBank, make_protocol

log = logging.getLogger(__name__)

OnChange = Callable[[int, bool, float], None]
_POLL_SECONDS = 0.1  # a safety net only: unplug, replug and close wake the reader at once
#: SCHED_FIFO priority of the board's thread, when the system allows it: a real board has its own
#: processor, and one sharing the cores with the rig took a command 8 ms after it was written at
#: p90 (up to 30 ms) in level-10 bench runs, which the run's ground truth counted as key latency.
#: Above the simulator's frame loop (5), below the relay's presses (10).
BOARD_PRIORITY = 6
_BITS_PER_BYTE = 10  # 8N1: start bit, 8 data bits, stop bit


@dataclass
class _Plug:
    """One plugged-in pty: the master the board talks through and its own hold on the slave."""

    master: int
    slave: int
    slave_path: str
    protocol: DeviceProtocol  # the firmware starts afresh on every power-up
    dropping: bool = False  # replies are being dropped because the host does not read

    def close(self) -> None:
        os.close(self.master)
        os.close(self.slave)


class VirtualRelayBoard:
    """A relay board (``adr2200``, ``numato``, ``kmtronic`` or ``lcus``) on a pseudo-terminal."""

    def __init__(
        self,
        protocol: str = "adr2200",
        on_change: OnChange | None = None,
        link_path: str | None = None,
        address: int | None = None,
        *,
        relays: int = DEFAULT_RELAYS,
        baud: int | None = None,
    ) -> None:
        """Plug the board in and start answering.

        ``address`` is the ADR2200's RS-485 address (None: 0, the factory setting); ``relays``
        the relay count (Numato 1-32, LCUS 1-8; the ADR2200 and KMtronic have 8); ``baud`` turns
        on UART pacing.  A ``link_path`` that exists and is not a symlink is refused.
        """
        if baud is not None and baud <= 0:
            raise ValueError(f"baud must be positive, got {baud}")
        if link_path is not None and os.path.lexists(link_path) and not os.path.islink(link_path):
            raise ValueError(f"link_path {link_path} exists and is not a symlink; refusing to replace it")
        self.protocol = protocol
        self.link_path = link_path
        self._address = address
        self._on_change = on_change
        self._bank = RelayBank(relays)
        make_protocol(protocol, self._bank, address)  # bad arguments fail here, not in the thread
        self._byte_seconds = _BITS_PER_BYTE / baud if baud else 0.0
        self._rx_free = self._tx_free = 0.0  # when each direction of the simulated wire is idle
        self._lock = threading.RLock()
        self._received = bytearray()
        self._plug: _Plug | None = None
        self._slave_path = ""
        self._stop = threading.Event()
        # Waiting in select holds a reference to the master, so closing it from another thread
        # would leave the pty alive until select returned: unplug wakes the reader through this
        # pipe and waits for it to leave select first (the _selecting lock).  The reader holds
        # that lock only while it watches a master: were it also held in the wait that follows
        # unplug's wake-up, a reader at real-time priority would re-take it at every turn and
        # unplug would wait for ever (a contact held 9.5 s through an unplug fault in CI).
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        self._selecting = threading.Lock()
        self.replug()
        self._thread = threading.Thread(target=self._run, name=f"relay board {protocol}", daemon=True)
        self._thread.start()

    # --- what tests and the simulator read ---------------------------------------------------

    @property
    def path(self) -> str:
        """What a driver opens: ``link_path`` if given, else the current ``/dev/pts/N``."""
        return self.link_path or self._slave_path

    @property
    def plugged(self) -> bool:
        """Whether the board is plugged in (its pty exists)."""
        return self._plug is not None

    def closed_outputs(self) -> frozenset[int]:
        """The outputs whose contacts are closed now."""
        with self._lock:
            return frozenset(n for n in range(self._bank.count) if self._bank.closed(n))

    def received(self) -> bytes:
        """Every byte the board has received since it was made, across replugs."""
        with self._lock:
            return bytes(self._received)

    # --- faults ------------------------------------------------------------------------------

    def stick(self, output: int, closed: bool) -> None:
        """Relay ``output`` sticks with its contact ``closed`` and ignores commands until unstuck."""
        with self._lock:
            self._bank.stick(output, closed)
            self._report()

    def unstick(self, output: int) -> None:
        """Relay ``output`` follows commands again (its contact goes to the last commanded state)."""
        with self._lock:
            self._bank.unstick(output)
            self._report()

    def unplug(self) -> None:
        """Pull the cable: the pty goes away, the link too, and every relay opens.  Idempotent."""
        with self._lock:
            plug, self._plug = self._plug, None
            if plug is None:
                return
            self._wake()
            if threading.current_thread() is not self._thread:
                with self._selecting:  # the reader is out of select on this master now
                    pass
            plug.close()
            if self.link_path is not None and os.path.islink(self.link_path):
                os.unlink(self.link_path)
            self._bank.power_off()
            self._report()

    def replug(self) -> None:
        """Plug back in: a new pty (a new /dev/pts/N), ``link_path`` pointing at it.  Idempotent."""
        with self._lock:
            if self._stop.is_set():
                raise RuntimeError(f"relay board {self._slave_path} is closed; make a new one")
            if self._plug is not None:
                return
            master, slave = os.openpty()
            tty.setraw(master)  # before any driver opens the slave: no echo, no CR/LF mangling
            os.set_blocking(master, False)  # a host that never reads must not hang the board
            self._slave_path = os.ttyname(slave)
            if self.link_path is not None:
                temporary = f"{self.link_path}.{os.getpid()}.new"
                os.symlink(self._slave_path, temporary)
                os.replace(temporary, self.link_path)
            protocol = make_protocol(self.protocol, self._bank, self._address)
            self._plug = _Plug(master, slave, self._slave_path, protocol)
            self._wake()

    def close(self) -> None:
        """Stop the board thread and unplug (every relay opens).  Idempotent."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._wake()
        if self._thread is not threading.current_thread():
            self._thread.join()
        self.unplug()
        os.close(self._wake_read)
        os.close(self._wake_write)

    def __enter__(self) -> VirtualRelayBoard:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # --- the board's firmware loop -----------------------------------------------------------

    def _wake(self) -> None:
        os.write(self._wake_write, b"!")

    def _run(self) -> None:
        try_realtime(BOARD_PRIORITY, "the virtual relay board")
        while not self._stop.is_set():
            plug = self._plug
            watched = [self._wake_read] if plug is None else [self._wake_read, plug.master]
            try:
                # with no master there is nothing of unplug's to guard: it may go on meanwhile
                with self._selecting if plug is not None else nullcontext():
                    ready, _, _ = select.select(watched, [], [], _POLL_SECONDS)
            except OSError:  # unplugged between reading _plug and select: the master is closed
                continue
            if self._wake_read in ready:
                os.read(self._wake_read, 4096)
            if plug is not None and plug.master in ready:
                data = self._read(plug)
                if data is None:
                    self._stop.wait(_POLL_SECONDS)  # do not spin on a failing master
                else:
                    self._serve(plug, data, time.monotonic())

    def _read(self, plug: _Plug) -> bytes | None:
        """What the driver wrote (maybe nothing), or None if the master failed."""
        with self._lock:
            if self._plug is not plug:
                return b""
            try:
                data = os.read(plug.master, 4096)
            except BlockingIOError:
                return b""
            except OSError as error:  # EIO cannot happen while the board holds its slave fd
                log.warning("relay board %s: read failed: %s", plug.slave_path, error)
                return None
            self._received += data
            return data

    def _serve(self, plug: _Plug, data: bytes, arrived: float) -> None:
        for byte in data:
            self._rx_free = max(self._rx_free, arrived) + self._byte_seconds
            frame = plug.protocol.take(byte)
            if frame is None:
                continue
            self._wait_until(self._rx_free)
            with self._lock:
                if self._plug is not plug:  # unplugged while the command was on the wire
                    return
                reply = plug.protocol.execute(frame)
                self._report()
            if reply:
                self._send(plug, reply)

    def _send(self, plug: _Plug, reply: bytes) -> None:
        self._tx_free = max(self._tx_free, time.monotonic()) + len(reply) * self._byte_seconds
        self._wait_until(self._tx_free)
        with self._lock:
            if self._plug is not plug:
                return
            try:
                os.write(plug.master, reply)
                plug.dropping = False
            except BlockingIOError:  # the host has not read for kilobytes: like a UART, drop it
                if not plug.dropping:
                    log.warning("relay board %s: dropping replies, nobody reads the port", plug.slave_path)
                plug.dropping = True

    def _wait_until(self, deadline: float) -> None:
        if self._byte_seconds:
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    def _report(self) -> None:
        """Pass the bank's contact changes to on_change, stamped now (call with the lock held)."""
        changes = self._bank.take_changes()
        if self._on_change is None or not changes:
            return
        t = time.monotonic()
        for output, closed in changes:
            try:
                self._on_change(output, closed, t)
            except Exception:  # a broken listener must not kill the board
                log.exception("relay board on_change(%d, %s) failed", output, closed)
