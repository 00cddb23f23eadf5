"""The whole virtual target machine: the target (game, screen, camera, stream) plus its relay board.

    with Machine(MachineOptions(link_path="/tmp/relay")) as machine:
        machine.target.url        # the camera: an MJPEG stream, opened like an IP camera
        machine.board.path        # the relay board: a pty (or the symlink to it) pyserial opens
        machine.control.url       # faults in, ground truth out over HTTP (see control.py)
        machine.key_config()      # the key-output config that drives this board

The board's relay contacts are wired across the target's key switches by :data:`WIRING` (the
contract's default: output 0 left, 1 right, 2 rotate, 3 drop, 4 new_game, 5 pause; 6 and 7 are
wired to nothing), so a relay closing is a contact closing in the target's :class:`KeyboardModel`.
Every contact change is also kept in :meth:`Machine.contacts` (wired or not) so a test can see
exactly what the board did, e.g. that nothing closed while the port was gone.

Faults: the target's own (:data:`.faults.TARGET_FAULTS`) and the board's (:data:`BOARD_FAULTS`:
a stuck relay, the serial cable pulled and plugged back), both from the command line (a schedule
started with the machine) and from the control server.  A fault with a duration undoes itself on
a timer; :meth:`Machine.stop` cancels what is still due and leaves nothing behind (the board
closes and removes its symlink, the stream and control ports close, the truth file is closed).

:meth:`Machine.performance` is the target's (frame loop and stream threads) plus the relay board
thread's CPU, read from its per-thread CPU clock.  A process whose job is running a machine calls
:func:`prefer_the_board` (see there why).

Tested by tests/integration/test_sim_cli.py (through ``gamerigctl sim``, a real subprocess) and
the recovery test there (in-process, faults through the real control server).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .board_protocols import DEFAULT_RELAYS
from .control import ControlServer
from .faults import TARGET_FAULTS, Fault, FaultKind, FaultSchedule, _nothing, target_actions
from .relay_board import VirtualRelayBoard
from .target import SimPerformance, Target, TargetOptions

#: Relay output -> the target's key its contact is wired across (the contract's default wiring).
WIRING: Mapping[int, str] = {0: "left", 1: "right", 2: "rotate", 3: "drop", 4: "new_game", 5: "pause"}
#: How many contact changes :meth:`Machine.contacts` keeps (the newest).
KEPT_CONTACTS = 100_000
#: The interpreter's thread switch interval in a process that runs a machine (Python's default is 5 ms).
SWITCH_INTERVAL_S = 0.0005


def prefer_the_board() -> None:
    """Call once in a process whose job is running a :class:`Machine` (``gamerigctl sim``).

    A real relay board has its own processor; the virtual one shares the interpreter lock with the
    frame loop, and with Python's 5 ms switch interval a command arriving while the loop holds the
    lock waits up to 5 ms before the board sees it, which shows as key timing the real board would
    not add.  A shorter interval bounds that wait (for a small cost in switching)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def _stick(text: str | None) -> tuple[int, bool, float | None]:
    """``OUTPUT[:closed|open][:SECONDS]`` -> (output, closed, seconds or None for until unstick)."""
    if text is None:
        raise ValueError("needs a relay (stick=OUTPUT[:closed|open][:SECONDS])")
    parts = text.split(":")
    if len(parts) > 3:
        raise ValueError(f"has too many parts in {text!r}")
    output = _output(parts[0])
    closed, seconds = True, None
    for part in parts[1:]:
        if part in ("closed", "open"):
            closed = part == "closed"
        elif _is_number(part):
            seconds = _optional_seconds(part)
        else:
            raise ValueError(f"needs closed, open or a number of seconds after the relay, got {part!r}")
    return output, closed, seconds


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _output(text: str | None) -> int:
    if text is None or not text.isdigit():
        raise ValueError(f"needs a relay output number, got {text}")
    value = int(text)
    if not 0 <= value < DEFAULT_RELAYS:
        raise ValueError(f"needs a relay output 0..{DEFAULT_RELAYS - 1}, got {text}")
    return value


def _optional_seconds(text: str | None) -> float | None:
    if text is None:
        return None
    value = float(text)
    if not value > 0:
        raise ValueError(f"needs a positive number of seconds, got {text}")
    return value


BOARD_FAULTS: Mapping[str, FaultKind] = {
    "stick": FaultKind(
        "stick=OUTPUT[:closed|open][:SECONDS]: a relay sticks (closed by default), for SECONDS or until unstick",
        _stick,
    ),
    "unstick": FaultKind("unstick=OUTPUT: a stuck relay follows commands again", _output),
    "unplug": FaultKind("unplug[=SECONDS]: the serial cable is pulled, for SECONDS or until replug", _optional_seconds),
    "replug": FaultKind("replug: the serial cable is plugged back in (a new pty, the same link path)", _nothing),
}
#: Every fault the machine takes, on its command line and through its control server.
FAULTS: Mapping[str, FaultKind] = {**TARGET_FAULTS, **BOARD_FAULTS}


@dataclass(frozen=True)
class Contact:
    """One relay contact change as the board made it (``t``: time.monotonic())."""

    output: int
    closed: bool
    t: float


