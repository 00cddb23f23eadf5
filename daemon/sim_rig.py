"""The whole rig against the simulator, as real processes: what `make demo`, `gamerigctl bench rig`
and the end-to-end tests start.

    with SimRig(SimRigOptions(level=5, preview=True), workdir) as rig:   # playing once entered
        rig.status()                     # gamerigd's status reply
        rig.fault("drop=0.02")           # a simulator fault, through its control server

:meth:`SimRig.start`, in order:

1. ``gamerigctl sim --json --truth <workdir>/truth.jsonl --link <workdir>/relay`` as a child
   process (its own interpreter, like the real target machine); its start-up line gives the stream
   and control URLs.
2. A rig config (:meth:`RigDaemon.write_config`): configs/gamerig-sim.yaml with the camera pointed
   at the stream, the keys at the board's link, the calibration and the ipc bus in the work folder
   (so a run never meets another rig's bus), the level and preview of the simulator.
3. ``gamerigd --config <it> --paused`` as a child (:class:`RigDaemon`, which the tests' rig with
   the simulator in the test process uses too); waits until all four services are alive.
4. Calibration through the daemon (``calibrate`` on the control socket, the camera service
   calibrating on live frames) from the well's true corners: the simulator's camera is seeded, so
   its homography is known here (:func:`true_corners`) and the camera service refines them.
   With the board kept clear the well looks empty while pieces keep landing, so the preview
   changes (:meth:`SimRig.calibrate`).  From step 3 on, the board is kept clear (the simulator's calibration-mode ``clear``): the game
   runs unplayed until step 5, and at level 10 a start-up slowed by a loaded machine (30 s) let
   it top out before play began.
5. Once the watchdog has ended its start-up halt (it learns of the calibration from the camera's
   state), the board is cleared again and the piece in play kept at the top until the camera shows
   it falling on the empty board (:meth:`SimRig._start_on_an_empty_board`), and ``play`` is sent;
   the faults of the options are posted then, so their times count from the start of play.

:meth:`SimRig.stop`: SIGTERM to gamerigd (it releases the relays first and stops its services),
then to the simulator; SIGKILL only after a timeout.  Every path out of :meth:`start` stops what
it started.  The children run in sessions of their own, so a Ctrl-C in the terminal reaches only
this process, which stops them in that order; a parent killed with -9 leaves them running.

Tested by tests/integration/test_rig_end_to_end.py and tests/integration/test_bench_rig.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
import zmq

from gamerig.games.tetris.rules import iteration_delay
from gamerig.games.tetris.skins import skin as skin_by_name
from gamerig.hardware.sim.target import TargetOptions, filmed_well_corners

from .bus import ControlClient, DaemonNotRunning, Endpoints, Subscriber
from .rig_config import load_rig_config

ROOT = Path(__file__).resolve().parents[1]
SIM_CONFIG = ROOT / "configs" / "gamerig-sim.yaml"
#: From gamerigd's start to all four services alive (the ai loads its player and compiles at start).
SERVICES_UP_S = 180.0
CALIBRATE_S = 60.0
#: The calibration's capture: 30 frames over two falls of a piece through the well at the game's
#: level (pieces land, so the preview changes, and the falling piece covers any cell in few of the
#: frames, which learning the empty cells needs), within these bounds: 12 s at levels 1-5, 3 s
#: at level 10.
CALIBRATION_FRAMES = 30
CALIBRATION_FALLS = 2
CALIBRATION_CAPTURE_S = (3.0, 12.0)
#: Calibrations tried for a game that shows its next piece until one finds the preview box: on a
#: loaded machine a capture whose frames came late missed the preview's change once in a CI run,
#: and the level-10 run after it played without planning ahead.
PREVIEW_TRIES = 3
CLEAR_EVERY_S = 0.2
#: From a good calibration to the watchdog ending its start-up halt (it learns the calibration from
#: the camera's state, sent every second).
WATCHDOG_READY_S = 15.0
#: The longest wait for the camera to show the board cleared at the start of play, and how often
#: the piece in play is put back at the top meanwhile (at level 10 it lands within a second).
CAMERA_SETTLE_S = 10.0
PIECE_BACK_TO_TOP_S = 0.4
#: From putting the piece back at the top to sending play: the camera shows the screen some 50-90 ms
#: late, and an ai that took play at once planned the piece from a frame still showing it lower
#: down, then again once it showed at the top (two predictions for one piece: a mismatch).
CAMERA_CATCH_UP_S = 0.25
STOP_S = 10.0


class RigFailed(RuntimeError):
    """The rig could not be brought up; the message says which step and why."""


@dataclass(frozen=True)
class SimRigOptions:
    """The simulated target and how the rig plays it."""

    level: int = 5
    preview: bool = True
    seed: int = 0
    skin: str = "elektronika1986"
    player: str = "gamerig"
    #: Simulator faults ``NAME[=VALUE][@SECONDS|@PIECESp]``, counted from the start of play.
    faults: tuple[str, ...] = ()
    #: Overrides of configs/gamerig-sim.yaml's ``play`` and ``keys`` sections (e.g. hold_ms, gap_ms).
    play: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, Any] = field(default_factory=dict)


def calibration_every_s(level: int, rows: int = 20) -> float:
    """Seconds between the calibration's frames at ``level`` (see ``CALIBRATION_FALLS``)."""
    shortest, longest = CALIBRATION_CAPTURE_S
    return min(longest, max(shortest, CALIBRATION_FALLS * rows * iteration_delay(level))) / CALIBRATION_FRAMES


