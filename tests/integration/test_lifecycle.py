"""The service skeleton (services/lifecycle.py) in real child processes on a real bus: heartbeats,
states, SIGTERM/SIGINT, a crash's traceback and exit code, a bad command line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from gamerig.daemon.bus import Endpoints, Message, Subscriber
from gamerig.daemon.bus_security import BusSecurity, generate_keys
from gamerig.services.lifecycle import HEARTBEAT_LIFESPAN_S, Service
from support.bus_proxy import running_proxy

WAIT_S = 10.0  # a child's start-up on a busy machine
SIM_CONFIG = Path(__file__).parents[2] / "configs" / "gamerig-sim.yaml"

# A minimal service: "run" until stopped, or "crash" after a few loops.
CHILD = """
import sys, time
from gamerig.services.lifecycle import service_main

def run(service, config):
    mode = config.read_text().strip() if config.suffix == ".txt" else "run"
    service.stats["loops"] = 0
    service.set_state("ready")
    service.set_state("active", "playing")
    while not service.stopping:
        service.stats["loops"] += 1
        if mode == "crash" and service.stats["loops"] > 20:
            raise RuntimeError("boom")
        service.heartbeat_if_due()
        time.sleep(0.01)

sys.exit(service_main("demo", run, sys.argv[1:]))
"""


@pytest.fixture
def endpoints(tmp_path: Path) -> Iterator[Endpoints]:
    endpoints = Endpoints.default(tmp_path)
    with running_proxy(endpoints):
        yield endpoints


@pytest.fixture
def heartbeats(endpoints: Endpoints) -> Iterator[Subscriber]:
    context = zmq.Context()
    yield Subscriber(context, endpoints, ["hb.demo"])
    context.destroy(linger=0)


def start_child(endpoints: Endpoints, tmp_path: Path, mode: str, config: Path | None = None) -> subprocess.Popen[str]:
    """The CHILD service; ``mode`` is "run" or "crash"; a rig ``config`` (YAML) means "run"."""
    if config is None:
        config = tmp_path / "config.txt"
        config.write_text(mode)
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, "--endpoints", endpoints.to_json(), "--config", str(config)],
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_state(sub: Subscriber, state: str) -> Message:
    deadline = time.monotonic() + WAIT_S
    while (remaining := deadline - time.monotonic()) > 0:
        message = sub.receive(remaining)
        if message is not None and message.body["state"] == state:
            return message
    raise AssertionError(f"no heartbeat with state {state!r}")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_service_heartbeats_and_stops_cleanly_on_a_signal(
    endpoints: Endpoints, heartbeats: Subscriber, tmp_path: Path, signum: int
) -> None:
    child = start_child(endpoints, tmp_path, "run")
    try:
        active = wait_for_state(heartbeats, "active")
        assert active.topic == "hb.demo" and active.source == "demo"
        assert active.body["pid"] == child.pid and active.body["message"] == "playing"
        assert active.lifespan_s == HEARTBEAT_LIFESPAN_S
        later = [wait_for_state(heartbeats, "active") for _ in range(3)]  # periodic, not only on change
        uptimes = [m.body["uptime_s"] for m in [active, *later]]
        assert uptimes == sorted(uptimes) and uptimes[-1] > uptimes[0]
        assert later[-1].body["stats"]["loops"] > 0
        child.send_signal(signum)
        assert wait_for_state(heartbeats, "stopping").body["pid"] == child.pid
        assert child.wait(WAIT_S) == 0
    finally:
        child.kill()
        child.wait()
    assert "Traceback" not in child.stderr.read()


def test_a_crash_is_logged_published_as_fault_and_exits_1(
    endpoints: Endpoints, heartbeats: Subscriber, tmp_path: Path
) -> None:
    child = start_child(endpoints, tmp_path, "crash")
    try:
        fault = wait_for_state(heartbeats, "fault")
        assert fault.body["message"] == "RuntimeError: boom"
        assert child.wait(WAIT_S) == 1
    finally:
        child.kill()
        child.wait()
    stderr = child.stderr.read()
    assert "demo crashed" in stderr and "Traceback" in stderr and "RuntimeError: boom" in stderr


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (["--endpoints", "{", "--config", "x"], "endpoints: not valid JSON"),
        (["--endpoints", '{"publish": "ipc:///a"}', "--config", "x"], "endpoints.subscribe"),
        (["--config", "x"], "--endpoints"),
    ],
)
def test_a_bad_command_line_exits_2_with_the_reason(arguments: list[str], error: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, *arguments], capture_output=True, text=True, timeout=WAIT_S
    )
    assert result.returncode == 2
    assert error in result.stderr and "Traceback" not in result.stderr


def test_states_and_heartbeat_timing_in_process(endpoints: Endpoints, heartbeats: Subscriber) -> None:
    before = signal.getsignal(signal.SIGTERM)
    with Service("demo", endpoints) as service:
        assert signal.getsignal(signal.SIGTERM) != before
        with pytest.raises(ValueError, match="unknown state 'running'"):
            service.set_state("running")
        service.set_state("ready")
        now = time.monotonic()
        assert not service.heartbeat_if_due(now)  # set_state just sent one
        assert service.heartbeat_if_due(now + 0.26)
        assert not service.heartbeat_if_due(now + 0.30)
        assert not service.stopping
        os.kill(os.getpid(), signal.SIGTERM)  # the handler only notes it
        assert service.stopping
    assert signal.getsignal(signal.SIGTERM) == before
    with pytest.raises(ValueError, match="without dots"):
        Service("relay.main", endpoints)


def curve_rig_config(tmp_path: Path, endpoints: Endpoints, server_key: str) -> Path:
    """The simulator's rig config with a CURVE tcp bus (keys relative to the config, as an operator writes)."""
    text = SIM_CONFIG.read_text().replace("SIM_STREAM_PORT", "8999")
    bus = (
        f"bus:\n  publish: {endpoints.publish}\n  subscribe: {endpoints.subscribe}\n  control: {endpoints.control}\n"
        f"  curve: {{server_key: {server_key}, client_keys_dir: curve/authorized_clients}}\n"
    )
    head, tail = text.split("bus:\n", 1)
    config = tmp_path / "rig.yaml"
    config.write_text(head + bus + tail.split("\n\n", 1)[1])
    return config


