"""A whole rig for tests: the simulator in this process, gamerigd and its four real services as processes.

    with MachineRig(level=5) as rig:    # the machine runs; gamerigd starts paused
        rig.calibrate()                 # live, through gamerigd and the camera, on a fresh empty game
        rig.request("play")
        rig.wait_for(lambda: rig.drops() >= 5, 30.0, "five pieces dropped")

The virtual machine (hardware/sim/machine.py) runs here so a test reads its contact log and
ground truth directly and applies its faults; gamerigd is daemon/sim_rig.py's RigDaemon (the
config it writes, the child process, the control socket), in a private folder under /tmp (short,
as ipc:// paths are limited to 107 bytes).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gamerig.daemon.sim_rig import RigDaemon, gamerigctl_command
from gamerig.hardware.sim.game_session import GameOptions
from gamerig.hardware.sim.machine import Machine, MachineOptions
from gamerig.hardware.sim.target import TargetOptions, filmed_well_corners


class MachineRig:
    """The simulator in this process plus gamerigd; see the module docstring."""

    def __init__(self, level: int = 5, seed: int = 1, key_drop: float = 0.0, play: dict[str, Any] | None = None) -> None:
        """``play``: values of the config's play section over the simulator config's."""
        self.dir = Path(tempfile.mkdtemp(prefix="rig-", dir="/tmp"))
        self.link = self.dir / "relay"
        self.machine = Machine(MachineOptions(
            target=TargetOptions(game=GameOptions(level=level, preview=True, seed=seed), camera_drop_probability=0.0,
                                 key_drop_probability=key_drop),
            link_path=str(self.link),
        ))
        self.gamerigd = RigDaemon(self.dir)
        self.gamerigd.write_config(self.machine.target.url, str(self.link), level, preview=True, sections={"play": play or {}})
        self.config_path = self.gamerigd.config_path
        self.calibration = self.gamerigd.calibration_path
        self.endpoints = self.gamerigd.endpoints

    # ---- lifetime ------------------------------------------------------------------------------

    def start(self) -> MachineRig:
        """Start the machine and gamerigd (paused); returns once every service is alive."""
        self.machine.start()
        self.gamerigd.start()
        return self

    def stop(self) -> int | None:
        """Stop gamerigd (relays released first), then the machine; returns gamerigd's exit code."""
        code = self.gamerigd.stop()
        self.machine.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        return code

    def __enter__(self) -> MachineRig:
        try:
            return self.start()
        except BaseException:
            print(self.gamerigd.log())
            self.stop()
            raise

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ---- talking to gamerigd -------------------------------------------------------------------

    def request(self, cmd: str, timeout_s: float = 5.0, **args: Any) -> dict[str, Any]:
        """gamerigd's reply to a control command (raises DaemonNotRunning)."""
        return self.gamerigd.request(cmd, timeout_s, **args)

    def status(self) -> dict[str, Any]:
        """gamerigd's status reply."""
        return self.gamerigd.status()

    def gamerigctl(self, *args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run ``gamerigctl ARGS --config <this rig's config>`` as a real process."""
        return subprocess.run(
            [*gamerigctl_command(), *args, "--config", str(self.config_path)],
            capture_output=True, text=True, timeout=timeout_s,
        )

    # ---- the machine ---------------------------------------------------------------------------

    def true_corners(self) -> np.ndarray:
        """The well's corners in the camera's frame, as the simulator films them."""
        target = self.machine.target
        return filmed_well_corners(target.camera.settings, target.skin)

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
        process = self.gamerigd.process
        while not condition():
            if process is not None and process.poll() is not None:
                raise AssertionError(f"gamerigd exited with {process.returncode} waiting for {what}:\n{self.gamerigd.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {timeout_s} s: {what}\n{self.gamerigd.log()[-3000:]}")
            time.sleep(0.05)
