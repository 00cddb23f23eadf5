"""The four relay-board drivers over real ptys and real pyserial, against the simulator's virtual board.

Covered: the exact bytes each driver sends for open, a press and close (also written to the record
file), the RS-485 address prefix, readback catching a stuck relay either way, a port lost while
idle and during a command with recovery at the same symlink path (start-up release first, nothing
pressed while gone), exclusive open, a missing port and a board that never answers. Timing is only
bounded loosely here (a shared, noisy machine); `gamerigctl bench keys` measures it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import serial

from gamerig.hardware.keys import (
    KeyOutput,
    KeyOutputError,
    LinkState,
    PortLost,
    ReadbackMismatch,
    RelayBoard,
    open_key_output,
)
from gamerig.hardware.keys.relay_protocols import Adr2200
from gamerig.hardware.keys.serial_link import LinkSettings
from gamerig.hardware.sim.relay_board import VirtualRelayBoard

WIRING = {"left": 0, "right": 1, "rotate": 2, "drop": 3}
RECOVERY_S = 2.0  # the target for a port that comes back


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def received_exactly(board: VirtualRelayBoard, expected: bytes) -> bytes:
    """What the board received, once it equals `expected` or after a second: a write-only board's
    driver does not wait for the board to read its bytes."""
    wait_until(lambda: board.received() == expected, 1.0)
    return board.received()


class Contacts:
    """on_change listener: every (output, closed, t) the virtual board reports."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, bool, float]] = []
        self._lock = threading.Lock()

    def __call__(self, output: int, closed: bool, t: float) -> None:
        with self._lock:
            self.seen.append((output, closed, t))

    def edges(self) -> list[tuple[int, bool]]:
        with self._lock:
            return [(output, closed) for output, closed, _ in self.seen]


class StateLog:
    """on_link_state listener."""

    def __init__(self) -> None:
        self.states: list[LinkState] = []

    def __call__(self, state: LinkState, detail: str) -> None:
        self.states.append(state)


@pytest.fixture
def contacts() -> Contacts:
    return Contacts()


@pytest.fixture
def make_board(tmp_path: Path, contacts: Contacts) -> Iterator[Callable[..., VirtualRelayBoard]]:
    boards: list[VirtualRelayBoard] = []

    def make(protocol: str = "adr2200", **options: Any) -> VirtualRelayBoard:
        board = VirtualRelayBoard(protocol, contacts, link_path=str(tmp_path / f"{protocol}-link"), **options)
        boards.append(board)
        return board

    yield make
    for board in boards:
        board.close()


def open_keys(board: VirtualRelayBoard, record: Path | None = None, **config: Any) -> KeyOutput:
    mapping: dict[str, Any] = {"board": board.protocol, "port": board.path, "outputs": WIRING} | config
    if record is not None:
        mapping["record"] = str(record)
    return open_key_output(mapping, "test-keys.yaml")


ADR = {
    "open": b"\rID\rMK0\rRPK\r" + b"MK0\rRPK\r",  # the board's start-up, then KeyOutput's release on open
    "press": b"SK0\rRPK\rRK0\rRPK\r",
    "close": b"MK0\rRPK\r",
}
NUMATO_OFF = b"".join(b"relay off %d\r" % n for n in range(8))
NUMATO = {
    "open": b"\r" + (NUMATO_OFF + b"relay readall\r") * 2,
    "press": b"relay on 0\rrelay readall\rrelay off 0\rrelay readall\r",
    "close": NUMATO_OFF + b"relay readall\r",
}
KMTRONIC_OFF = b"".join(bytes((0xFF, n, 0x00)) for n in range(1, 9))
KMTRONIC = {
    "open": (KMTRONIC_OFF + b"\xff\x09\x00") * 2,
    "press": b"\xff\x01\x01\xff\x09\x00\xff\x01\x00\xff\x09\x00",
    "close": KMTRONIC_OFF + b"\xff\x09\x00",
}
LCUS_OFF = bytes.fromhex("A0 01 00 A1 A0 02 00 A2 A0 03 00 A3 A0 04 00 A4")
LCUS = {"open": LCUS_OFF + LCUS_OFF, "press": bytes.fromhex("A0 01 01 A2 A0 01 00 A1"), "close": LCUS_OFF}


@pytest.mark.parametrize(
    "protocol, options, config, golden",
    [
        ("adr2200", {}, {}, ADR),
        ("numato", {}, {"channels": 8}, NUMATO),
        ("kmtronic", {}, {"channels": 8}, KMTRONIC),
        ("lcus", {"relays": 4}, {"channels": 4}, LCUS),
    ],
)
def test_exact_bytes_of_open_press_close_and_the_record_file(
    make_board: Callable[..., VirtualRelayBoard],
    contacts: Contacts,
    tmp_path: Path,
    protocol: str,
    options: dict[str, Any],
    config: dict[str, Any],
    golden: dict[str, bytes],
) -> None:
    board = make_board(protocol, **options)
    record = tmp_path / "sent.bin"
    keys = open_keys(board, record, **config)
    assert received_exactly(board, golden["open"]) == golden["open"]
    press = keys.press("left")
    assert received_exactly(board, golden["open"] + golden["press"]) == golden["open"] + golden["press"]
    keys.close()
    everything = golden["open"] + golden["press"] + golden["close"]
    assert received_exactly(board, everything) == everything
    assert record.read_bytes() == board.received()
    assert contacts.edges() == [(0, True), (0, False)]
    (_, _, closed_t), (_, _, opened_t) = contacts.seen
    assert 0.030 <= opened_t - closed_t <= 0.5  # loose (the board thread may run late): timing is the benchmark's
    assert 60 <= press.measured_hold_ms <= 500


