"""The relay service as a real process: the ADR2200 driver over a real pty to the simulator's
VirtualRelayBoard, plans and halts over a real bus proxy, real SIGTERM and SIGKILL, a real unplug.

What is measured here and printed (pytest -s): how long after a SIGKILL a restarted relay service
releases the relay the dead one left closed.  The 1 s bound of the issue also depends on how fast
the supervisor restarts the service, which is not part of this test.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zmq

from gamerig.daemon.bus import Endpoints, Message, Publisher, Subscriber
from gamerig.hardware.sim.relay_board import VirtualRelayBoard
from support.bus_proxy import running_proxy

HOLD_MS = 250  # long enough that a release well before it ends is the halt's doing
GAP_MS = 30
OUTPUTS = {"left": 0, "right": 1, "rotate": 2, "drop": 3}
START_TIMEOUT_S = 10.0


class Contacts:
    """The board's contact changes, with the time each happened."""

    def __init__(self) -> None:
        self.edges: list[tuple[int, bool, float]] = []
        self.changed = threading.Condition()

    def __call__(self, output: int, closed: bool, t: float) -> None:
        with self.changed:
            self.edges.append((output, closed, t))
            self.changed.notify_all()

    def wait(self, predicate: Callable[[list[tuple[int, bool, float]]], bool], timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: predicate(self.edges), timeout)

    def closures(self) -> list[int]:
        with self.changed:
            return [output for output, closed, _ in self.edges if closed]


class Rig:
    """A proxy, a test publisher/subscriber, a virtual ADR2200 and its config file."""

    def __init__(self, root: Path, context: zmq.Context, endpoints: Endpoints) -> None:
        self.context = context
        self.endpoints = endpoints
        self.contacts = Contacts()
        self.board = VirtualRelayBoard("adr2200", self.contacts, link_path=str(root / f"relay{id(self)}"))
        self.config = root / f"rig{id(self)}.yaml"
        keys = {"board": "adr2200", "port": self.board.path, "outputs": OUTPUTS, "hold_ms": HOLD_MS, "gap_ms": GAP_MS, "max_hold_ms": 1000}
        self.config.write_text(json.dumps({"keys": keys}))  # JSON is YAML
        self.publisher = Publisher(context, endpoints, "ai")
        self.inbox = Subscriber(context, endpoints, ["relay.", "hb.relay"])
        self.process: subprocess.Popen | None = None
        assert self.publisher.wait_connected(2.0)

    def start_relay(self) -> subprocess.Popen:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gamerig.services.relay", "--endpoints", self.endpoints.to_json(), "--config", str(self.config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        return self.process

    def wait_ready(self) -> None:
        """Wait for the relay process's own heartbeat saying active (the proxy replays the last
        relay.state of an earlier process), then let its subscriptions settle."""
        assert self.process is not None
        pid = self.process.pid
        self.expect("hb.relay", lambda b: b["pid"] == pid and b["state"] == "active", START_TIMEOUT_S)
        time.sleep(0.2)

    def expect(self, topic: str, accept: Callable[[dict], bool], timeout: float) -> Message:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self.inbox.receive(0.05)
            if message is not None and message.topic == topic and accept(message.body):
                return message
        stderr = ""
        if self.process is not None and self.process.poll() is not None:
            stderr = self.process.stderr.read() if self.process.stderr else ""
        raise AssertionError(f"no {topic} within {timeout} s {stderr}")

    def plan(self, plan_id: str, keys: list[str], deadline_in_s: float, **timing: object) -> None:
        """Publish a plan.keys; ``timing``: its optional start_t / key_t."""
        deadline_t = time.monotonic() + deadline_in_s
        body = {"plan_id": plan_id, "piece": "T", "orientation": 1, "x": 6, "keys": keys, "t_seen": time.monotonic(),
                "deadline_t": deadline_t, "level": 5, "predicted_board": [], **timing}
        self.publisher.publish("plan.keys", body, lifespan_s=deadline_in_s if deadline_in_s > 0 else None)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.publisher.close()
        self.inbox.close()
        self.board.close()


