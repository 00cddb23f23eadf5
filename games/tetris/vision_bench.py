"""Measure calibration, recognition and piece tracking on synthetic filmed play with ground truth.

A scene is one skin filmed by one random camera (``CameraSettings.random``).  Scene s uses
skin ``SKINS[s % len(SKINS)]`` and draws everything random from the seed and s, so a run is
reproducible and held-out skins are measured but never tuned on.

The play and its hard frames come from ``synthetic_play`` (its docstring describes them);
a camera bump is added here: from a random frame in the second half of the scene on, the
camera is shifted by 2..8 px and turned by up to 0.5 degrees, and stays there.

Per scene:

* calibration: ``find_well`` on ``CALIBRATION_FRAMES`` filmed frames spread over the scene's
  play before any bump (about 1.7 s of it, as ``gamerigctl calibrate --frames 24 --every
  0.07`` would grab); it succeeds when its worst corner is within ``CORNER_TOLERANCE_PX`` of
  the truth;
* recognition, from the TRUE corners (so it is measured independently of calibration):
  ``learn_empty`` on filmed frames of the empty board, then every frame through ``observe``
  (``cell_look.LearningObserver``, which learns in the first frames whether to read the cells by
  their middles) -> ``BoardFilter(k)`` -> ``PieceTracker``;
* the preview, when the skin has one: ``find_preview`` and ``learn_preview`` on
  ``PREVIEW_FRAMES`` filmed frames spread over the scene's play (given the true well corners),
  then ``read_preview`` on every frame before any bump.

What is counted.  A play frame is an ordinary frame before any bump; its truth is the visible
board (settled stack plus the falling piece's cells inside the well).

* cell_accuracy: correct cells over all cells of valid observations of play frames;
* board_exact_match: commits (``committed`` or ``resynced``) on play frames whose board equals
  the truth; filter_delay_ms_p50/p99: what the temporal filter adds, from a change's first frame
  to its commit (frames are 1/60 s apart);
* piece_accuracy: spawn events of the tracker that name the piece the truth has falling;
* piece_read_accuracy: valid observations of play frames with the whole piece in the well
  where ``falling_piece``, given the true stack, names the true piece (the reading alone);
* false_spawns: spawn events when the truth has no new piece.  A spawn event is true when the
  truth's piece number increased since the last true spawn event and the event names the true
  piece; anything else is false;
* missed_spawns: pieces whose spawn was filmed and which then showed whole in the well on at
  least ``k + 2`` play frames, with no true spawn event;
* events: the tracker's events by kind, next to the truth's (true_events);
* unsure_frames, no_observation_frames: frames the filter flagged so; tracker_status: frames
  by the tracker's status (waiting, tracking, unsure, game_over);
* hard: per kind of hard frame (line_clear, tear, game_over, after_bump) the frames, how many
  were flagged (unsure or no observation), committed, and committed wrong.  A commit on a hard
  frame is right only when its board is one the game really showed around it (for a line clear:
  the board before or after the collapse; for a tear: the old or the new board; for game over:
    the last board, or it with the grey rows of the fill read as filled; after a bump: the true
  board), else wrong;
* preview_found_rate: scenes with a preview whose box ``find_preview`` placed within
  ``CORNER_TOLERANCE_PX``, of those whose calibration frames show two next pieces or more (a
  scene of one long piece shows only one: no box can be found from it, and none is read); next_piece_accuracy: frames read with a learned preview that named
  the next piece the game shows; next_piece_wrong: readings that named a piece the box showed
  neither on this frame nor on the one before (unread frames are neither right nor wrong);
* cell_looks: scenes by how their cells came to be read (middles, whole, undecided);
* latency: thread CPU time of ``observe`` per 640 x 480 frame (the caller pins OpenCV to one
  thread), and of the whole per-frame pipeline: ``observe``, ``read_preview`` (when the scene
  has a learned preview), the filter and the tracker.

The tracker may also report the piece already falling when filming starts: a true spawn event
(the piece is new to it) with no spawn in the truth's events, so spawn events can outnumber
true_events' spawns without any being false.

Measured (5 Dec 2026, commit f2315ca, ``gamerigctl bench vision --frames 2000 --seed 0
--json`` on the shared 2-core machine): 160 s wall with one job, 93 s with ``--jobs 2`` (the
same counts; the scenes' calibrations are most of the time).  20 scenes; calibration 100%
within 3 px, median worst corner 0.90 px (calibration.py's docstring has the figures over 440
scenes); on 1533 play frames cell accuracy and board exact match (325 commits) 100%; 50 spawn
events, piece accuracy 100%, 0 false and 0 missed spawns; hard frames: line clear 61 (3 right
commits), tear 37 (1 right commit), after a bump 107 (all flagged), game over 262 (242
flagged; its 4 commits are right: the last board, or it with the grey fill's first rows);
observe p50 0.81 ms, p99 1.30 ms; with preview, filter and tracker p50 1.07 ms, p99 2.53 ms
(one job).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from itertools import islice

import numpy as np

from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

from .board import Board
from .calibration import find_well
from .players import PlayerSpec
from .preview import PreviewCalibration, find_preview, learn_preview, read_preview
from .cell_look import CELL_LOOKS, LearningObserver
from .recognition import GridCalibration, Observation, falling_piece, learn_empty
from .render import BGR, Screen, hex_to_bgr, render
from .rules import Rules
from .skins import SKINS, Skin
from .synthetic_play import EVENT_KINDS, FPS, PlayStyle, ScenePlay, Shown, TruthFrame, with_tears
from .temporal import BoardFilter, FilterUpdate
from .tracker import Event, PieceTracker, TrackerUpdate

#: find_well succeeds when its worst corner is this close to the truth.
CORNER_TOLERANCE_PX = 3.0
#: Frames of the empty board averaged by learn_empty.
EMPTY_FRAMES = 4
#: Frames of play, spread over the scene, that find_preview and learn_preview get.
PREVIEW_FRAMES = 12
#: Frames of play, spread over the scene before any bump, that find_well gets.  Over the 220
#: scenes of ``tests/calibration_eval.py`` (an earlier find_well): 1 frame 150 found, 8 frames 192,
#: 24 frames 197; with today's, 48 frames found no more than 24 (208 against 210) at 1.7 times the time.
CALIBRATION_FRAMES = 24
#: Play frames per scene, about: fewer frames give fewer scenes (but every skin at least once).
FRAMES_PER_SCENE = 100
#: A scene starts after up to this many of the AI's pieces, so it shows stacks of any height.
MAX_SKIPPED_PIECES = 200
#: Share of screen changes filmed half-drawn, in the scenes that tear.
TEAR_RATE = 0.15
#: Filming starts up to this many frames into the scene's play (mid-flight, or at a spawn).
START_FRAMES = 30
#: Camera bumps: shift (inclusive bounds, px) and largest turn (degrees); one scene in BUMP_EVERY.
BUMP_SHIFT_PX = (2.0, 8.0)
BUMP_TURN_DEG = 0.5
BUMP_EVERY = 5
#: One scene in GAME_OVER_EVERY ends its game, with GAME_OVER_WEIGHT times the others' frames.
GAME_OVER_EVERY = 20
GAME_OVER_WEIGHT = 4
_GREY: BGR = (128, 128, 128)
_WHITE: BGR = (255, 255, 255)
#: A careless game is cut after this many frames if it has not ended (it ends long before).
MAX_GAME_FRAMES = 50_000

HARD_KINDS = ("line_clear", "tear", "game_over", "after_bump")


def _worst_corner_error(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(found, dtype=np.float64) - truth, axis=1).max())


@dataclass
class Tally:
    """Counts behind the metrics of one group of scenes."""

    scenes: int = 0
    calibrated: int = 0
    corner_errors: list[float] = field(default_factory=list)
    frames: int = 0
    play_frames: int = 0
    valid_frames: int = 0
    cells: int = 0
    correct_cells: int = 0
    commits: int = 0
    exact_commits: int = 0
    #: seconds from a change's first frame to its commit, for every commit on a play frame
    commit_delays_s: list[float] = field(default_factory=list)
    piece_reads: int = 0
    correct_reads: int = 0
    spawn_events: int = 0
    right_piece_spawns: int = 0
    false_spawns: int = 0
    missed_spawns: int = 0
    spawns_due: int = 0
    flagged: Counter = field(default_factory=Counter)  # filter status unsure / no_observation
    tracker_status: Counter = field(default_factory=Counter)
    events: Counter = field(default_factory=Counter)
    true_events: Counter = field(default_factory=Counter)
    hard: Counter = field(default_factory=Counter)  # (kind, frames | flagged | commits | wrong_commits)
    preview_scenes: int = 0  # scenes whose skin has a preview box that shows two pieces or more
    preview_found: int = 0
    next_frames: int = 0  # frames read with a learned preview
    next_reads: int = 0  # ... that named a piece
    next_correct: int = 0
    next_wrong: int = 0
    #: scenes by how ``cell_look`` came to read their cells: middles, whole or undecided
    cell_looks: Counter = field(default_factory=Counter)

    def add(self, other: Tally) -> None:
        """Add another tally's counts to this one."""
        for name, value in vars(other).items():
            mine = getattr(self, name)
            if isinstance(mine, Counter):
                mine.update(value)
            else:
                setattr(self, name, mine + value)

    def metrics(self) -> dict[str, object]:
        """Rates as fractions 0..1 (None when nothing was measured), counts as counts."""

        def rate(part: int, whole: int) -> float | None:
            return part / whole if whole else None

        delays_ms = 1000.0 * np.asarray(self.commit_delays_s)

        return {
            "scenes": self.scenes,
            "frames": self.frames,
            "calibration_success_rate": rate(self.calibrated, self.scenes),
            "corner_error_px_median": float(np.median(self.corner_errors)) if self.corner_errors else None,
            "play_frames": self.play_frames,
            "valid_frames": self.valid_frames,
            "cell_accuracy": rate(self.correct_cells, self.cells),
            "commits": self.commits,
            "board_exact_match": rate(self.exact_commits, self.commits),
            "filter_delay_ms_p50": float(np.percentile(delays_ms, 50)) if delays_ms.size else None,
            "filter_delay_ms_p99": float(np.percentile(delays_ms, 99)) if delays_ms.size else None,
            "spawn_events": self.spawn_events,
            "piece_accuracy": rate(self.right_piece_spawns, self.spawn_events),
            "piece_read_accuracy": rate(self.correct_reads, self.piece_reads),
            "false_spawns": self.false_spawns,
            "missed_spawns": self.missed_spawns,
            "spawns_due": self.spawns_due,
            "unsure_frames": self.flagged["unsure"],
            "no_observation_frames": self.flagged["no_observation"],
            "tracker_status": dict(sorted(self.tracker_status.items())),
            "events": {kind: self.events[kind] for kind in EVENT_KINDS},
            "true_events": {kind: self.true_events[kind] for kind in EVENT_KINDS},
            "preview_found_rate": rate(self.preview_found, self.preview_scenes),
            "next_piece_accuracy": rate(self.next_correct, self.next_frames),
            "next_piece_wrong": self.next_wrong,
            "cell_looks": {look: self.cell_looks[look] for look in CELL_LOOKS},
            "hard": {
                kind: {what: self.hard[kind, what] for what in ("frames", "flagged", "commits", "wrong_commits")}
                for kind in HARD_KINDS
            },
        }


