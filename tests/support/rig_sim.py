"""A whole rig for tests: the simulator in this process, gamerigd and its four real services as processes.

    with SimRig(level=5) as rig:        # the machine runs; gamerigd starts paused
        rig.calibrate()                 # live, through gamerigd and the camera, on a fresh empty game
        rig.request("play")
        rig.wait_for(lambda: rig.drops() >= 5, 30.0, "five pieces dropped")

The virtual machine (hardware/sim/machine.py) runs here so a test reads its contact log and
ground truth directly and applies its faults; gamerigd reads a copy of configs/gamerig-sim.yaml
with the machine's stream URL, its relay board's pty link and a private runtime directory (short,
under /tmp, as ipc:// paths are limited to 107 bytes).  gamerigd's output goes to ``log_path``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml
import zmq

from gamerig.daemon.bus import ControlClient, Endpoints
from gamerig.daemon.rig_config import load_rig_config
from gamerig.games.tetris.board import Board
from gamerig.games.tetris.render import render
from gamerig.hardware.sim.game_session import GameOptions
from gamerig.hardware.sim.machine import Machine, MachineOptions
from gamerig.hardware.sim.synthetic_camera import FRAME_SIZE, homography, map_points
from gamerig.hardware.sim.target import TargetOptions

ROOT = Path(__file__).resolve().parents[2]
#: The venv's console scripts (gamerigd, gamerigctl).
BIN = Path(sys.executable).parent
SIM_CONFIG = ROOT / "configs" / "gamerig-sim.yaml"
#: The ai compiles at start; on the shared 2-core machine the whole rig takes a while to come up.
START_TIMEOUT_S = 90.0


class SimRig:
    """The simulator plus gamerigd; see the module docstring."""

    def __init__(self, level: int = 5, seed: int = 1, key_drop: float = 0.0, overrides: dict[str, Any] | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="rig-", dir="/tmp"))
        self.link = self.dir / "relay"
        self.calibration = self.dir / "calibration.yaml"
        self.log_path = self.dir / "gamerigd.log"
        self.machine = Machine(MachineOptions(
            target=TargetOptions(game=GameOptions(level=level, preview=True, seed=seed), camera_drop_probability=0.0,
                                 key_drop_probability=key_drop),
            link_path=str(self.link),
        ))
        self.config_path = self.dir / "gamerig.yaml"
        config = yaml.safe_load(SIM_CONFIG.read_text())
        config["initial_level"] = level
        config["camera"].update(source=self.machine.target.url, calibration=str(self.calibration))
        config["keys"]["port"] = str(self.link)
        config["bus"]["runtime_dir"] = str(self.dir / "run")
        for section, values in (overrides or {}).items():
            config[section].update(values)
        self.config_path.write_text(yaml.safe_dump(config))
        self.endpoints: Endpoints = load_rig_config(self.config_path).bus.endpoints()
        self.daemon: subprocess.Popen[bytes] | None = None
        self._context = zmq.Context()

    # ---- lifetime ------------------------------------------------------------------------------

    def start(self) -> SimRig:
        """Start the machine and gamerigd (paused); returns once every service is alive."""
        self.machine.start()
        with self.log_path.open("ab") as log:
            self.daemon = subprocess.Popen(
                [str(BIN / "gamerigd"), "--config", str(self.config_path), "--paused"],
                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        self.wait_for(self.healthy, START_TIMEOUT_S, "every service alive")
        return self

    def stop(self) -> int | None:
        """SIGTERM gamerigd (it releases the relays and stops its services), then stop the machine;
        returns gamerigd's exit code."""
        code = None
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                code = self.daemon.wait(15.0)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                code = self.daemon.wait()
        self.machine.stop()
        self._context.term()
        shutil.rmtree(self.dir, ignore_errors=True)
        return code

    def __enter__(self) -> SimRig:
        try:
            return self.start()
        except BaseException:
            print(self.log())
            self.stop()
            raise

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ---- talking to gamerigd -------------------------------------------------------------------

    def request(self, cmd: str, timeout_s: float = 5.0, **args: Any) -> dict[str, Any]:
        """gamerigd's reply to a control command (raises DaemonNotRunning)."""
        client = ControlClient(self._context, self.endpoints, timeout_s)
        try:
            return client.request(cmd, **args)
        finally:
            client.close()

    def status(self) -> dict[str, Any]:
        return self.request("status")

    def healthy(self) -> bool:
        try:
            return bool(self.status()["daemon"]["healthy"])
        except Exception:  # not up yet: no socket, or no answer yet
            return False

    def gamerigctl(self, *args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run ``gamerigctl ARGS --config <this rig's config>`` as a real process."""
        return subprocess.run(
            [str(BIN / "gamerigctl"), *args, "--config", str(self.config_path)],
            capture_output=True, text=True, timeout=timeout_s,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    # ---- the machine ---------------------------------------------------------------------------

    def true_corners(self) -> np.ndarray:
        """The well's corners in the camera's frame, as the simulator films them."""
        target = self.machine.target
        screen = render(Board(), target.skin, size=FRAME_SIZE)
        height, width = screen.image.shape[:2]
        return map_points(homography(target.camera.settings, (width, height)), screen.well_corners)

    def calibrate(self, **args: Any) -> dict[str, Any]:
        """A new game (an empty board) and a live calibration from the true corners; returns the reply."""
        self.machine.target.new_game()
        reply = self.request("calibrate", 35.0, corners=self.true_corners().tolist(), **args)
        assert reply.get("ok"), reply
        return reply

    def drops(self, since_t: float = 0.0) -> int:
        """Drop keys the game read since ``since_t`` (time.monotonic()): placements made."""
        return sum(1 for key in self.machine.target.truth.received() if key.key == "drop" and key.t >= since_t)

    def wait_for(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Poll ``condition`` until it holds; an AssertionError naming ``what`` and the log tail if not."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if self.daemon is not None and self.daemon.poll() is not None:
                raise AssertionError(f"gamerigd exited with {self.daemon.returncode} waiting for {what}:\n{self.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {timeout_s} s: {what}\n{self.log()[-3000:]}")
            time.sleep(0.05)