@pytest.fixture(scope="module")
def bus() -> Iterator[tuple[zmq.Context, Endpoints, Path]]:
    root = Path(tempfile.mkdtemp(prefix="grrelay"))  # short: ipc paths are limited to 107 bytes
    endpoints = Endpoints.default(root)
    with running_proxy(endpoints):
        context = zmq.Context()
        yield context, endpoints, root
        context.destroy(linger=0)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def rig(bus: tuple[zmq.Context, Endpoints, Path]) -> Iterator[Rig]:
    context, endpoints, root = bus
    made = Rig(root, context, endpoints)
    made.start_relay()
    made.wait_ready()
    yield made
    made.close()


def test_a_plan_is_pressed_in_order_and_reported(rig: Rig) -> None:
    rig.plan("p1", ["left", "rotate", "drop"], 5.0)
    done = rig.expect("relay.done", lambda b: b["plan_id"] == "p1", 5.0)
    assert done.body["ok"] is True and done.body["pressed"] == 3
    assert rig.contacts.closures() == [0, 2, 3]
    assert rig.board.closed_outputs() == set()
    opened = [t for _, closed, t in rig.contacts.edges if not closed]
    closed = [t for _, closed, t in rig.contacts.edges if closed]
    for down, up in zip(closed, opened):
        assert up - down >= HOLD_MS / 1000 - 0.005  # held for the configured hold at the board


def test_an_expired_plan_is_not_pressed_and_a_late_one_stops_at_its_deadline(rig: Rig) -> None:
    rig.plan("late", ["left"], -0.01)  # deadline already passed (no lifespan, so the bus delivers it)
    done = rig.expect("relay.done", lambda b: b["plan_id"] == "late", 5.0)
    assert done.body["ok"] is False and done.body["pressed"] == 0 and "deadline" in done.body["reason"]
    rig.plan("short", ["left", "right", "left", "right", "left", "right"], 0.4)  # time for about two presses
    done = rig.expect("relay.done", lambda b: b["plan_id"] == "short", 5.0)
    assert done.body["ok"] is False and 1 <= done.body["pressed"] < 6, done.body
    assert "deadline passed after" in done.body["reason"]
    assert len(rig.contacts.closures()) == done.body["pressed"]  # not one press past the deadline
    state = rig.expect("relay.state", lambda b: b["deadline_misses"] >= 2, 3.0)
    assert state.body["deadline_misses"] == 2


def test_no_key_of_a_plan_goes_down_before_its_start_t(rig: Rig) -> None:
    start_t = time.monotonic() + 0.4
    rig.plan("later", ["left", "right"], 5.0, start_t=start_t)
    key = rig.expect("relay.key", lambda b: b["plan_id"] == "later", 5.0)
    assert key.body["down_t"] >= start_t
    done = rig.expect("relay.done", lambda b: b["plan_id"] == "later", 5.0)
    assert done.body["ok"] is True and done.body["pressed"] == 2
    closed = [t for _, is_closed, t in rig.contacts.edges if is_closed]
    assert len(closed) == 2 and closed[0] >= start_t  # the board's own contact time


def test_a_key_with_its_own_time_waits_for_it_and_the_keys_after_it_keep_the_cadence(rig: Rig) -> None:
    now = time.monotonic()
    rig.plan("turn later", ["left", "rotate", "right"], 5.0, key_t=[None, now + 0.5, now])
    done = rig.expect("relay.done", lambda b: b["plan_id"] == "turn later", 5.0)
    assert done.body["ok"] is True and done.body["pressed"] == 3
    closed = [t for _, is_closed, t in rig.contacts.edges if is_closed]
    assert len(closed) == 3 and closed[0] < now + 0.3 <= now + 0.5 <= closed[1] < closed[2] < closed[1] + 0.3


