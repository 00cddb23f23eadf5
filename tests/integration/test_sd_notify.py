"""sd_notify against a real AF_UNIX datagram socket standing in for systemd's manager."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from gamerig.daemon.sd_notify import Notifier


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A bound datagram socket and its path, as systemd's notify socket would be."""
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(2.0)
        yield sock, path


def received(sock: socket.socket) -> dict[str, str]:
    lines = sock.recv(4096).decode().split("\n")
    return dict(line.split("=", 1) for line in lines)


def nothing_waiting(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        sock.recv(4096)
    except BlockingIOError:
        return True
    finally:
        sock.settimeout(2.0)
    return False


def test_ready_status_and_stopping_arrive_as_one_datagram_each(manager: tuple[socket.socket, str]) -> None:
    sock, path = manager
    notifier = Notifier({"NOTIFY_SOCKET": path})
    assert notifier.ready("camera ok\nrelay ok")
    assert received(sock) == {"READY": "1", "STATUS": "camera ok relay ok"}  # a newline cannot split STATUS
    assert notifier.status("4/4 services alive")
    assert received(sock) == {"STATUS": "4/4 services alive"}
    assert notifier.stopping()
    assert received(sock) == {"STOPPING": "1", "STATUS": "stopping"}


def test_abstract_socket_names_work() -> None:
    name = f"gamerig-test-notify-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(2.0)
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).status("hello")
        assert received(sock) == {"STATUS": "hello"}


def test_watchdog_pings_at_half_the_interval_and_only_while_healthy(manager: tuple[socket.socket, str]) -> None:
    sock, path = manager
    notifier = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "4000000"})
    assert notifier.watchdog_period_s == 2.0
    assert not notifier.watchdog_if_due(100.0, healthy=False)
    assert nothing_waiting(sock)
    assert notifier.watchdog_if_due(100.0, healthy=True)
    assert received(sock) == {"WATCHDOG": "1"}
    assert not notifier.watchdog_if_due(101.9, healthy=True)  # not yet half the interval
    assert nothing_waiting(sock)
    assert notifier.watchdog_if_due(102.0, healthy=True)
    assert received(sock) == {"WATCHDOG": "1"}


def test_watchdog_meant_for_another_pid_is_ignored(manager: tuple[socket.socket, str]) -> None:
    _, path = manager
    notifier = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "4000000", "WATCHDOG_PID": "1"})
    assert notifier.watchdog_period_s is None
    assert not notifier.watchdog_if_due(0.0, healthy=True)


@pytest.mark.parametrize("value", ["", "vsock:2:1234", "@"])
def test_no_usable_socket_means_every_call_does_nothing(value: str) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": value, "WATCHDOG_USEC": "1000000"})
    assert not notifier.enabled
    assert not notifier.ready("x") and not notifier.watchdog_if_due(0.0, healthy=True)


def test_a_vanished_manager_is_not_an_error(tmp_path: Path) -> None:
    assert not Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone")}).status("x")