class _SpawnJudge:
    """Tells true spawn events from false ones and counts the spawns the tracker missed."""

    def __init__(self, k: int) -> None:
        self.need = k + 2  # whole-piece play frames before a missing spawn event counts as missed
        self.last_true = 0
        self.spawned: set[int] = set()  # pieces whose spawn was filmed
        self.whole_frames: Counter = Counter()
        self.reported: set[int] = set()
        self.in_first_board: int | None = None  # a piece the first board shows is part of the stack read from it

    def frame(self, truth: TruthFrame, play: bool, events: tuple[Event, ...], tally: Tally) -> None:
        """Judge this frame's tracker events against the truth; ``play``: an ordinary frame."""
        if self.in_first_board is None:
            rows = truth.shown.stack_ids.shape[0]
            self.in_first_board = truth.piece_number if any(y <= rows for _, y in truth.shown.falling) else 0
        if "spawn" in truth.events:
            self.spawned.add(truth.piece_number)
        if play and truth.shown.whole_piece:
            self.whole_frames[truth.piece_number] += 1
        for event in events:
            if event.kind != "spawn":
                continue
            tally.spawn_events += 1
            tally.right_piece_spawns += event.piece == truth.shown.piece
            if truth.piece_number > self.last_true and event.piece == truth.shown.piece:
                self.last_true = truth.piece_number
                self.reported.add(truth.piece_number)
            else:
                tally.false_spawns += 1

    def finish(self, tally: Tally) -> None:
        """Count the spawns that were due and never reported."""
        due = {n for n in self.spawned if self.whole_frames[n] >= self.need and n != self.in_first_board}
        tally.spawns_due += len(due)
        tally.missed_spawns += len(due - self.reported)


