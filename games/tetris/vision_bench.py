"""Measure calibration and recognition on synthetic filmed scenes with ground truth.

A scene is one skin filmed by one random camera (``CameraSettings.random``).  Scene s uses
skin ``SKINS[s % len(SKINS)]`` and draws everything random from the seed and s, so a run is
reproducible and held-out skins are measured but never tuned on.

Per scene:

* calibration: ``find_well`` on one filmed frame of play; it succeeds when its worst corner
  is within ``CORNER_TOLERANCE_PX`` of the truth;
* recognition, from the TRUE corners (so it is measured independently of calibration):
  ``learn_empty`` on filmed frames of the empty board, then frames of a headless AI game
  (standard rules, 10 x 20), from a random point of the game, with every settled cell in its piece's colour.  Each piece is drawn at a few random free positions and last at
  the place the AI lands it, each position held for a few frames, every frame filmed anew.
  Frames go through ``observe`` -> ``BoardFilter(k)``.

What is counted (the truth is the visible board: the settled stack plus the falling piece):

* cell_accuracy: correct cells over all cells of valid observations;
* board_exact_match: commits (``committed`` or ``resynced``) whose board equals the truth;
* piece_accuracy: valid observations where ``falling_piece``, given the true stack, names the
  true piece (the stack tracker is not built yet; this measures the reading of the piece);
* false_spawns: at every commit the falling piece is read as above; a spawn is reported when
  that reading differs from the previous commit's (a different type, or none before); it is
  false when the truth still has the same piece falling;
* latency: thread CPU time of ``observe`` per 640 x 480 frame (the caller pins OpenCV to one
  thread).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

from .board import Board
from .calibration import find_well
from .headless import play_game
from .pieces import ORIENTATIONS, piece_index
from .placements import Placement
from .players import Decision, Player, PlayerSpec
from .recognition import GridCalibration, Observation, falling_piece, learn_empty, observe
from .render import render
from .rules import Rules
from .sequence import RandomPieces
from .skins import SKINS, Skin
from .temporal import BoardFilter

#: find_well succeeds when its worst corner is this close to the truth.
CORNER_TOLERANCE_PX = 3.0
#: Frames of the empty board averaged by learn_empty.
EMPTY_FRAMES = 4
#: Random positions of each piece before the one it lands at.
RANDOM_POSITIONS = (1, 3)
#: Frames each position is held (inclusive bounds); at least k so the filter can commit.
HOLD_FRAMES = (2, 5)
#: Play frames per scene, about: fewer frames give fewer scenes (but every skin at least once).
FRAMES_PER_SCENE = 50
#: A scene starts after up to this many pieces of its game, so it shows stacks of any height,
#: not only the nearly empty boards of a game's start.
MAX_SKIPPED_PIECES = 200
_FRAME_S = 1 / 60  # timestamps for the filter: a 60 Hz camera


@dataclass(frozen=True)
class TruthFrame:
    """One frame of play as the game really is."""

    #: Colour id of every settled cell (0 empty, see ``skins``), rows x cols, bottom row first.
    stack_ids: np.ndarray
    piece: str
    falling: tuple[tuple[int, int], ...]  # 1-based cells
    piece_number: int  # which piece of the game is falling

    @property
    def stack(self) -> np.ndarray:
        """The settled cells, rows x cols bool."""
        return self.stack_ids > 0

    def visible(self) -> np.ndarray:
        """The stack with the falling piece drawn in."""
        board = self.stack.copy()
        for x, y in self.falling:
            board[y - 1, x - 1] = True
        return board


@dataclass
class Tally:
    """Counts behind the metrics of one group of scenes."""

    scenes: int = 0
    calibrated: int = 0
    corner_errors: list[float] = field(default_factory=list)
    frames: int = 0
    valid_frames: int = 0
    cells: int = 0
    correct_cells: int = 0
    commits: int = 0
    exact_commits: int = 0
    piece_reads: int = 0
    correct_pieces: int = 0
    false_spawns: int = 0

    def add(self, other: Tally) -> None:
        """Add another tally's counts to this one."""
        for name, value in vars(other).items():
            setattr(self, name, getattr(self, name) + value)

    def metrics(self) -> dict[str, float | int | None]:
        """Rates as fractions 0..1 (None when nothing was measured)."""

        def rate(part: int, whole: int) -> float | None:
            return part / whole if whole else None

        return {
            "scenes": self.scenes,
            "frames": self.frames,
            "calibration_success_rate": rate(self.calibrated, self.scenes),
            "corner_error_px_median": float(np.median(self.corner_errors)) if self.corner_errors else None,
            "valid_frames": self.valid_frames,
            "cell_accuracy": rate(self.correct_cells, self.cells),
            "commits": self.commits,
            "board_exact_match": rate(self.exact_commits, self.commits),
            "piece_accuracy": rate(self.correct_pieces, self.piece_reads),
            "false_spawns": self.false_spawns,
        }