def test_across_plans_only_the_same_key_again_waits_the_gap(rig: Rig) -> None:
    """The keyboard must see a key's release before its next press; another key needs no gap."""
    rig.plan("first", ["left"], 5.0)
    rig.expect("relay.key", lambda b: b["plan_id"] == "first", 5.0)
    rig.plan("same key", ["left"], 5.0)  # queued behind the press being held
    rig.expect("relay.key", lambda b: b["plan_id"] == "same key", 5.0)
    rig.plan("other key", ["right"], 5.0)
    rig.expect("relay.done", lambda b: b["plan_id"] == "other key", 5.0)
    edges = [(output, closed, t) for output, closed, t in rig.contacts.edges]
    (_, _, first_up), (_, _, same_down), (_, _, same_up), (_, _, other_down) = edges[1:5]
    assert [(o, c) for o, c, _ in edges[:6]] == [(0, True), (0, False), (0, True), (0, False), (1, True), (1, False)]
    assert same_down - first_up >= GAP_MS / 1000 - 0.002
    assert other_down - same_up < GAP_MS / 1000 - 0.01


def test_a_plan_of_no_keys_stops_the_running_plan(rig: Rig) -> None:
    """How the ai stops a plan whose keys would go astray (a lost drop left the piece they were
    meant for unspawned): the empty plan supersedes it and presses nothing itself."""
    rig.plan("astray", ["left", "right"] * 5, 5.0)
    rig.expect("relay.key", lambda b: b["plan_id"] == "astray", 5.0)
    rig.plan("stop", [], 5.0)
    stopped = rig.expect("relay.done", lambda b: b["plan_id"] == "astray", 5.0)
    done = rig.expect("relay.done", lambda b: b["plan_id"] == "stop", 5.0)
    assert stopped.body["ok"] is False and "superseded" in stopped.body["reason"] and stopped.body["pressed"] < 3, stopped.body
    assert done.body["ok"] is True and done.body["pressed"] == 0
    time.sleep(0.3)  # the astray plan's later keys were due by now
    assert len(rig.contacts.closures()) == stopped.body["pressed"]
    assert rig.board.closed_outputs() == set()


def test_key_times_that_are_not_one_per_key_reject_the_plan(rig: Rig) -> None:
    rig.plan("short", ["left", "right"], 5.0, key_t=[time.monotonic()])
    done = rig.expect("relay.done", lambda b: b["plan_id"] == "short", 5.0)
    assert done.body["ok"] is False and "key_t must be a list of 2 times" in done.body["reason"]
    assert rig.contacts.closures() == []


def test_a_plan_starting_after_its_deadline_is_rejected(rig: Rig) -> None:
    rig.plan("backwards", ["left"], 0.5, start_t=time.monotonic() + 1.0)
    done = rig.expect("relay.done", lambda b: b["plan_id"] == "backwards", 5.0)
    assert done.body["ok"] is False and "start_t" in done.body["reason"]
    assert rig.contacts.closures() == []


def test_wd_halt_releases_at_once_and_nothing_runs_until_resume(rig: Rig) -> None:
    rig.plan("p2", ["drop", "drop", "drop"], 5.0)
    assert rig.contacts.wait(lambda edges: any(closed for _, closed, _ in edges), 5.0)
    closed_at = rig.contacts.edges[0][2]
    rig.publisher.publish("wd.halt", {"reason": "test"})
    assert rig.contacts.wait(lambda edges: any(not closed for _, closed, _ in edges), 2.0)
    released_at = next(t for _, closed, t in rig.contacts.edges if not closed)
    assert released_at - closed_at < HOLD_MS / 1000  # cut short: the hold alone would have ended later
    done = rig.expect("relay.done", lambda b: b["plan_id"] == "p2", 3.0)
    assert done.body["ok"] is False and done.body["pressed"] == 1 and "halted" in done.body["reason"]  # the cut press counts
    assert rig.expect("relay.state", lambda b: b["safe"] is True, 3.0).body["outputs"]["drop"] is False
    rig.plan("p3", ["left"], 5.0)
    refused = rig.expect("relay.done", lambda b: b["plan_id"] == "p3", 3.0)
    assert refused.body["ok"] is False and "stopped by wd" in refused.body["reason"]
    assert rig.contacts.closures() == [3]
    rig.publisher.publish("wd.resume", {})
    rig.expect("relay.state", lambda b: b["safe"] is False, 3.0)
    rig.plan("p4", ["left"], 5.0)
    assert rig.expect("relay.done", lambda b: b["plan_id"] == "p4", 3.0).body["ok"] is True
    assert rig.contacts.closures() == [3, 0]


