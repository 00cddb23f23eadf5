"""The supervisor as a real process with real child processes (stand-ins from tests/support that
speak the heartbeat): restarts with backoff, status, systemd notify, the SIGTERM order and no
process left behind. Timing is only checked from below (a backoff is at least its delay)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
import zmq

from gamerig.daemon.bus import ControlClient, DaemonNotRunning, Endpoints
from gamerig.daemon.ctl import main as gamerigctl
from gamerig.daemon.gamerigd import main as gamerigd
from gamerig.daemon.supervisor import Backoff, ServiceProcess

SUPPORT = Path(__file__).resolve().parents[1] / "support"
CONFIGS = Path(__file__).resolve().parents[2] / "configs"


class Rig:
    """A running tests/support/supervisor_run.py and a ControlClient to it."""

    def __init__(self, tmp_path: Path, extra: dict[str, list[str]], env: dict[str, str] | None = None) -> None:
        self.log = tmp_path / "events.log"
        self.runtime = tmp_path / "run"
        self.process = subprocess.Popen(
            [sys.executable, str(SUPPORT / "supervisor_run.py"), str(self.runtime), str(self.log), json.dumps(extra)],
            env={**os.environ, **(env or {})},
            stderr=subprocess.PIPE,
            text=True,
        )
        self.context = zmq.Context()
        self.client = ControlClient(self.context, Endpoints.default(self.runtime), timeout_s=2.0)

    def status(self) -> dict[str, Any]:
        return self.client.request("status")

    def wait_for(self, what: str, condition: Callable[[dict[str, Any]], bool], timeout_s: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                status = self.status()
                if condition(status):
                    return status
            except DaemonNotRunning:
                pass
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}")

    def events(self) -> list[tuple[float, str, str, int]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [(float(t), name, event, int(pid)) for t, name, event, pid in (line.split() for line in lines)]

    def close(self) -> None:
        self.client.close()
        self.context.term()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def rig_factory(tmp_path: Path) -> Iterator[Callable[..., Rig]]:
    rigs: list[Rig] = []

    def make(extra: dict[str, list[str]] | None = None, env: dict[str, str] | None = None) -> Rig:
        rigs.append(Rig(tmp_path, extra or {}, env))
        return rigs[-1]

    yield make
    for rig in rigs:
        rig.close()


def all_active(status: dict[str, Any]) -> bool:
    return all(service["state"] == "active" for service in status["services"].values())


def running(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pids: list[int], timeout_s: float = 5.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(running(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if running(pid)]


def test_a_crashing_service_is_restarted_with_doubling_backoff_and_status_counts_it(rig_factory) -> None:
    rig = rig_factory({"ai": ["--crashes", "2", "--crash-after", "0.2"], "watchdog": ["--hangs", "1", "--crash-after", "0.2"]})
    status = rig.wait_for(
        "ai restarted twice, the hung watchdog once, all active",
        lambda s: all_active(s) and s["services"]["ai"]["restarts"] == 2 and s["services"]["watchdog"]["restarts"] == 1,
    )
    ai = status["services"]["ai"]
    assert ai["last_exit"] == 1 and ai["stats"]["starts"] == 3
    assert status["services"]["relay"]["restarts"] == 0
    ai_events = [(t, event) for t, name, event, _ in rig.events() if name == "ai"]
    crashes = [t for t, event in ai_events if event == "crash"]
    starts = [t for t, event in ai_events if event == "started"]
    assert len(crashes) == 2 and len(starts) == 3
    assert starts[1] - crashes[0] >= 0.5  # first backoff
    assert starts[2] - crashes[1] >= 1.0  # doubled

    # the hung watchdog (running, heartbeats stopped, SIGTERM ignored): SIGTERM, then SIGKILL, then restarted
    watchdog = [(t, event) for t, name, event, _ in rig.events() if name == "watchdog"]
    assert [event for _, event in watchdog] == ["started", "hang", "sigterm", "started"]
    assert watchdog[2][0] - watchdog[1][0] >= 1.5  # hung_s (2.0) of silence, less the last heartbeat's period
    assert status["services"]["watchdog"]["last_exit"] == -signal.SIGKILL

    # kill -9 of a healthy service: seen down, restarted with a new pid, counted
    old_pid = status["services"]["camera"]["pid"]
    os.kill(old_pid, signal.SIGKILL)
    status = rig.wait_for(
        "camera back", lambda s: s["services"]["camera"]["restarts"] == 1 and s["services"]["camera"]["state"] == "active"
    )
    assert status["services"]["camera"]["pid"] not in (None, old_pid)
    assert status["services"]["camera"]["last_exit"] == -signal.SIGKILL
    assert status["daemon"]["healthy"] and status["daemon"]["mode"] == "play"
    assert status["relay"]["safe"] is False  # the relay stand-in's relay.state, aggregated


def test_sigterm_makes_the_relay_safe_first_then_stops_everything(rig_factory, tmp_path: Path) -> None:
    notify_path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as manager:
        manager.bind(notify_path)
        manager.settimeout(10.0)
        rig = rig_factory({"camera": ["--ignore-sigterm"]}, {"NOTIFY_SOCKET": notify_path, "WATCHDOG_USEC": "400000"})
        status = rig.wait_for("all active", all_active)
        assert rig.client.request("pause") == {"ok": True, "mode": "pause"}
        assert rig.status()["daemon"]["mode"] == "pause"
        pids = [service["pid"] for service in status["services"].values()]
        notes = [manager.recv(4096).decode() for _ in range(3)]
        rig.process.send_signal(signal.SIGTERM)
        assert rig.process.wait(timeout=10) == 0
        while "STOPPING=1" not in notes[-1]:
            notes.append(manager.recv(4096).decode())

    assert not wait_gone(pids), "a service outlived the supervisor"
    events = rig.events()
    safe = [t for t, name, event, _ in events if name == "relay" and event == "safe"]
    sigterms = {name: t for t, name, event, _ in events if event == "sigterm"}
    assert safe and set(sigterms) == {"relay", "watchdog", "camera", "ai"}
    assert safe[-1] < min(sigterms.values()), "a service was signalled before the relay reported safe"
    stderr = rig.process.stderr.read() if rig.process.stderr else ""
    assert "camera ignored SIGTERM" in stderr  # and was killed: it is gone above

    ready = next(i for i, note in enumerate(notes) if "READY=1" in note)
    assert "relay active" in notes[ready]
    assert not any("WATCHDOG=1" in note for note in notes[:ready]), "petted before every service was alive"
    assert any("WATCHDOG=1" in note for note in notes[ready:])


def test_a_service_config_error_stops_the_rig_instead_of_a_restart_loop(rig_factory) -> None:
    rig = rig_factory({"camera": ["--crashes", "1", "--crash-code", "2", "--crash-after", "1.0"]})
    status = rig.wait_for("all active", all_active)
    assert rig.process.wait(timeout=10) == 2
    others = [service["pid"] for name, service in status["services"].items() if name != "camera"]
    assert not wait_gone(others)
    events = rig.events()
    assert [event for _, name, event, _ in events if name == "camera"] == ["started", "crash"]  # not restarted
    safe = [t for t, name, event, _ in events if name == "relay" and event == "safe"]
    assert safe and safe[-1] < min(t for t, _, event, _ in events if event == "sigterm")
    stderr = rig.process.stderr.read() if rig.process.stderr else ""
    assert "camera exited with code 2, a config or usage error" in stderr


def test_no_service_outlives_a_killed_supervisor(rig_factory) -> None:
    rig = rig_factory()
    status = rig.wait_for("all active", all_active)
    pids = [service["pid"] for service in status["services"].values()]
    rig.process.kill()
    rig.process.wait()
    assert not wait_gone(pids), "PR_SET_PDEATHSIG did not take the services along"


def rig_config_file(tmp_path: Path, runtime: Path) -> Path:
    """A rig config whose bus lives in ``runtime`` (what gamerigctl reads to find the daemon)."""
    config = yaml.safe_load((CONFIGS / "gamerig.yaml").read_text())
    config["bus"]["runtime_dir"] = str(runtime)
    path = tmp_path / "rig.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_gamerigctl_status_and_modes_against_the_daemon(rig_factory, tmp_path: Path, capsys) -> None:
    """gamerigctl's and gamerigd's own main() in this process (start-up costs a second per subprocess)."""
    config = str(rig_config_file(tmp_path, tmp_path / "run"))
    assert gamerigctl(["status", "--config", config]) == 3
    assert "gamerigd is not running" in capsys.readouterr().err

    rig = rig_factory()
    rig.wait_for("all active, relay state heard", lambda s: all_active(s) and s["relay"] is not None)
    assert gamerigctl(["status", "--config", config]) == 0  # --json prints the reply rig.status() checks elsewhere
    table = capsys.readouterr()
    assert "mode play, all services alive" in table.out
    assert re.search(r"^relay +active +\d+ +[\d.]+ s +0  stand-in$", table.out, re.MULTILINE), table.out
    assert "relay: link=connected, safe=False" in table.out
    assert "game: nothing heard yet" in table.out
    assert re.search(r"^bus: proxy\.forwarded=\d+, .*gamerigd\.malformed=0", table.out, re.MULTILINE)

    assert gamerigctl(["pause", "--config", config]) == 0
    assert capsys.readouterr().out.strip() == "gamerigd: mode pause"
    assert rig.status()["daemon"]["mode"] == "pause"

    assert gamerigd(["--config", config]) == 2  # a second daemon must not take over the running one's bus
    last_line = capsys.readouterr().err.splitlines()[-1]
    assert last_line.startswith("gamerigd: error:") and "in use" in last_line
    assert rig.status()["daemon"]["healthy"]

    snapshot = rig.client.request("snapshot")  # through the bus to the camera and back
    assert snapshot["ok"] is True and snapshot["width"] == 0 and len(snapshot["request_id"]) == 12
    calibrated = rig.client.request("calibrate", out="/x/cal.yaml", png="/x/cal.png")
    assert calibrated["ok"] is True and calibrated["message"] == "out=/x/cal.yaml png=/x/cal.png"

    unknown = rig.client.request("dance")
    assert unknown["ok"] is False and "unknown command 'dance'" in unknown["error"]


def test_backoff_doubles_to_its_cap_and_resets_after_a_long_run() -> None:
    """Real short-lived processes, the supervisor's clock given explicitly."""
    service = ServiceProcess("relay", ["true"], Backoff(initial_s=0.5, max_s=2.0, reset_after_s=30.0))

    def run_once(start: float, exit_seen: float) -> float:
        assert service.start_if_due(start) is not None
        assert service.process is not None
        service.process.wait(timeout=10)
        assert service.reap(exit_seen) == 0
        assert service.next_start_at is not None
        return service.next_start_at - exit_seen

    delays = [run_once(t, t + 0.1) for t in (0.0, 10.0, 20.0, 30.0)]
    assert delays == [0.5, 1.0, 2.0, 2.0]  # doubling, capped
    assert service.start_if_due(31.0) is None  # not due yet
    assert run_once(40.0, 71.0) == 0.5  # it ran 31 s: back to the first delay
    assert service.restarts == 5