class _Recorder(Player):
    """A player that remembers, for every piece, the stack it fell on and where it landed."""

    def __init__(self, spec: PlayerSpec, rules: Rules) -> None:
        super().__init__(spec, rules)
        self.moves: list[tuple[np.ndarray, str, Placement]] = []

    def choose(
        self, board: Board | np.ndarray, piece: str, next_piece: str | None = None, budget_s: float | None = None
    ) -> Decision:
        """The player's decision, recorded with a copy of the stack it was made on."""
        cells = board.cells if isinstance(board, Board) else board
        decision = super().choose(board, piece, next_piece, budget_s)
        if decision.placement is not None:
            self.moves.append((cells.astype(bool), piece, decision.placement))
        return decision


def _game_moves(spec: PlayerSpec, rules: Rules, seed: int, pieces: int) -> list[tuple[np.ndarray, str, Placement]]:
    """(stack colour ids, piece, where it lands) for every piece of an AI game.

    Each landed piece keeps its colour in the stack and full clearable rows drop out, as the
    game clears them; the occupancy must match the game's own board at every move.
    """
    recorder = _Recorder(spec, rules)
    play_game(recorder, rules, RandomPieces(seed), max_pieces=pieces)
    ids = np.zeros((rules.height, rules.width), dtype=np.int8)
    moves = []
    for stack, piece, placement in recorder.moves:
        if not np.array_equal(ids > 0, stack):
            raise RuntimeError("the stack's colours lost track of the game's board")
        moves.append((ids.copy(), piece, placement))
        landed = placement.cells()
        if any(y > rules.height for _, y in landed):
            break  # the piece tops out above the visible well: the game is over for the camera
        for x, y in landed:
            ids[y - 1, x - 1] = piece_index(piece)
        full = (ids > 0).all(axis=1)
        full[rules.clearable_rows :] = False
        ids = np.vstack([ids[~full], np.zeros((int(full.sum()), rules.width), dtype=np.int8)])
    return moves


def _random_position(stack: np.ndarray, piece: str, rng: np.random.Generator) -> tuple[tuple[int, int], ...] | None:
    """A random orientation and place of ``piece`` inside the well, clear of the stack."""
    rows, cols = stack.shape
    for _ in range(20):
        offsets = ORIENTATIONS[piece][int(rng.integers(len(ORIENTATIONS[piece])))]
        x, y = int(rng.integers(1, cols + 1)), int(rng.integers(1, rows + 1))
        placed = tuple((x + dx, y + dy) for dx, dy in offsets)
        if all(1 <= cx <= cols and 1 <= cy <= rows and not stack[cy - 1, cx - 1] for cx, cy in placed):
            return placed
    return None


def play_frames(moves: list[tuple[np.ndarray, str, Placement]], rng: np.random.Generator, limit: int) -> Iterator[TruthFrame]:
    """Up to ``limit`` frames of play: each piece at a few random positions, then where it lands."""
    produced = 0
    for number, (stack_ids, piece, placement) in enumerate(moves):
        stack, landed = stack_ids > 0, tuple(placement.cells())
        if any(y > stack.shape[0] for _, y in landed):
            return  # the piece tops out above the visible well: the game is over for the camera
        tries = int(rng.integers(RANDOM_POSITIONS[0], RANDOM_POSITIONS[1] + 1))
        positions = [p for p in (_random_position(stack, piece, rng) for _ in range(tries)) if p is not None]
        for falling in [*positions, landed]:
            for _ in range(int(rng.integers(HOLD_FRAMES[0], HOLD_FRAMES[1] + 1))):
                if produced == limit:
                    return
                produced += 1
                yield TruthFrame(stack_ids, piece, falling, number)


def _worst_corner_error(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(found, dtype=np.float64) - truth, axis=1).max())