@dataclass
class SceneRun:
    """Measures one scene: one skin, one camera, a stretch of play."""

    skin: Skin
    settings: CameraSettings
    rng: np.random.Generator
    background_seed: int
    latencies_s: list[float]
    pipeline_latencies_s: list[float]

    def screen(self, shown: Shown | None) -> Screen:
        """The rendered screen of a state (the empty board for None)."""
        if shown is None:
            return render(Board(), self.skin, seed=self.background_seed)
        flash = {"white": _WHITE, "grey": _GREY, "blank": None, "background": hex_to_bgr(self.skin.background.colours[0])}
        board = Board(cells=(shown.stack_ids > 0).astype(np.uint8))
        return render(
            board, self.skin, shown.falling, shown.piece, shown.next_piece, shown.stack_ids, shown.score, shown.lines,
            seed=self.background_seed,
            flash_rows=shown.flash_rows, flash_colour=flash[shown.flash],
        )

    def filmed(self, truth: TruthFrame | None, settings: CameraSettings) -> tuple[np.ndarray, np.ndarray]:
        """The filmed frame (the empty board for None; torn when the truth says so) and the
        camera's homography from screen to frame (``map_points`` takes true corners through it)."""
        screen = self.screen(None if truth is None else truth.shown)
        image = screen.image
        if truth is not None and truth.torn_from is not None:
            (_, top), _, (_, bottom), _ = screen.well_corners
            row = int(round(top + truth.tear_at * (bottom - top)))
            image = image.copy()
            image[row:] = self.screen(truth.torn_from).image[row:]
        return film(image, self.rng, settings)

    def calibration_shots(self, frames: list[TruthFrame]) -> tuple[list[np.ndarray], np.ndarray]:
        """``CALIBRATION_FRAMES`` frames spread over ``frames``, filmed, and the well's true corners in them."""
        shots = [self.filmed(truth, self.settings) for truth in _spread(frames, CALIBRATION_FRAMES)]
        return [image for image, _ in shots], map_points(shots[0][1], self.screen(None).well_corners)

    def calibration(self, frames: list[TruthFrame], tally: Tally) -> None:
        """find_well on ``calibration_shots(frames)``, against the true corners."""
        images, corners = self.calibration_shots(frames)
        fit = find_well(images)
        tally.scenes += 1
        if fit is not None:
            error = _worst_corner_error(fit.corners, corners)
            tally.corner_errors.append(error)
            tally.calibrated += error <= CORNER_TOLERANCE_PX

    def recognition(self, frames: list[TruthFrame], bump_at: int | None, k: int, tally: Tally) -> None:
        """Play ``frames`` through observe, the filter and the tracker, calibrated from the true
        corners; from frame ``bump_at`` on the camera has been bumped."""
        shots = [self.filmed(None, self.settings) for _ in range(EMPTY_FRAMES)]
        calibration = learn_empty([image for image, _ in shots], map_points(shots[0][1], self.screen(None).well_corners))
        preview = self._preview(frames[: bump_at or len(frames)], calibration, tally)
        board_filter, tracker, judge = BoardFilter(k), PieceTracker(calibration), _SpawnJudge(k)
        reader = LearningObserver(calibration)
        bumped = _bumped(self.settings, self.rng)
        shown_next: tuple[str | None, ...] = ()
        for index, truth in enumerate(frames):
            after_bump = bump_at is not None and index >= bump_at
            image, _ = self.filmed(truth, bumped if after_bump else self.settings)
            timestamp = index / FPS
            started = time.thread_time()
            observation = reader.observe(image)
            read = time.thread_time()
            next_piece = read_preview(image, preview).piece if preview is not None else None
            update = board_filter.update(observation, timestamp)
            tracked = tracker.update(update, observation, timestamp)
            self.pipeline_latencies_s.append(time.thread_time() - started)
            self.latencies_s.append(read - started)
            if preview is not None and not after_bump:
                # the box may still show the last frame's piece (a frame caught mid-redraw)
                shown_next = (truth.shown.next_piece, *shown_next[:1])
                self._count_preview(next_piece, shown_next, tally)
            play = truth.kind == "play" and not after_bump
            self._count(truth, "after_bump" if after_bump else truth.kind, observation, update, tracked, reader.calibration, tally)
            judge.frame(truth, play, tracked.events, tally)
            if not after_bump:
                tally.true_events.update(truth.events)
        judge.finish(tally)
        tally.cell_looks[reader.look] += 1

    def _preview(self, frames: list[TruthFrame], calibration: GridCalibration, tally: Tally) -> PreviewCalibration | None:
        """The preview box found (``find_preview`` on ``PREVIEW_FRAMES`` frames spread over the
        scene, as ``gamerigctl calibrate`` would) and learned, when the skin has one; counted."""
        true_box = self.screen(None).preview_corners
        if true_box is None or not frames:
            return None
        picks = _spread(frames, PREVIEW_FRAMES)
        if len({truth.shown.next_piece for truth in picks}) < 2:
            return None  # a box whose piece never changes cannot be told from the screen around it
        shots = [self.filmed(truth, self.settings) for truth in picks]
        tally.preview_scenes += 1
        corners = find_preview([image for image, _ in shots], calibration.corners)
        if corners is None:
            return None
        tally.preview_found += _worst_corner_error(corners, map_points(shots[0][1], true_box)) <= CORNER_TOLERANCE_PX
        try:
            return learn_preview([image for image, _ in shots], corners)
        except ValueError:  # the box was found but shows nothing to learn from: no preview reading
            return None

    @staticmethod
    def _count_preview(read: str | None, shown: tuple[str | None, ...], tally: Tally) -> None:
        tally.next_frames += 1
        if read is None:
            return
        tally.next_reads += 1
        tally.next_correct += read == shown[0]
        tally.next_wrong += read not in shown

    @staticmethod
    def _count(
        truth: TruthFrame, kind: str, observation: Observation, update: FilterUpdate, tracked: TrackerUpdate,
        calibration: GridCalibration, tally: Tally,
    ) -> None:
        tally.frames += 1
        tally.tracker_status[tracked.status] += 1
        tally.events.update(event.kind for event in tracked.events)
        if update.status in ("unsure", "no_observation"):
            tally.flagged[update.status] += 1
        committed = update.status in ("committed", "resynced")
        if kind != "play":
            tally.hard[kind, "frames"] += 1
            tally.hard[kind, "flagged"] += update.status in ("unsure", "no_observation")
            tally.hard[kind, "commits"] += committed
            tally.hard[kind, "wrong_commits"] += committed and not any(np.array_equal(update.board, b) for b in truth.accepted)
            return
        tally.play_frames += 1
        if committed:
            tally.commits += 1
            tally.exact_commits += bool(np.array_equal(update.board, truth.accepted[0]))
            tally.commit_delays_s.append(update.latency_s)
        if not observation.valid:
            return
        visible = truth.accepted[0]
        tally.valid_frames += 1
        tally.cells += visible.size
        tally.correct_cells += int((observation.filled == visible).sum())
        if truth.shown.whole_piece:
            found = falling_piece(observation, truth.shown.stack_ids > 0, calibration)
            tally.piece_reads += 1
            tally.correct_reads += found is not None and found.name == truth.shown.piece