@dataclass(frozen=True)
class MachineOptions:
    """How the virtual machine is built."""

    target: TargetOptions = field(default_factory=TargetOptions)
    #: The relay board's protocol: adr2200, numato, kmtronic or lcus.
    board: str = "adr2200"
    #: A stable symlink to the board's pty (None: drivers open the /dev/pts/N path itself).
    link_path: str | None = None
    #: Pace the board like a UART at this baud (None: a pty's instant transfer).
    baud: int | None = None
    control_port: int = 0
    #: Faults applied at their times after :meth:`Machine.start` (parse them with FAULTS).
    faults: tuple[Fault, ...] = ()


class Machine:
    """The virtual target machine with its relay board and control server; see the module docstring."""

    def __init__(self, options: MachineOptions = MachineOptions()) -> None:
        self.options = options
        self._contacts: deque[Contact] = deque(maxlen=KEPT_CONTACTS)
        self._contacts_lock = threading.Lock()
        self._timers: list[threading.Timer] = []
        self._timers_lock = threading.Lock()
        self._stopped = False
        self.target = Target(options.target)  # its stream listens from here on: undo it if the rest fails
        try:
            self.board = VirtualRelayBoard(
                options.board, on_change=self._contact, link_path=options.link_path, baud=options.baud
            )
            try:
                actions = self.actions()
                self._schedule = FaultSchedule(list(options.faults), actions, self.target.pieces_spawned)
                self.control = ControlServer(self.target.truth, actions, FAULTS, options.control_port, self.target.pieces_spawned)
            except BaseException:
                self.board.close()
                raise
        except BaseException:
            self.target.stop()
            raise

    # ---- lifetime ------------------------------------------------------------------------

    def start(self) -> Machine:
        """Start the game's frame loop and the command-line fault schedule."""
        self.target.start()
        self._schedule.start()
        return self

    def stop(self) -> None:
        """Cancel pending faults, stop control, unplug the board (its link goes), stop the target.
        Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._schedule.cancel()
        with self._timers_lock:
            for timer in self._timers:
                timer.cancel()
        self.control.stop()
        self.board.close()
        self.target.stop()

    def __enter__(self) -> Machine:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ---- what drivers, tests and benchmarks use ----------------------------------------------

    def key_config(self) -> dict[str, Any]:
        """The key-output config (as YAML would give it) that drives this machine's board."""
        return {
            "board": self.options.board,
            "port": self.board.path,
            "channels": DEFAULT_RELAYS,  # the virtual board's relay count (a driver's default can be fewer)
            "outputs": {key: output for output, key in WIRING.items()},
        }

    def contacts(self) -> list[Contact]:
        """Every relay contact change so far (the newest KEPT_CONTACTS), in order."""
        with self._contacts_lock:
            return list(self._contacts)

    def performance(self) -> SimPerformance:
        """The target's :meth:`Target.performance` with the relay board thread's CPU time added."""
        target = self.target.performance()
        return SimPerformance(target.wall_s, target.frames, target.streamed, target.cpu_s + self._board_cpu_s())

    def _board_cpu_s(self) -> float:
        # The board keeps its thread private; its CPU clock is read through the pthread id.
        thread = self.board._thread  # noqa: SLF001
        if thread.ident is None or not thread.is_alive():
            return 0.0
        try:
            return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
        except OSError:  # the thread ended between the check and the read
            return 0.0

    # ---- faults --------------------------------------------------------------------------

    def actions(self) -> dict[str, Callable[[Any], None]]:
        """How each fault of :data:`FAULTS` is applied to this machine (values as parsed)."""
        return {
            **target_actions(self.target),
            "stick": self._stick,
            "unstick": self.board.unstick,
            "unplug": self._unplug,
            "replug": lambda _: self.board.replug(),
        }

    def _stick(self, value: tuple[int, bool, float | None]) -> None:
        output, closed, seconds = value
        self.board.stick(output, closed)
        if seconds is not None:
            self._later(seconds, lambda: self.board.unstick(output))

    def _unplug(self, seconds: float | None) -> None:
        self.board.unplug()
        if seconds is not None:
            self._later(seconds, self.board.replug)

    def _later(self, seconds: float, undo: Callable[[], None]) -> None:
        """Undo a fault after ``seconds`` (cancelled by :meth:`stop`)."""
        with self._timers_lock:
            if self._stopped:
                return
            self._timers = [t for t in self._timers if t.is_alive()]
            timer = threading.Timer(seconds, self._undo, args=(undo,))
            timer.daemon = True
            self._timers.append(timer)
            timer.start()

    def _undo(self, undo: Callable[[], None]) -> None:
        if not self._stopped:  # a timer that fired as stop() began must not replug a closed board
            undo()

    def _contact(self, output: int, closed: bool, t: float) -> None:
        """The board's on_change: log it, and close or open the wired key's switch."""
        with self._contacts_lock:
            self._contacts.append(Contact(output, closed, t))
        key = WIRING.get(output)
        if key is not None:
            self.target.keyboard.contact(key, closed, t)
