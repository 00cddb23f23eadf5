"""The virtual target machine: Standard Tetris in real time, its screen filmed and streamed as MJPEG.

    with Target(TargetOptions(skin="elektronika1986")) as target:
        target.url                                    # the IP camera: cv2.VideoCapture(url, cv2.CAP_FFMPEG)
        target.keyboard.contact("left", True, time.monotonic())   # what the relay board does
        target.truth.latest()                         # the true board, piece, score ... of the newest frame

One thread runs a 60 Hz frame loop.  Each frame, at its due time: the game reads the keys latched by
the :class:`KeyboardModel` (rising edges only), steps (:class:`GameSession`: keys, then gravity once
per ``Game.delay``), the ground truth records the frame, and, if the loop is not catching up, the
screen is rendered (only when the state changed; :func:`render` caches its layers), filmed by the
:class:`CameraFeed` (geometry only on change, per-frame exposure and noise, a few frames of latency,
dropped frames) and published once to every client of the :class:`MjpegStreamServer`.  The game's
clock is the frame schedule, not the loop's progress: a late loop catches up frame by frame (the
camera skips those frames), so gravity keeps real time on a busy machine.  The loop runs at
real-time priority when the system allows it (FRAME_LOOP_PRIORITY), as if on its own computer.

Faults while running: :meth:`Target.freeze_camera`, :meth:`Target.black_frames`,
:meth:`Target.disconnect_camera`, :meth:`Target.set_drop_probability` (key presses),
:meth:`Target.add_junk_rows`.  Calibration mode: :meth:`Target.place_piece`, :meth:`Target.clear_board`.

Measured on a shared 2-core machine under load (load average 2-3), 640 x 480, 2026-12-02:

- ``measure_performance(10.0)`` (one raw-socket client reading everything, 4 key presses a second,
  thread CPU of the frame loop and the stream's client threads over wall time): sim_fps 58.1-60.0,
  sim_cpu_fraction 0.11-0.15 (elektronika1986 0.112, green_screen 0.129, flat_modern 0.124, picture
  0.147).  Frames below 60 fps are frames the loop caught up late and did not film (a stall of more
  than one frame period on the busy machine).
- Whole-process CPU (time.process_time over 10 s, a cv2.VideoCapture/FFmpeg reader in another
  process receiving 60.2 fps, a key every 0.25 s): 0.18-0.19 of one core; the simulator's own
  threads 0.13-0.14.  The target is at most 0.5.
- Per piece of work (thread CPU): filming the geometry of a changed screen 3.2-3.5 ms (43 times in
  10 s of that play), exposure + noise + JPEG of every frame 0.7-0.8 ms, a render 0.13 ms.

Not measured here: the virtual relay board's thread (helper code elsewhere), and many clients at
once (each extra client costs one socket write per frame, no extra encode).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import Skin, skin as skin_by_name
from gamerig.hardware.realtime import try_realtime

from .camera_feed import CameraFeed
from .game_session import FRAME_HZ, GameOptions, GameSession
from .ground_truth import FrameTruth, GroundTruth, PieceTruth, ReceivedKey
from .keyboard import KeyboardModel
from .screen_stream import MjpegStreamServer
from .synthetic_camera import FRAME_SIZE, CameraSettings, homography, map_points

log = logging.getLogger(__name__)

#: SCHED_FIFO priority of the frame loop, when the system allows it: the target machine is another
#: computer in a real rig, but here shares the cores with the rig, and a loop held off for a frame
#: period skips filming (the camera then seemed stalled for 3 periods, and play halted, two to four
#: times in each 1,000-piece level-10 run on the shared 2-core machine).  Below the relay's 10.
FRAME_LOOP_PRIORITY = 5
#: Frame pixels the seeded camera leaves at least between the well and the frame's edges.
WELL_MARGIN_PX = 4.0
#: Random cameras drawn at most for one that films the whole well (the last one is kept).
CAMERA_DRAWS = 20


@dataclass(frozen=True)
class TargetOptions:
    """How the virtual target machine is built."""

    game: GameOptions = field(default_factory=GameOptions)
    #: Any skin of games/tetris/skins.py: "elektronika1986" (the 1986 original), "green_screen"
    #: (monochrome), "nes", "flat_modern", "pastel", "neon" ... (modern ones).
    skin: str = "elektronika1986"
    #: The camera; None draws a plausible webcam from ``camera_seed``.
    camera: CameraSettings | None = None
    camera_seed: int = 0
    latency_frames: int = 3
    camera_drop_probability: float = 0.01
    exposure_drift: float = 0.06
    debounce_ms: float = 5.0
    key_drop_probability: float = 0.0
    port: int = 0
    #: Stream the ground truth to this file as JSON lines.
    truth_path: str | Path | None = None

    def camera_settings(self) -> CameraSettings:
        """The camera used: the given settings, or the first plausible webcam drawn from
        ``camera_seed`` that films the whole well with ``WELL_MARGIN_PX`` to spare (an operator
        aims the camera so; a few random ones cut the top of a tall well's frame)."""
        if self.camera is not None:
            return self.camera
        rng = np.random.default_rng(self.camera_seed)
        look = skin_by_name(self.skin)
        lowest, highest = np.full(2, WELL_MARGIN_PX), np.asarray(FRAME_SIZE) - WELL_MARGIN_PX
        for _ in range(CAMERA_DRAWS):
            camera = CameraSettings.random(rng)
            corners = filmed_well_corners(camera, look)
            if (corners >= lowest).all() and (corners <= highest).all():
                break
        return camera


def filmed_well_corners(camera: CameraSettings, look: Skin) -> np.ndarray:
    """The well's corners (TL TR BR BL, frame pixels) as a simulator camera with ``camera``'s
    settings films a target drawing the skin ``look``."""
    screen = render(Board(), look, size=FRAME_SIZE)
    height, width = screen.image.shape[:2]
    return map_points(homography(camera, (width, height)), screen.well_corners)


@dataclass(frozen=True)
class SimPerformance:
    """What the simulator cost: frames streamed per second and its CPU time over wall time."""

    wall_s: float
    frames: int  # game frames run
    streamed: int  # camera frames published to the stream
    cpu_s: float  # thread CPU of the frame loop and the stream's client threads

    @property
    def fps(self) -> float:
        """Camera frames streamed per second."""
        return self.streamed / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_fraction(self) -> float:
        """Simulator CPU time divided by wall time (1.0 = one whole core)."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    def since(self, earlier: SimPerformance) -> SimPerformance:
        """The figures of the window between ``earlier`` and this snapshot (e.g. one benchmark run)."""
        return SimPerformance(
            self.wall_s - earlier.wall_s, self.frames - earlier.frames, self.streamed - earlier.streamed, self.cpu_s - earlier.cpu_s
        )


class Target:
    """The virtual target machine; see the module docstring.  Call :meth:`start` (or use ``with``)."""

    def __init__(self, options: TargetOptions = TargetOptions()) -> None:
        self.options = options
        self.skin = skin_by_name(options.skin)
        self.keyboard = KeyboardModel(options.debounce_ms, options.key_drop_probability, options.game.seed)
        self.session = GameSession(options.game)
        self.camera = CameraFeed(
            options.camera_settings(),
            seed=options.camera_seed,
            latency_frames=options.latency_frames,
            drop_probability=options.camera_drop_probability,
            exposure_drift=options.exposure_drift,
        )
        self.truth = GroundTruth(path=options.truth_path)
        self.stream = MjpegStreamServer(options.port)
        self._lock = threading.RLock()  # the loop's frame step against faults and calibration calls
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sim-target-frames", daemon=True)
        self._frame = 0
        self._edges_logged = 0
        self._screen_key: tuple[object, ...] | None = None
        self._screen: np.ndarray | None = None
        self._board_key: bytes = b""
        self._board_rows: tuple[str, ...] = ()
        self._loop_cpu = 0.0
        self._started_at = 0.0
        self._streamed = 0
        #: Why the frame loop stopped on its own (a bug), or None while it runs as it should.
        self.failure: BaseException | None = None

    @property
    def url(self) -> str:
        """The MJPEG stream's URL, to open like an IP camera."""
        return self.stream.url

    @property
    def frame(self) -> int:
        """Game frames run so far."""
        return self._frame

    def pieces_spawned(self) -> int:
        """Pieces that have appeared so far, over all games (what faults at a piece count)."""
        return self.session.pieces_spawned

    # ---- lifetime ----------------------------------------------------------------------

    def start(self) -> Target:
        """Start the frame loop (the stream already listens)."""
        self._started_at = time.monotonic()
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the loop and the stream, close the ground-truth file."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2.0)
        self.stream.stop()
        self.truth.close()

    def __enter__(self) -> Target:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def performance(self) -> SimPerformance:
        """Frames and CPU time since :meth:`start`."""
        with self._lock:
            return SimPerformance(
                wall_s=time.monotonic() - self._started_at,
                frames=self._frame,
                streamed=self._streamed,
                cpu_s=self._loop_cpu + self.stream.cpu_seconds,
            )

    # ---- faults ------------------------------------------------------------------------

    def freeze_camera(self, seconds: float) -> None:
        """The camera repeats its last frame, byte for byte, for ``seconds``."""
        with self._lock:
            self.camera.freeze(time.monotonic() + _positive(seconds))

    def black_frames(self, seconds: float) -> None:
        """The camera sends black frames for ``seconds``."""
        with self._lock:
            self.camera.black(time.monotonic() + _positive(seconds))

    def disconnect_camera(self, seconds: float) -> None:
        """The camera drops off the network: clients are cut, connections refused, for ``seconds``."""
        self.stream.disconnect(_positive(seconds))

    def set_drop_probability(self, p: float) -> None:
        """Drop each key press with probability ``p`` from now on (logged in the ground truth)."""
        self.keyboard.set_drop_probability(p)

    def add_junk_rows(self, n: int) -> None:
        """Lift the pile by ``n`` rows of junk."""
        with self._lock:
            self.session.add_junk_rows(n)

    # ---- the original's calibration mode and menu -----------------------------------------

    def place_piece(self, kind: str) -> None:
        """Calibration: put piece ``kind`` (one of OISZLJT) at the top of the board."""
        with self._lock:
            self.session.place_piece(kind)

    def clear_board(self) -> None:
        """Calibration: empty the board."""
        with self._lock:
            self.session.clear_board()

    def new_game(self) -> None:
        """Start a new game, as the new_game key does."""
        with self._lock:
            self.session.new_game()

    # ---- the frame loop ------------------------------------------------------------------

    def _run(self) -> None:
        try_realtime(FRAME_LOOP_PRIORITY, "the simulator's frame loop")
        try:
            self._loop()
        except Exception as error:  # a bug: say so, and make the camera go away rather than freeze silently
            log.exception("the simulator's frame loop failed")
            self.failure = error
            self.stream.stop()

    def _loop(self) -> None:
        period = 1.0 / FRAME_HZ
        due = time.monotonic()
        cpu = time.thread_time()
        while not self._stop.is_set():
            now = time.monotonic()
            if now < due:
                self._stop.wait(due - now)
                continue
            with self._lock:
                self._step(due, filmed=now - due < period)  # a frame caught up late is not filmed
                spent = time.thread_time()
                self._loop_cpu += spent - cpu
                cpu = spent
            due += period

    def _step(self, t: float, filmed: bool) -> None:
        """One game frame at time ``t``: keys, game, camera (if ``filmed``), ground truth."""
        received = self.keyboard.take_rising_edges(t)
        self.session.step([e.key for e in received])
        for edge in self.keyboard.edges(self._edges_logged):
            self.truth.add_edge(edge)
            self._edges_logged += 1
        for edge in received:
            self.truth.add_received(ReceivedKey(self._frame, edge.key, edge.t))
        shows = None
        if not filmed:
            self.camera.look(self._frame, self._render())
        else:
            shot = self.camera.capture(self._frame, self._render(), t)
            if shot.jpeg is not None:
                self.stream.publish(shot.jpeg)
                self._streamed += 1
                shows = shot.shows
        self.truth.add_frame(self._truth(self._frame, t, shows))
        self._frame += 1

    def _render(self) -> np.ndarray:
        """The screen image; the same object while nothing on screen changed."""
        game = self.session.game
        piece = game.piece
        key = (self.session.colour_ids.tobytes(), piece, game.next_piece, game.score, game.lines)
        if key != self._screen_key or self._screen is None:
            screen = render(
                game.board,
                self.skin,
                falling=piece.cells() if piece is not None else (),
                falling_piece=piece.kind if piece is not None else None,
                next_piece=game.next_piece,
                stack_ids=self.session.stack_ids(),
                score=game.score,
                lines=game.lines,
                size=FRAME_SIZE,
            )
            self._screen, self._screen_key = screen.image, key
        return self._screen

    def _truth(self, frame: int, t: float, camera_frame: int | None) -> FrameTruth:
        game = self.session.game
        cells = game.board.cells.tobytes()
        if cells != self._board_key:
            self._board_key, self._board_rows = cells, tuple(game.board.to_rows())
        piece = game.piece
        return FrameTruth(
            frame=frame,
            t=t,
            game=self.session.games_started,
            board=self._board_rows,
            piece=PieceTruth(piece.kind, piece.orientation, piece.x, piece.y) if piece is not None else None,
            next_piece=game.next_piece,
            score=game.score,
            lines=game.lines,
            level=game.level,
            paused=self.session.paused,
            over=game.over,
            camera_frame=camera_frame,
        )


def _positive(seconds: float) -> float:
    if not seconds > 0:
        raise ValueError(f"a fault lasts a positive number of seconds, got {seconds}")
    return float(seconds)


def measure_performance(
    seconds: float = 10.0, options: TargetOptions | None = None, keys_per_second: float = 4.0
) -> SimPerformance:
    """Run a target for ``seconds`` (after 1 s of warm-up) with one real HTTP client reading the
    whole stream and a player pressing left, right and rotate ``keys_per_second`` times a second
    (so the screen changes and is filmed anew), and return that window's :class:`SimPerformance`:
    ``.fps`` is sim_fps, ``.cpu_fraction`` sim_cpu_fraction.

    The default options switch the camera's random frame drops off, so ``fps`` measures what the
    pipeline sustains (60 when it keeps up)."""
    options = options if options is not None else TargetOptions(camera_drop_probability=0.0)
    keys = ("left", "right", "rotate")
    with Target(options) as target:
        reader = _StreamReader(target.stream.port)
        reader.start()
        time.sleep(1.0)
        start = target.performance()
        end_at = time.monotonic() + seconds
        pressed = 0
        while (now := time.monotonic()) < end_at:
            target.keyboard.contact(keys[pressed % len(keys)], True, now)
            time.sleep(min(0.06, 0.5 / keys_per_second))
            target.keyboard.contact(keys[pressed % len(keys)], False, time.monotonic())
            pressed += 1
            time.sleep(max(0.0, min(end_at, now + 1.0 / keys_per_second) - time.monotonic()))
        result = target.performance().since(start)
        reader.stop()
    return result


class _StreamReader(threading.Thread):
    """A plain socket client that reads and discards the stream (as cheap as a client can be)."""

    def __init__(self, port: int) -> None:
        super().__init__(name="sim-bench-reader", daemon=True)
        self._sock = socket.create_connection(("127.0.0.1", port), timeout=2.0)
        self._sock.sendall(b"GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            try:
                if not self._sock.recv(1 << 16):
                    return
            except OSError:
                return

    def stop(self) -> None:
        self._done.set()
        self._sock.close()
        self.join(2.0)