def tcp_endpoints() -> Endpoints:
    ports = []
    for _ in range(3):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
    return Endpoints(*(f"tcp://127.0.0.1:{port}" for port in ports))


def test_a_service_joins_a_curve_bus_with_the_keys_of_the_rig_config(tmp_path: Path) -> None:
    generate_keys(tmp_path / "curve")
    security = BusSecurity.load(tmp_path / "curve" / "server.key_secret")
    endpoints = tcp_endpoints()
    config = curve_rig_config(tmp_path, endpoints, "curve/server.key_secret")
    with running_proxy(endpoints, security):
        context = zmq.Context()
        child = start_child(endpoints, tmp_path, "run", config)
        try:
            heartbeats = Subscriber(context, endpoints, ["hb.demo"], security)
            assert wait_for_state(heartbeats, "active").body["pid"] == child.pid
            child.terminate()
            assert child.wait(WAIT_S) == 0
        finally:
            child.kill()
            child.wait()
            context.destroy(linger=0)


def test_missing_curve_keys_in_the_rig_config_exit_2(tmp_path: Path) -> None:
    endpoints = tcp_endpoints()
    config = curve_rig_config(tmp_path, endpoints, "curve/missing.key_secret")
    child = start_child(endpoints, tmp_path, "run", config)
    try:
        assert child.wait(WAIT_S) == 2
    finally:
        child.kill()
        child.wait()
    assert "missing.key_secret: key file not found" in child.stderr.read()


def test_the_original_crash_survives_a_heartbeat_that_cannot_be_sent(endpoints: Endpoints) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with Service("demo", endpoints) as service:
            service.stats["ratio"] = float("nan")  # not JSON: the fault heartbeat fails
            raise RuntimeError("boom")
