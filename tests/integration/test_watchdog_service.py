"""The watchdog service as a real process on a real bus: a BusProxy in this process, the watchdog
started as ``python -m gamerig.services.watchdog``, and this test playing camera, ai and relay
with real ZeroMQ sockets (heartbeats and obs.frame at 60 Hz).

What it shows: the start-up wait ends in wd.resume; a frozen obs.frame stream (capture times that
stop advancing) halts play and play resumes with a resync once frames flow again; a placement
whose observed board differs from predict.board triggers wd.resync with the observed board;
three in a row halt; malformed messages (bad framing, bad bodies) are counted and the process
carries on; SIGTERM ends it with exit 0.  The halt's delay after the freeze is printed, not
asserted tightly (a shared machine): the unit tests check the 3-frame-period rule on a clock.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zmq

from gamerig.daemon.bus import Endpoints, Message, Publisher, Subscriber
from support.bus_proxy import running_proxy

ROOT = Path(__file__).resolve().parents[2]
PERIOD = 1 / 60
EMPTY = ["." * 10] * 20
A = EMPTY[:19] + ["####......"]
B = EMPTY[:19] + ["....####.."]


@pytest.fixture
def bus(tmp_path: Path) -> Iterator[tuple[zmq.Context, Endpoints]]:
    endpoints = Endpoints.default(tmp_path)
    with running_proxy(endpoints):
        context = zmq.Context()
        yield context, endpoints
        context.destroy(linger=0)


def rig_config(tmp_path: Path) -> Path:
    """The simulator's rig config with its port filled in (the watchdog reads only its section)."""
    path = tmp_path / "gamerig.yaml"
    path.write_text((ROOT / "configs" / "gamerig-sim.yaml").read_text().replace("SIM_STREAM_PORT", "8081"))
    return path


class Players:
    """camera, ai and relay as this test plays them, one frame period at a time."""

    def __init__(self, context: zmq.Context, endpoints: Endpoints) -> None:
        self.pub = Publisher(context, endpoints, "test")
        self.inbox = Subscriber(context, endpoints, ["wd."])
        self.pub.wait_connected(2.0)
        self.seq = 0
        self.frozen = False
        self.board = EMPTY
        self.heard: list[Message] = []

    def frame(self) -> None:
        if not self.frozen:
            self.seq += 1
        if self.seq % 6 == 0 or self.frozen:
            for name in ("camera", "ai", "relay"):
                self.pub.publish(f"hb.{name}", {"state": "active", "pid": 1, "uptime_s": 1.0, "message": "", "stats": {}}, 1.0)
        self.pub.publish("obs.frame", {
            "frame_seq": self.seq, "t_capture": self.seq * PERIOD, "status": "ok", "reason": "", "board": self.board,
            "falling": None, "next_piece": None, "level": None, "calibration": "ok",
        }, 0.25)

    def run_until(self, wanted: Callable[[Message], bool], timeout_s: float) -> Message:
        """Play frames until a wd.* message that ``wanted`` accepts arrives."""
        deadline = time.monotonic() + timeout_s
        next_frame = time.monotonic()
        while time.monotonic() < deadline:
            if time.monotonic() >= next_frame:
                self.frame()
                next_frame += PERIOD
            message = self.inbox.receive(max(0.0, min(PERIOD, next_frame - time.monotonic())))
            if message is not None:
                self.heard.append(message)
                if wanted(message):
                    return message
        raise AssertionError(f"no such wd.* message within {timeout_s} s; heard {[(m.topic, m.body) for m in self.heard[-5:]]}")

    def place(self, plan_id: int, predicted: list[str], observed: list[str]) -> None:
        """A plan for an I, its prediction, and the camera seeing it land on ``observed``."""
        self.pub.publish("plan.keys", {"plan_id": plan_id, "piece": "I", "orientation": 1, "x": 5, "keys": ["drop"],
                                       "t_seen": 0.0, "deadline_t": 0.0, "level": 5, "predicted_board": predicted})
        self.pub.publish("predict.board", {"plan_id": plan_id, "board": predicted, "pieces": plan_id})
        self.board = observed
        self.pub.publish("obs.event", {"kind": "landed", "frame_seq": self.seq + 1, "t_capture": 0.0, "piece": "I",
                                       "rows": [], "board": observed})


def topic_is(topic: str) -> Callable[[Message], bool]:
    return lambda message: message.topic == topic


def test_watchdog_halts_resyncs_resumes_and_survives_malformed_messages(bus: tuple[zmq.Context, Endpoints], tmp_path: Path) -> None:
    context, endpoints = bus
    players = Players(context, endpoints)
    raw = context.socket(zmq.PUB)  # sends what no Publisher would
    raw.setsockopt(zmq.LINGER, 0)
    raw.connect(endpoints.publish)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen(
        [sys.executable, "-m", "gamerig.services.watchdog", "--endpoints", endpoints.to_json(), "--config", str(rig_config(tmp_path))],
        env=env,
    )
    try:
        players.run_until(topic_is("wd.resume"), 15.0)  # the start-up wait ends once all is healthy

        # a frozen camera: frames keep coming, their capture time stands still
        players.frozen = True
        frozen_at = time.monotonic()
        halt = players.run_until(topic_is("wd.halt"), 2.0)
        print(f"halted {1000 * (halt.t_mono - frozen_at):.0f} ms after the freeze")
        assert "no new camera frame" in halt.body["reason"]
        players.frozen = False
        players.run_until(topic_is("wd.resume"), 3.0)
        assert any(m.topic == "wd.resync" for m in players.heard[-3:])  # the ai adopts the board it missed

        # a placement that went wrong: resync with what the camera sees
        players.place(1, predicted=A, observed=B)
        resync = players.run_until(topic_is("wd.resync"), 2.0)
        assert resync.body["board"] == B and "plan 1" in resync.body["reason"]

        # three in a row halt play
        players.place(2, predicted=A, observed=B)
        players.run_until(topic_is("wd.resync"), 2.0)
        players.place(3, predicted=A, observed=B)
        halt = players.run_until(topic_is("wd.halt"), 2.0)
        assert "3 consecutive reality-check mismatches" in halt.body["reason"]
        players.run_until(topic_is("wd.resume"), 3.0)

        # malformed: a message that is no bus message at all, and one whose body does not fit its topic
        raw.send_multipart([b"obs.frame", b"{not json"])
        players.pub.publish("predict.board", {"plan_id": 9, "board": "not rows"})
        state = players.run_until(lambda m: m.topic == "wd.state" and m.body["counters"]["malformed"] >= 2, 3.0)
        counters = state.body["counters"]
        assert counters["mismatches"] == 3 and counters["halts"] == 2 and counters["stale_frames"] == 1
        assert state.body["halted"] is False and state.body["max_halt_s"] > 0
        assert child.poll() is None

        child.send_signal(signal.SIGTERM)
        assert child.wait(5.0) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        raw.close()
        players.pub.close()
        players.inbox.close()
