"""Every way a process holding a key can end releases the key: real child processes, real signals,
the simulator's virtual ADR2200 on a real pty.

The child (tests/support/relay_exit_child.py) closes relay K0 and is then sent SIGTERM or SIGINT
while holding it or mid-press, has an exception raised mid-press, or exits without closing. Each
time the board must see the relay open again before the child is gone, and the signal must still
end the child as it would have without the driver (not swallowed). SIGKILL is not tested: no process
can act on it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gamerig.hardware.sim.relay_board import VirtualRelayBoard

CHILD = Path(__file__).resolve().parents[1] / "support" / "relay_exit_child.py"
START_TIMEOUT_S = 10.0  # a cold child imports numpy and pyserial on a busy machine
EXIT_TIMEOUT_S = 5.0


class Contacts:
    """on_change listener that lets the test wait for the relay to close."""

    def __init__(self) -> None:
        self.edges: list[tuple[int, bool]] = []
        self.changed = threading.Condition()

    def __call__(self, output: int, closed: bool, t: float) -> None:
        with self.changed:
            self.edges.append((output, closed))
            self.changed.notify_all()

    def wait_closed(self, output: int, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: (output, True) in self.edges, timeout)


@pytest.fixture
def board(tmp_path: Path) -> Iterator[tuple[VirtualRelayBoard, Contacts]]:
    contacts = Contacts()
    with VirtualRelayBoard("adr2200", contacts, link_path=str(tmp_path / "relay")) as made:
        yield made, contacts


def run_child(board: VirtualRelayBoard, contacts: Contacts, scenario: str, send: int | None) -> subprocess.CompletedProcess:
    """Start the child, wait until it has closed K0, send `send` (if any), and wait for it to end."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), board.path, scenario], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert contacts.wait_closed(0, START_TIMEOUT_S), f"child never pressed: {child.poll()} {child.stderr}"
        if send is not None:
            time.sleep(0.05)  # well inside the hold
            child.send_signal(send)
        stdout, stderr = child.communicate(timeout=EXIT_TIMEOUT_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)


def after_press(board: VirtualRelayBoard) -> bytes:
    """The bytes the board received after the press command."""
    received = board.received()
    return received[received.rindex(b"SK0\r") + len(b"SK0\r") :]


@pytest.mark.parametrize("scenario", ["hold", "press"])
def test_sigterm_releases_then_terminates(board: tuple[VirtualRelayBoard, Contacts], scenario: str) -> None:
    relays, contacts = board
    done = run_child(relays, contacts, scenario, signal.SIGTERM)
    assert done.returncode == -signal.SIGTERM, done.stderr  # the default action still ran
    assert after_press(relays) == b"RPK\rMK0\rRPK\r"  # readback of the press, then the release
    assert contacts.edges == [(0, True), (0, False)]
    assert relays.closed_outputs() == set()


def test_sigint_mid_press_releases_and_still_interrupts(board: tuple[VirtualRelayBoard, Contacts]) -> None:
    relays, contacts = board
    done = run_child(relays, contacts, "press", signal.SIGINT)
    assert done.returncode == -signal.SIGINT  # Python's own exit for an uncaught KeyboardInterrupt
    assert "KeyboardInterrupt" in done.stderr
    assert after_press(relays).startswith(b"RPK\rMK0\rRPK\r")  # released by the handler before anything else
    assert relays.closed_outputs() == set() and contacts.edges == [(0, True), (0, False)]


def test_exception_mid_press_releases_in_the_press_itself(board: tuple[VirtualRelayBoard, Contacts]) -> None:
    relays, contacts = board
    done = run_child(relays, contacts, "raise", signal.SIGUSR1)
    assert done.returncode == 1 and "RuntimeError: boom mid-press" in done.stderr
    # the press's own try/finally sends RK0; interpreter exit then releases everything once more
    assert after_press(relays) == b"RPK\rRK0\rRPK\rMK0\rRPK\r"
    assert relays.closed_outputs() == set() and contacts.edges == [(0, True), (0, False)]


def test_sigterm_is_handed_on_to_the_previous_handler(board: tuple[VirtualRelayBoard, Contacts]) -> None:
    relays, contacts = board
    done = run_child(relays, contacts, "chained", signal.SIGTERM)
    assert done.returncode == 7 and "own SIGTERM handler ran" in done.stdout
    assert after_press(relays).startswith(b"RPK\rMK0\rRPK\r")
    assert relays.closed_outputs() == set()


def test_interpreter_exit_without_close_releases(board: tuple[VirtualRelayBoard, Contacts]) -> None:
    relays, contacts = board
    done = run_child(relays, contacts, "exit", None)
    assert done.returncode == 3, done.stderr
    assert after_press(relays) == b"RPK\rMK0\rRPK\r"
    assert contacts.edges == [(0, True), (0, False)]