def test_ctl_stop_is_safe_and_ctl_play_lifts_it(rig: Rig) -> None:
    rig.publisher.publish("ctl.stop", {})
    assert rig.expect("relay.state", lambda b: b["safe"] is True, 3.0)
    rig.plan("p5", ["left"], 5.0)
    assert rig.expect("relay.done", lambda b: b["plan_id"] == "p5", 3.0).body["ok"] is False
    rig.publisher.publish("ctl.play", {})
    rig.expect("relay.state", lambda b: b["safe"] is False, 3.0)
    rig.plan("p6", ["right"], 5.0)
    assert rig.expect("relay.done", lambda b: b["plan_id"] == "p6", 3.0).body["ok"] is True
    assert rig.contacts.closures() == [1]


def test_sigterm_mid_press_releases_and_exits_cleanly(rig: Rig) -> None:
    rig.plan("p7", ["rotate"], 5.0)
    assert rig.contacts.wait(lambda edges: (2, True) in [(o, c) for o, c, _ in edges], 5.0)
    assert rig.process is not None
    rig.process.send_signal(signal.SIGTERM)
    assert rig.process.wait(5) == 0
    assert rig.board.closed_outputs() == set()
    assert [c for _, c, _ in rig.contacts.edges] == [True, False]


def test_sigkill_leaves_the_relay_closed_until_the_restarted_service_releases_it(rig: Rig) -> None:
    rig.plan("p8", ["drop"], 5.0)
    assert rig.contacts.wait(lambda edges: bool(edges), 5.0)
    assert rig.process is not None
    rig.process.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    rig.process.wait(5)
    time.sleep(HOLD_MS / 1000 + 0.1)
    # nothing of the dead process runs (its max-hold guard thread died with it): the relay stays closed
    assert rig.board.closed_outputs() == {3}
    restarted_at = time.monotonic()
    rig.start_relay()  # what the supervisor does
    assert rig.contacts.wait(lambda edges: len(edges) >= 2, START_TIMEOUT_S)
    released_at = rig.contacts.edges[1][2]
    assert rig.board.closed_outputs() == set()
    print(f"\nSIGKILL: restarted relay released after {released_at - restarted_at:.3f} s from its start "
          f"({released_at - killed_at:.3f} s after the kill, of which {restarted_at - killed_at:.3f} s waiting here)")


def test_a_lost_port_is_reported_and_nothing_is_pressed_until_it_is_back(rig: Rig) -> None:
    rig.board.unplug()
    assert rig.expect("relay.state", lambda b: b["link"] == "lost", 3.0).body["outputs"]["left"] is False
    rig.plan("p9", ["left"], 5.0)
    done = rig.expect("relay.done", lambda b: b["plan_id"] == "p9", 3.0)
    assert done.body["ok"] is False and done.body["pressed"] == 0 and "lost" in done.body["reason"]
    rig.board.replug()
    rig.expect("relay.state", lambda b: b["link"] == "connected", 5.0)
    rig.plan("p10", ["right"], 5.0)
    assert rig.expect("relay.done", lambda b: b["plan_id"] == "p10", 3.0).body["ok"] is True
    assert rig.contacts.closures() == [1]
