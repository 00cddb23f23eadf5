"""The camera service as a real process on the simulator's real MJPEG stream and a real bus.

The simulator (hardware/sim/target.py ``Target``) runs in this process: Standard Tetris at level
1 dealing only O pieces, filmed by its seeded webcam and served over HTTP on 127.0.0.1.  The
camera service (``python -m gamerig.services.camera``) opens that stream like an IP camera;
a BusProxy runs here and a collector thread records every obs.* and cam.* message.

What it shows, in one run: without a calibration file the service runs and says why it sees
nothing; a bad ``ctl.calibrate`` is refused with the reason; ``ctl.calibrate`` with the corners the simulator knows (its camera's homography applied
to the rendered well) calibrates on live frames, writes the YAML, the reference frame and the
PNG, and recognition starts at once; while this test drops five O pieces side by side (a double
line clear), every obs.frame board with status ok equals a board the simulator's ground
truth had within ``BOARD_WINDOW_S`` before its capture, the spawn, landed and rows_cleared events
match the play, and the falling piece is an O; ``ctl.snapshot`` answers with a 320 px JPEG; a
frozen camera gives frames whose t_capture stands still; a disconnected camera gives status
none and ``connected: false``, and frames come back after it; SIGTERM ends the process with 0.
"""

from __future__ import annotations

import base64
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml
import zmq

from gamerig.daemon.bus import Endpoints, Message, Publisher, Subscriber
from gamerig.games.tetris.board import Board
from gamerig.games.tetris.render import render
from gamerig.games.tetris.vision_bench import CORNER_TOLERANCE_PX
from gamerig.hardware.sim.game_session import GameOptions
from gamerig.hardware.sim.synthetic_camera import FRAME_SIZE, homography, map_points
from gamerig.hardware.sim.target import Target, TargetOptions
from support.bus_proxy import running_proxy

ROOT = Path(__file__).resolve().parents[2]
#: Left column of each O in a row of five, which clears two rows.
COLUMNS = (1, 3, 5, 7, 9)
#: An observed board must be one the game had within this long before the frame's capture: the
#: camera knows a piece landed only when the next one shows, which Standard Tetris spawns at a
#: gravity step after the lock (up to two steps of 0.5 s at level 1).
BOARD_WINDOW_S = 1.2


@pytest.fixture
def bus(tmp_path: Path) -> Iterator[tuple[zmq.Context, Endpoints]]:
    endpoints = Endpoints.default(tmp_path)
    with running_proxy(endpoints):
        context = zmq.Context()
        yield context, endpoints
        context.destroy(linger=0)


class Collector(threading.Thread):
    """Records every obs.* and cam.* message (the SUB socket's queue must not overflow)."""

    def __init__(self, context: zmq.Context, endpoints: Endpoints) -> None:
        super().__init__(daemon=True)
        self.inbox = Subscriber(context, endpoints, ["obs.", "cam."])
        self.messages: list[Message] = []
        self.lock = threading.Lock()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            message = self.inbox.receive(0.05)
            if message is not None:
                with self.lock:
                    self.messages.append(message)
        self.inbox.close()

    def since(self, start: int) -> list[Message]:
        with self.lock:
            return self.messages[start:]

    def wait_for(self, wanted: Callable[[Message], bool], timeout_s: float, start: int = 0) -> Message:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for message in self.since(start):
                if wanted(message):
                    return message
            time.sleep(0.02)
        recent = [(m.topic, m.body.get("status"), m.body.get("reason")) for m in self.since(start)[-3:]]
        raise AssertionError(f"no such message within {timeout_s} s; last: {recent}")


def true_corners(target: Target) -> np.ndarray:
    """The well's corners in the camera's frame, as the simulator films them."""
    screen = render(Board(), target.skin, size=FRAME_SIZE)
    height, width = screen.image.shape[:2]
    return map_points(homography(target.camera.settings, (width, height)), screen.well_corners)


def press(target: Target, key: str) -> None:
    target.keyboard.contact(key, True, time.monotonic())
    time.sleep(0.035)
    target.keyboard.contact(key, False, time.monotonic())
    time.sleep(0.035)


def drop_o_pieces(target: Target, count: int) -> None:
    """Move each O to the next of COLUMNS and drop it, waiting for the next piece each time."""
    for index in range(count):
        deadline = time.monotonic() + 2.0
        while (truth := target.truth.latest()) is None or truth.piece is None:
            assert time.monotonic() < deadline, "no piece in play"
            time.sleep(0.01)
        left = truth.piece.x - 1  # an O's left column is its origin's x - 1
        shift = COLUMNS[index % len(COLUMNS)] - left
        for _ in range(abs(shift)):
            press(target, "right" if shift > 0 else "left")
        press(target, "drop")
        time.sleep(0.15)  # the next piece spawns, and the camera sees the landing