@dataclass
class SceneRun:
    """Measures one scene: one skin, one camera, a stretch of play."""

    skin: Skin
    settings: CameraSettings
    rng: np.random.Generator
    background_seed: int
    latencies_s: list[float]

    def filmed(self, frame: TruthFrame | None) -> tuple[np.ndarray, np.ndarray]:
        """The filmed frame of play (the empty board for None) and the true well corners."""
        if frame is None:
            screen = render(Board(), self.skin, seed=self.background_seed)
        else:
            board = Board(cells=frame.stack.astype(np.uint8))
            screen = render(board, self.skin, frame.falling, frame.piece, stack_ids=frame.stack_ids, seed=self.background_seed)
        image, h = film(screen.image, self.rng, self.settings)
        return image, map_points(h, screen.well_corners)

    def calibration(self, frame: TruthFrame, tally: Tally) -> None:
        """find_well on one frame of play, against the true corners."""
        image, truth = self.filmed(frame)
        fit = find_well(image)
        tally.scenes += 1
        if fit is not None:
            error = _worst_corner_error(fit.corners, truth)
            tally.corner_errors.append(error)
            tally.calibrated += error <= CORNER_TOLERANCE_PX

    def recognition(self, frames: list[TruthFrame], k: int, tally: Tally) -> None:
        """Play ``frames`` through observe and the filter, calibrated from the true corners."""
        shots = [self.filmed(None) for _ in range(EMPTY_FRAMES)]
        calibration = learn_empty([image for image, _ in shots], shots[0][1])
        board_filter = BoardFilter(k)
        last_reading: str | None = None
        last_number = -1
        for index, truth in enumerate(frames):
            image, _ = self.filmed(truth)
            started = time.thread_time()
            observation = observe(image, calibration)
            self.latencies_s.append(time.thread_time() - started)
            update = board_filter.update(observation, index * _FRAME_S)
            tally.frames += 1
            if not observation.valid:
                continue
            visible = truth.visible()
            reading = self._read_piece(observation, truth, calibration, tally)
            tally.valid_frames += 1
            tally.cells += visible.size
            tally.correct_cells += int((observation.filled == visible).sum())
            if update.status in ("committed", "resynced"):
                tally.commits += 1
                tally.exact_commits += bool(np.array_equal(update.board, visible))
                if reading != last_reading and truth.piece_number == last_number:
                    tally.false_spawns += 1
                last_reading, last_number = reading, truth.piece_number

    @staticmethod
    def _read_piece(observation: Observation, truth: TruthFrame, calibration: GridCalibration, tally: Tally) -> str | None:
        found = falling_piece(observation, truth.stack, calibration)
        name = found.name if found is not None else None
        tally.piece_reads += 1
        tally.correct_pieces += name == truth.piece
        return name


@dataclass(frozen=True)
class BenchResult:
    """Metrics over all scenes, over the held-out skins alone and per skin, and observe's latencies."""

    overall: Tally
    held_out: Tally
    by_skin: dict[str, Tally]
    latencies_s: list[float]


def scene_count(frames: int) -> int:
    """Scenes for ``frames`` frames of play: one per FRAMES_PER_SCENE frames, every skin at least once."""
    return max(len(SKINS), -(-frames // FRAMES_PER_SCENE))


def run_bench(frames: int, seed: int, spec: PlayerSpec, k: int = 2) -> BenchResult:
    """Measure ``frames`` frames of play spread over ``scene_count(frames)`` scenes."""
    if frames < len(SKINS):
        raise ValueError(f"frames must be at least {len(SKINS)} (one per skin), got {frames}")
    rules = Rules("standard", 10, 20)
    scenes = scene_count(frames)
    overall, held_out, latencies = Tally(), Tally(), []
    by_skin = {skin.name: Tally() for skin in SKINS}
    for scene in range(scenes):
        share = frames // scenes + (scene < frames % scenes)
        rng = np.random.default_rng([seed, scene])
        skin = SKINS[scene % len(SKINS)]
        run = SceneRun(skin, CameraSettings.random(rng), rng, background_seed=seed + scene, latencies_s=latencies)
        # a piece gives at most (1 + max random positions) * max hold frames; twice that many pieces is plenty
        skipped = int(rng.integers(0, MAX_SKIPPED_PIECES + 1))
        moves = _game_moves(spec, rules, seed + scene, skipped + share // 4 + 8)
        truth = list(play_frames(moves[min(skipped, len(moves) // 2) :], rng, share))
        tally = Tally()
        run.calibration(truth[len(truth) // 2], tally)
        run.recognition(truth, k, tally)
        for group in (overall, by_skin[skin.name], *((held_out,) if skin.held_out else ())):
            group.add(tally)
    return BenchResult(overall, held_out, by_skin, latencies)