def test_adr2200_rs485_address_prefixes_every_command(make_board: Callable[..., VirtualRelayBoard]) -> None:
    board = make_board("adr2200", address=3)
    with open_keys(board, address=3) as keys:
        keys.press("drop")
        assert board.received() == b"\r3ID\r3MK0\r3RPK\r3MK0\r3RPK\r3SK3\r3RPK\r3RK3\r3RPK\r"


def test_open_recovers_from_a_host_that_died_mid_command(make_board: Callable[..., VirtualRelayBoard]) -> None:
    board = make_board("numato")
    with serial.Serial(board.path, timeout=1.0) as previous_host:
        previous_host.write(b"relay on 0\rrelay of")  # relay 0 left on, and half a command in the board
        assert wait_until(lambda: board.closed_outputs() == {0}, 1.0)
    with open_keys(board, channels=8):
        assert board.closed_outputs() == set()


def test_a_relay_stuck_closed_is_caught_by_readback_and_named(make_board: Callable[..., VirtualRelayBoard]) -> None:
    board = make_board()
    with open_keys(board) as keys:
        board.stick(1, True)
        with pytest.raises(ReadbackMismatch, match=r"output\(s\) 1: commanded closed \[0\], board reports closed \[0, 1\]"):
            keys.press("left")
        assert board.closed_outputs() == {1}  # the driver released what it could: only the stuck relay is closed
        assert keys.state()["left"] is False


def test_a_relay_that_will_not_close_fails_the_press_and_is_released(
    make_board: Callable[..., VirtualRelayBoard],
) -> None:
    board = make_board("numato")
    with open_keys(board, channels=8) as keys:
        board.stick(0, False)
        with pytest.raises(ReadbackMismatch, match=r"cannot turn output 0 on: .*output\(s\) 0"):
            keys.press("left")
        board.unstick(0)
        assert board.closed_outputs() == set()
        assert board.received().endswith(b"relay off 0\rrelay readall\r")


def test_guard_opens_a_relay_the_caller_never_releases(
    make_board: Callable[..., VirtualRelayBoard], contacts: Contacts
) -> None:
    board = make_board("kmtronic")
    with open_keys(board, channels=8, max_hold_ms=150) as keys:
        keys.down("rotate")  # and then the caller hangs
        assert wait_until(lambda: contacts.edges() == [(2, True), (2, False)], 2.0), contacts.edges()
        (_, _, closed_t), (_, _, opened_t) = contacts.seen
        assert 0.100 <= opened_t - closed_t < 1.0  # guard at 150 ms; the board may stamp the close late
        assert keys.state()["rotate"] is False and keys.timing_stats().guard_releases == 1


def test_port_lost_while_idle_recovers_at_the_same_path(
    make_board: Callable[..., VirtualRelayBoard], contacts: Contacts, tmp_path: Path
) -> None:
    board = make_board()
    states = StateLog()
    record = tmp_path / "sent.bin"
    keys = open_key_output(
        {"board": "adr2200", "port": board.path, "outputs": WIRING, "record": str(record)},
        "test-keys.yaml",
        on_link_state=states,
    )
    try:
        board.unplug()
        assert wait_until(lambda: states.states[-1:] == [LinkState.LOST], 1.0), states.states
        with pytest.raises(PortLost, match="nothing sent"):
            keys.press("left")
        before = len(board.received())
        board.replug()
        returned = time.monotonic()
        assert wait_until(lambda: states.states[-1:] == [LinkState.CONNECTED], RECOVERY_S), states.states
        assert time.monotonic() - returned < RECOVERY_S
        assert board.received()[before:] == b"\rID\rMK0\rRPK\r"  # everything released before any press
        keys.press("left")
        assert contacts.edges() == [(0, True), (0, False)]  # nothing was pressed while the port was gone
        assert record.read_bytes() == board.received()
    finally:
        keys.close()
    assert states.states == [LinkState.CONNECTED, LinkState.LOST, LinkState.CONNECTED, LinkState.CLOSED]


def test_port_lost_during_a_command_is_reported_and_reopened(make_board: Callable[..., VirtualRelayBoard]) -> None:
    board = make_board()
    # The watcher checks the idle port only every 60 s here, so it is the press that finds the loss.
    relays = RelayBoard(Adr2200(), LinkSettings(board.path, watch_interval=60.0))
    try:
        board.unplug()
        with pytest.raises(PortLost, match="cannot turn output 2 on: .*port lost"):
            relays.set(2, True)
        assert relays.link_state is LinkState.LOST
        board.replug()
        assert wait_until(lambda: relays.link_state is LinkState.CONNECTED, RECOVERY_S)
        relays.set(2, True)
        assert relays.read_back() == {2} == board.closed_outputs()
    finally:
        relays.close()
    assert board.closed_outputs() == set()


def test_exclusive_open(make_board: Callable[..., VirtualRelayBoard]) -> None:
    board = make_board()
    with open_keys(board):
        with pytest.raises(KeyOutputError, match="cannot open .*adr2200-link"):
            open_keys(board)


def test_missing_port_and_silent_board_fail_at_open(make_board: Callable[..., VirtualRelayBoard], tmp_path: Path) -> None:
    with pytest.raises(KeyOutputError, match="cannot open .*no-such-port"):
        open_key_output({"board": "kmtronic", "port": str(tmp_path / "no-such-port"), "outputs": WIRING}, "k.yaml")
    silent = make_board("lcus")  # never answers, so an ADR2200 driver gets no RPK reply
    with pytest.raises(KeyOutputError, match=r"no complete reply to b'RPK\\r'"):
        open_key_output({"board": "adr2200", "port": silent.path, "outputs": WIRING}, "k.yaml")