def _spread(frames: list[TruthFrame], count: int) -> list[TruthFrame]:
    """``count`` frames evenly spread from the first to the last (repeats when there are fewer)."""
    return [frames[i] for i in np.linspace(0, len(frames) - 1, count).astype(int)]


def _bumped(settings: CameraSettings, rng: np.random.Generator) -> CameraSettings:
    """The camera knocked by 2..8 px in a random direction and turned a little."""
    distance = rng.uniform(*BUMP_SHIFT_PX)
    angle = rng.uniform(0, 2 * np.pi)
    sx, sy = settings.shift_px
    return dataclasses.replace(
        settings,
        shift_px=(sx + distance * float(np.cos(angle)), sy + distance * float(np.sin(angle))),
        rotation_deg=settings.rotation_deg + float(rng.uniform(-BUMP_TURN_DEG, BUMP_TURN_DEG)),
    )


@dataclass(frozen=True)
class BenchResult:
    """Metrics over all scenes, over the held-out skins alone and per skin, and the latencies of
    observe alone and of observe + filter + tracker."""

    overall: Tally
    held_out: Tally
    by_skin: dict[str, Tally]
    latencies_s: list[float]
    pipeline_latencies_s: list[float]


def scene_count(frames: int) -> int:
    """Scenes for ``frames`` frames of play: one per FRAMES_PER_SCENE frames, every skin at least once."""
    return max(len(SKINS), -(-frames // FRAMES_PER_SCENE))


def _ends_game(scene: int) -> bool:
    return scene % GAME_OVER_EVERY == GAME_OVER_EVERY // 2 - 1


def frame_shares(frames: int, scenes: int) -> list[int]:
    """Frames of each scene: at least one each, the rest by weight (game-over scenes weigh more)."""
    weights = np.array([GAME_OVER_WEIGHT if _ends_game(s) else 1 for s in range(scenes)], dtype=np.float64)
    extra = (frames - scenes) * weights / weights.sum()
    shares = 1 + np.floor(extra).astype(int)
    for s in np.argsort(-(extra - np.floor(extra)), kind="stable")[: frames - int(shares.sum())]:
        shares[s] += 1
    return [int(v) for v in shares]


def scene_frames(play: ScenePlay, share: int, rng: np.random.Generator) -> list[TruthFrame]:
    """``share`` frames of a scene's play: from a random moment of its first piece (the camera
    starts whenever the rig does), or, for a game that ends, its end."""
    if play.style.careless:
        frames = list(islice(play.frames(), MAX_GAME_FRAMES))[-share:]
    else:
        start = int(rng.integers(START_FRAMES + 1))
        frames = list(islice(play.frames(), start, start + share))
    return with_tears(frames, rng, TEAR_RATE) if rng.random() < 0.5 else frames


@dataclass
class SceneResult:
    """One scene's counts and latencies, and the skin it was filmed in."""

    skin: Skin
    tally: Tally
    latencies_s: list[float]
    pipeline_latencies_s: list[float]


@dataclass
class Scene:
    """One scene of a run, played and ready to film: ``run`` films it, ``truth`` is its play,
    ``bump_at`` the frame the camera is knocked at (or None), ``plays`` its frames of play before that."""

    run: SceneRun
    truth: list[TruthFrame]
    bump_at: int | None
    plays: list[TruthFrame]


def scene_of(seed: int, spec: PlayerSpec, scene: int, share: int) -> Scene:
    """Scene ``scene`` of a run with ``seed``, ``share`` frames long (``frame_shares``), played."""
    rules = Rules("standard", 10, 20)
    rng = np.random.default_rng([seed, scene])
    run = SceneRun(SKINS[scene % len(SKINS)], CameraSettings.random(rng), rng, seed + scene, [], [])
    style = PlayStyle.random(rng, careless=_ends_game(scene))
    play = ScenePlay(spec, rules, seed + scene, int(rng.integers(0, MAX_SKIPPED_PIECES + 1)), style, rng)
    truth = scene_frames(play, share, rng)
    bump_at = None
    if scene % BUMP_EVERY == BUMP_EVERY - 1 and not style.careless:
        bump_at = int(len(truth) * rng.uniform(0.5, 0.9))
    plays = [t for t in truth[: bump_at or len(truth)] if t.kind == "play"] or truth[:1]
    return Scene(run, truth, bump_at, plays)


def measure_scene(seed: int, spec: PlayerSpec, k: int, scene: int, share: int) -> SceneResult:
    """Film scene ``scene`` of a run with ``seed`` for ``share`` frames and measure it."""
    played = scene_of(seed, spec, scene, share)
    tally = Tally()
    played.run.calibration(played.plays, tally)
    played.run.recognition(played.truth, played.bump_at, k, tally)
    return SceneResult(played.run.skin, tally, played.run.latencies_s, played.run.pipeline_latencies_s)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C once for everyone


def run_bench(frames: int, seed: int, spec: PlayerSpec, k: int = 2, jobs: int = 1) -> BenchResult:
    """Measure ``frames`` frames of play spread over ``scene_count(frames)`` scenes, filmed and
    measured in ``jobs`` processes.  The counts do not depend on ``jobs``; the latencies of
    jobs side by side are measured on cores they share with each other."""
    if frames < len(SKINS):
        raise ValueError(f"frames must be at least {len(SKINS)} (one per skin), got {frames}")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    measure = partial(measure_scene, seed, spec, k)
    shares = list(enumerate(frame_shares(frames, scene_count(frames))))
    if jobs == 1:
        scenes = [measure(scene, share) for scene, share in shares]
    else:
        with multiprocessing.Pool(min(jobs, len(shares)), initializer=_ignore_sigint) as pool:
            scenes = pool.starmap(measure, shares, chunksize=1)
    overall, held_out, latencies, pipeline = Tally(), Tally(), [], []
    by_skin = {skin.name: Tally() for skin in SKINS}
    for result in scenes:
        for group in (overall, by_skin[result.skin.name], *((held_out,) if result.skin.held_out else ())):
            group.add(result.tally)
        latencies += result.latencies_s
        pipeline += result.pipeline_latencies_s
    return BenchResult(overall, held_out, by_skin, latencies, pipeline)