def true_corners(seed: int, skin: str) -> np.ndarray:
    """The well's corners as ``gamerigctl sim --seed SEED --skin SKIN`` films them: its camera is
    ``TargetOptions(skin=skin, camera_seed=seed).camera_settings()``."""
    return filmed_well_corners(TargetOptions(skin=skin, camera_seed=seed).camera_settings(), skin_by_name(skin))


def gamerigctl_command() -> list[str]:
    """The command line of gamerigctl in this interpreter (works without the console scripts on PATH)."""
    return [sys.executable, "-c", "import sys; from gamerig.daemon.ctl import main; sys.exit(main())"]


def gamerigd_command() -> list[str]:
    """The command line of gamerigd in this interpreter."""
    return [sys.executable, "-c", "import sys; from gamerig.daemon.gamerigd import main; sys.exit(main())"]


class RigDaemon:
    """gamerigd as a child process in ``workdir``, on a copy of configs/gamerig-sim.yaml pointed at
    a simulated target, and its control socket.  Both rigs use it: :class:`SimRig` (the simulator
    as a child too) and the tests' (tests/support/rig_sim.py: the simulator in the test process)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self.config_path = self.workdir / "gamerig.yaml"
        self.calibration_path = self.workdir / "calibration.yaml"
        self.log_path = self.workdir / "gamerigd.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.endpoints: Endpoints | None = None
        self._context = zmq.Context()

    def write_config(
        self, stream_url: str, serial_path: str, level: int, preview: bool, player: str = "gamerig",
        sections: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        """The rig config: the camera on ``stream_url``, the keys on ``serial_path``, the
        calibration and the ipc bus in the work folder (a run never meets another rig's bus), and
        ``sections``' values over the sections' defaults (e.g. ``{"play": {"closed_loop": False}}``)."""
        config = yaml.safe_load(SIM_CONFIG.read_text())
        config.update(initial_level=level, preview=preview, player=player)
        config["camera"] = {**config["camera"], "source": stream_url, "calibration": self.calibration_path.name}
        config["keys"] = {**config["keys"], "port": serial_path}
        config["bus"] = {**config["bus"], "runtime_dir": str(self.workdir / "run")}
        for section, values in (sections or {}).items():
            config[section] = {**config.get(section, {}), **values}
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.endpoints = load_rig_config(self.config_path).bus.endpoints()

    def start(self) -> None:
        """``gamerigd --config <it> --paused``; returns once every service is alive and ready (the ai
        warms its planner up first: play started before that loses pieces at a fast level); RigFailed
        if not."""
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*gamerigd_command(), "--config", str(self.config_path), "--paused"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + SERVICES_UP_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RigFailed(f"gamerigd exited with {self.process.returncode}: {_tail(self.log_path)}")
            if self.healthy() and self.ready():
                return
            time.sleep(0.2)
        raise RigFailed(f"the services were not all alive and ready within {SERVICES_UP_S:g} s: {_tail(self.log_path)}")

    def stop(self) -> int | None:
        """SIGTERM gamerigd (it releases the relays first, then stops its services), SIGKILL after
        STOP_S; returns its exit code (None if it was not started).  Idempotent."""
        code = _terminate(self.process)
        if not self._context.closed:
            self._context.term()
        return code

    def request(self, cmd: str, timeout_s: float = 5.0, **args: Any) -> dict[str, Any]:
        """One request to gamerigd's control socket; raises DaemonNotRunning."""
        if self.endpoints is None:
            raise DaemonNotRunning("no rig config written yet")
        client = ControlClient(self._context, self.endpoints, timeout_s)
        try:
            return client.request(cmd, **args)
        finally:
            client.close()

    def status(self) -> dict[str, Any]:
        """gamerigd's status reply."""
        return self.request("status")

    def subscriber(self, prefixes: Sequence[str], keep_expired: bool = False) -> Subscriber:
        """A subscriber to the rig's bus (the caller closes it), connected; ``keep_expired`` as
        :class:`Subscriber` takes it."""
        if self.endpoints is None:
            raise DaemonNotRunning("no rig config written yet")
        subscriber = Subscriber(self._context, self.endpoints, prefixes, keep_expired=keep_expired)
        subscriber.wait_connected(2.0)
        return subscriber

    def healthy(self) -> bool:
        """gamerigd answers and says every service is alive."""
        try:
            return bool(self.request("status", timeout_s=1.0)["daemon"]["healthy"])
        except DaemonNotRunning:
            return False

    def ready(self) -> bool:
        """Every service says it is ready or active (not starting, not in fault)."""
        try:
            services = self.request("status", timeout_s=1.0)["services"]
        except DaemonNotRunning:
            return False
        return all(service["state"] in ("ready", "active") for service in services.values())

    def log(self) -> str:
        """gamerigd's output so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


class SimRig:
    """The simulator and gamerigd as child processes; see the module docstring."""

    def __init__(self, options: SimRigOptions, workdir: Path) -> None:
        self.options = options
        self.workdir = Path(workdir)
        self.truth_path = self.workdir / "truth.jsonl"
        self.sim_log = self.workdir / "sim.log"
        self.gamerigd = RigDaemon(self.workdir)
        self.sim: subprocess.Popen[bytes] | None = None
        self.sim_info: dict[str, Any] = {}
        self.play_started_t: float | None = None  # time.monotonic() when play was sent
        self.calibration: dict[str, Any] = {}  # the camera's cam.calibrated reply

    @property
    def config_path(self) -> Path:
        """The rig config gamerigd runs on."""
        return self.gamerigd.config_path

    @property
    def endpoints(self) -> Endpoints | None:
        """gamerigd's bus (None before the config is written)."""
        return self.gamerigd.endpoints

    # ---- lifetime ------------------------------------------------------------------------------

    def __enter__(self) -> SimRig:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Simulator, config, gamerigd, calibration, play (see the module docstring); RigFailed says
        which step failed.  Stops whatever it started when it fails."""
        o = self.options
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
            self._start_simulator()
            self.gamerigd.write_config(
                self.sim_info["stream_url"], self.sim_info["serial_path"], o.level, o.preview, o.player,
                {"keys": o.keys, "play": o.play},
            )
            with self._board_kept_clear():
                self.gamerigd.start()
                self.calibration = self.calibrate()
                self._wait_watchdog_ready()
            self._start_on_an_empty_board()
            self.request("play")
            self.play_started_t = time.monotonic()
            for spec in o.faults:
                self.fault(spec)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """gamerigd first (:meth:`RigDaemon.stop`), then SIGTERM to the simulator.  Idempotent."""
        self.gamerigd.stop()
        _terminate(self.sim)

    # ---- the parts -------------------------------------------------------------------------------

    def _start_simulator(self) -> None:
        o = self.options
        command = [
            *gamerigctl_command(), "sim", "--json", "--level", str(o.level), "--seed", str(o.seed), "--skin", o.skin,
            "--truth", str(self.truth_path), "--link", str(self.workdir / "relay"),
            *(["--preview"] if o.preview else []),
        ]
        with open(self.sim_log, "wb") as log:
            self.sim = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        assert self.sim.stdout is not None
        line = self.sim.stdout.readline()
        if not line:
            self.sim.wait(STOP_S)
            raise RigFailed(f"the simulator did not start (exit {self.sim.returncode}): {_tail(self.sim_log)}")
        self.sim_info = json.loads(line)

    def calibrate(self) -> dict[str, Any]:
        """Calibrate the camera service on live frames from the well's true corners.

        The game goes on meanwhile (the rig is paused, the pieces fall): with the board kept clear
        (:meth:`_board_kept_clear`) the well looks empty in almost every frame, and the capture
        lasts long enough for pieces to land and the next piece to change, which the preview box
        is found by; with the preview on, again (``PREVIEW_TRIES``) until it is found."""
        corners = true_corners(self.options.seed, self.options.skin)
        for _ in range(PREVIEW_TRIES):
            reply = self.request(
                "calibrate", timeout_s=CALIBRATE_S, out=str(self.gamerigd.calibration_path),
                png=str(self.workdir / "calibration.png"), corners=corners.tolist(),
                frames=CALIBRATION_FRAMES, every_s=calibration_every_s(self.options.level),
            )
            if reply.get("ok") is not True:
                raise RigFailed(f"calibration failed: {reply.get('message') or reply.get('error')}")
            if reply.get("preview") or not self.options.preview:
                return reply
        raise RigFailed(f"no calibration of {PREVIEW_TRIES} found the preview box: {reply.get('message')}")

    def _wait_watchdog_ready(self) -> None:
        """Until the watchdog has ended its start-up halt: play sent before that began with the piece
        falling unsteered until the watchdog learned of the calibration (up to a second: at level 10
        the first piece was planned at row 11 and missed its deadline)."""
        deadline = time.monotonic() + WATCHDOG_READY_S
        while (watchdog := self.status().get("watchdog")) is None or watchdog.get("halted") is not False:
            if time.monotonic() > deadline:
                reason = watchdog.get("reason") if watchdog else "no wd.state"
                raise RigFailed(f"the watchdog still halts play {WATCHDOG_READY_S:g} s after the calibration: {reason}")
            time.sleep(0.1)

    def _start_on_an_empty_board(self) -> None:
        """The board cleared and the piece in play at the top, and the camera showing that.  A piece
        that landed since the last clear vanishes with this one, and the camera's tracker takes a
        board whose settled cells vanished only after 0.75 s of frames it cannot explain: play
        sent meanwhile began blind, the piece fell unseen (a level-10 run's first piece was first
        seen at row 4, too low to place).  So the piece is kept at the top until the camera shows
        it falling on an empty board.  A piece that lands all the same (at level 10 one spawned low
        reaches the floor before it is put back) is cleared again: the board must be empty to be
        shown empty."""
        frames = self.gamerigd.subscriber(["obs.frame"])
        try:
            shown_after = self._clear_with_the_piece_at_the_top()
            deadline = time.monotonic() + CAMERA_SETTLE_S
            while not self._camera_shows_an_empty_board(frames, shown_after, PIECE_BACK_TO_TOP_S):
                if time.monotonic() > deadline:
                    raise RigFailed(f"the camera did not show the cleared board within {CAMERA_SETTLE_S:g} s")
                if any("#" in row for row in self.truth().get("board", ())):
                    shown_after = self._clear_with_the_piece_at_the_top()
                else:
                    self._piece_to_the_top()  # not to land meanwhile
        finally:
            frames.close()
        self._piece_to_the_top()
        time.sleep(CAMERA_CATCH_UP_S)

    @staticmethod
    def _camera_shows_an_empty_board(frames: Subscriber, captured_after: float, within_s: float) -> bool:
        """Whether an obs.frame within ``within_s``, captured after ``captured_after``, is sure of a
        falling piece on an empty board."""
        until = time.monotonic() + within_s
        while (left := until - time.monotonic()) > 0:
            message = frames.receive(left)
            if message is None:
                return False
            body = message.body
            board = body.get("board")
            empty = isinstance(board, list) and not any("#" in row for row in board)
            if body.get("t_capture", 0.0) > captured_after and body.get("status") == "ok" and body.get("falling") and empty:
                return True
        return False

    def _clear_with_the_piece_at_the_top(self) -> float:
        """Clear the board, put the piece in play back at the top; the time after which a camera
        frame shows that (earlier pictures may predate the clear)."""
        self.fault("clear")
        self._piece_to_the_top()
        return time.monotonic() + CAMERA_CATCH_UP_S

    def _piece_to_the_top(self) -> None:
        """The piece in play back at the top: it fell unplayed during the start-up, and one too low
        to place when play begins would count as the rig's deadline miss."""
        piece = self.truth().get("piece")
        if piece is not None:
            self.fault(f"place={piece['kind']}")

    @contextmanager
    def _board_kept_clear(self) -> Iterator[None]:
        """The simulator's board cleared every CLEAR_EVERY_S while the block runs."""
        done = threading.Event()
        clearer = threading.Thread(target=self._keep_clearing, args=(done,), daemon=True)
        clearer.start()
        try:
            yield
        finally:
            done.set()
            clearer.join()

    def _keep_clearing(self, done: threading.Event) -> None:
        while not done.wait(CLEAR_EVERY_S):
            self.fault("clear")

    # ---- while it runs ---------------------------------------------------------------------------

    def request(self, cmd: str, timeout_s: float = 5.0, **args: Any) -> dict[str, Any]:
        """One request to gamerigd's control socket; raises DaemonNotRunning."""
        return self.gamerigd.request(cmd, timeout_s, **args)

    def status(self) -> dict[str, Any]:
        """gamerigd's status reply."""
        return self.gamerigd.status()

    def fault(self, spec: str) -> None:
        """Post a fault to the simulator's control server (``NAME[=VALUE][@SECONDS|@PIECESp]`` from now)."""
        request = urllib.request.Request(f"{self.sim_info['control_url']}/fault", data=spec.encode(), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=5.0):
                pass
        except urllib.error.HTTPError as exc:
            raise RigFailed(f"the simulator refused the fault {spec!r}: {exc.read().decode(errors='replace')}") from None

    def truth(self) -> dict[str, Any]:
        """The simulator's newest frame record (GET /truth)."""
        with urllib.request.urlopen(f"{self.sim_info['control_url']}/truth", timeout=5.0) as reply:
            return json.loads(reply.read())

    def alive(self) -> bool:
        """Both children still run."""
        return all(p is not None and p.poll() is None for p in (self.sim, self.gamerigd.process))


def _terminate(process: subprocess.Popen[bytes] | None) -> int | None:
    """SIGTERM, SIGKILL after STOP_S; the exit code (None: never started)."""
    if process is None:
        return None
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"