def test_camera_service_on_the_simulators_stream(bus: tuple[zmq.Context, Endpoints], tmp_path: Path) -> None:
    context, endpoints = bus
    began = time.monotonic()

    def phase(name: str) -> None:
        print(f"{time.monotonic() - began:5.1f} s  {name}")

    options = TargetOptions(game=GameOptions(level=1, sequence="fixed", pieces="O"), skin="nes", camera_drop_probability=0.0)
    with Target(options) as target:
        config = yaml.safe_load((ROOT / "configs" / "gamerig-sim.yaml").read_text())
        config["camera"] = {"source": target.url, "calibration": str(tmp_path / "calibration.yaml"), "k": 2}
        config_path = tmp_path / "gamerig.yaml"
        config_path.write_text(yaml.safe_dump(config))
        collector = Collector(context, endpoints)
        collector.start()
        requests = Publisher(context, endpoints, "gamerigd")
        child = subprocess.Popen(
            [sys.executable, "-m", "gamerig.services.camera", "--endpoints", endpoints.to_json(), "--config", str(config_path)],
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            assert requests.wait_connected(2.0)
            # no calibration yet: frames flow, the service says why it sees nothing
            uncalibrated = collector.wait_for(lambda m: m.topic == "obs.frame", 15.0)
            assert uncalibrated.body["status"] == "none" and "not calibrated" in uncalibrated.body["reason"]
            assert uncalibrated.body["calibration"] == "lost"

            phase("first frame")
            # a bad request is answered, not crashed on
            requests.publish("ctl.calibrate", {"request_id": "bad", "out": 5})
            refused = collector.wait_for(lambda m: m.topic == "cam.calibrated", 5.0)
            assert refused.body == {"request_id": "bad", "ok": False, "corners": None, "preview": False,
                                    "message": "bad request: out must be a file path or null, got 5"}

            # calibrate on live frames from the corners the simulator knows
            corners = true_corners(target)
            requests.publish("ctl.calibrate", {"request_id": "cal-1", "out": str(tmp_path / "calibration.yaml"),
                                               "png": str(tmp_path / "calibration.png"), "corners": corners.tolist()})
            calibrated = collector.wait_for(lambda m: m.topic == "cam.calibrated" and m.body["request_id"] == "cal-1", 10.0)
            assert calibrated.body["ok"], calibrated.body["message"]
            assert calibrated.body["request_id"] == "cal-1"
            assert np.abs(np.asarray(calibrated.body["corners"]) - corners).max() < CORNER_TOLERANCE_PX
            for name in ("calibration.yaml", "calibration.png", "calibration-frame.png"):
                assert (tmp_path / name).is_file()

            phase("calibrated")
            # play: five O pieces side by side, a double clear
            play_start = len(collector.since(0))
            drop_o_pieces(target, len(COLUMNS))
            time.sleep(0.4)
            played = collector.since(play_start)
            truth = target.truth.frames()

            frames = [m.body for m in played if m.topic == "obs.frame" and m.body["status"] == "ok"]
            assert len(frames) > 60
            for body in frames:
                shown = {f.board for f in truth if body["t_capture"] - BOARD_WINDOW_S <= f.t <= body["t_capture"]}
                assert tuple(body["board"]) in shown, (
                    f"frame {body['frame_seq']} shows a board the game never had: {body['board'][-4:]},"
                    f" {body['reason']!r}; the game had {[b[-4:] for b in shown]}"
                )
                assert body["falling"] is None or body["falling"]["piece"] == "O"
                assert body["calibration"] == "ok"
            assert tuple(frames[-1]["board"]) == truth[-1].board
            events = [m.body for m in played if m.topic == "obs.event"]
            kinds = [event["kind"] for event in events]
            assert kinds.count("rows_cleared") == 1
            assert all(event["rows"] == [1, 2] for event in events if event["kind"] == "rows_cleared")
            assert kinds.count("landed") == len(COLUMNS)  # the last O's too: its rows cleared
            assert all(event["piece"] == "O" for event in events if event["kind"] in ("spawn", "landed"))
            # the NES skin fills its cells: the first pieces taught the camera to read their middles
            collector.wait_for(lambda m: m.topic == "cam.state" and m.body["cells_read_by"] == "middles", 3.0, play_start)

            phase("played and checked")
            # a snapshot
            start = len(collector.since(0))
            requests.publish("ctl.snapshot", {"request_id": 7})
            snap = collector.wait_for(lambda m: m.topic == "cam.snapshot", 3.0, start).body
            image = cv2.imdecode(np.frombuffer(base64.b64decode(snap["jpeg_b64"]), np.uint8), cv2.IMREAD_COLOR)
            assert snap["request_id"] == 7 and image.shape == (snap["height"], snap["width"], 3) == (240, 320, 3)

            phase("snapshot")
            # a frozen camera: frames keep coming, their capture time stands still
            start = len(collector.since(0))
            target.freeze_camera(0.6)
            time.sleep(0.7)
            captures = [m.body["t_capture"] for m in collector.since(start) if m.topic == "obs.frame"]
            longest = max(sum(1 for _ in run) for _, run in itertools.groupby(captures))
            assert longest >= 10

            phase("frozen")
            # a lost camera: status none, not connected; then frames again
            start = len(collector.since(0))
            target.disconnect_camera(1.0)
            collector.wait_for(lambda m: m.topic == "obs.frame" and m.body["reason"].startswith("no frame from the source"), 3.0, start)
            collector.wait_for(lambda m: m.topic == "cam.state" and m.body["connected"] is False, 3.0, start)
            collector.wait_for(lambda m: m.topic == "obs.frame" and m.body["status"] == "ok", 8.0, start + 1)
            assert child.poll() is None

            phase("reconnected")
            child.send_signal(signal.SIGTERM)
            assert child.wait(5.0) == 0
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            collector.done.set()
            collector.join(2.0)
            requests.close()
