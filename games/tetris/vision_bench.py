"""Measure calibration, recognition and piece tracking on synthetic filmed play with ground truth.

A scene is one skin filmed by one random camera (``CameraSettings.random``).  Scene s uses
skin ``SKINS[s % len(SKINS)]`` and draws everything random from the seed and s, so a run is
reproducible and held-out skins are measured but never tuned on.

The play: a Standard Tetris game (10 x 20) in the engine, key by key, as a 60 Hz camera sees
it.  The scene starts after a random number of the AI's pieces (stacks of any height), and
filming starts up to ``START_FRAMES`` frames later.  Each piece spawns at the top (in half of
the scenes it first shows one row higher, partly above the well), falls one row per gravity
period of the scene's level (7..10: 12 to 3 frames a row), and is rotated and shifted by the
AI's keys, one every 2..4 frames; it then either drops at once or falls row by row to its
place, and locks.  Full rows collapse; the next piece spawns one gravity period later.  The
preview box, when the skin has one, shows the next piece, and score and lines counters beside
the well change as the game scores.  Every state is held for the frames it lasts and every
frame is filmed anew.

Hard frames, each in a share of the scenes:

* line clear: for 2..6 frames before they collapse, full rows flash (white, blank, or the
  background colour, alternating with their normal look) or empty from the centre outwards
  (the NES wipe), per scene;
* tear: a screen change filmed half-drawn, the new screen above a random row of the well and
  the old one below it;
* bump: from a random frame in the second half of the scene on, the camera is shifted by
  2..8 px and turned by up to 0.5 degrees, and stays there;
* game over: one scene in ``GAME_OVER_EVERY`` (the tenth of every twenty, so a run of one
  scene per skin has one) plays carelessly (random placements) on a pile raised by junk rows
  until a piece cannot spawn; the well then fills with grey from the bottom, a row every 2
  frames, and stays grey for ``GAME_OVER_HOLD_S`` (longer than the tracker waits before it
  calls the game over).  These scenes get ``GAME_OVER_WEIGHT`` times the frames of the others,
  and show the end of their play.

Per scene:

* calibration: ``find_well`` on one filmed frame of play; it succeeds when its worst corner
  is within ``CORNER_TOLERANCE_PX`` of the truth;
* recognition, from the TRUE corners (so it is measured independently of calibration):
  ``learn_empty`` on filmed frames of the empty board, then every frame through ``observe``
  -> ``BoardFilter(k)`` -> ``PieceTracker``.

What is counted.  A play frame is an ordinary frame before any bump; its truth is the visible
board (settled stack plus the falling piece's cells inside the well).

* cell_accuracy: correct cells over all cells of valid observations of play frames;
* board_exact_match: commits (``committed`` or ``resynced``) on play frames whose board equals
  the truth;
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
  the last board; after a bump: the true board), else wrong;
* latency: thread CPU time of ``observe`` per 640 x 480 frame (the caller pins OpenCV to one
  thread), and of ``observe`` + filter + tracker.

The tracker may also report the piece already falling when filming starts: a true spawn event
(the piece is new to it) with no spawn in the truth's events, so spawn events can outnumber
true_events' spawns without any being false.

Measured (2 Dec 2026, working tree at commit abc57a0, ``gamerigctl bench vision --frames 2000
--seed 0 --json`` on the shared 2-core machine): 42.8 s wall, 25.9 s CPU, so 10,000 frames
take about 2.2 minutes of one core.  20 scenes; calibration 60% within 3 px (median worst
corner 1.79 px; find_well is being improved); on 1533 play frames cell accuracy and board
exact match (325 commits) 100%; 50 spawn events, piece accuracy 100%, 0 false and 0 missed
spawns; hard frames: line clear 61 (3 right commits), tear 37 (1 right commit), after a bump
107 (all flagged), game over 262 (242 flagged, 4 wrong commits: the grey fill's first rows
add at most four cells at a time, so the filter commits them); observe p50 0.49 ms, p99
0.97 ms; with filter and tracker p50 0.57 ms, p99 1.23 ms.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Literal

import numpy as np

from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

from .board import Board
from .calibration import find_well
from .engine import DROP, Game, Event as GameEvent
from .pieces import piece_index
from .placements import enumerate_placements
from .players import Player, PlayerSpec
from .recognition import GridCalibration, Observation, falling_piece, learn_empty, observe
from .render import BGR, Screen, hex_to_bgr, render
from .rules import Rules
from .sequence import RandomPieces, SplitMix64
from .skins import SKINS, Skin
from .temporal import BoardFilter, FilterUpdate
from .tracker import Event, PieceTracker, TrackerUpdate

#: find_well succeeds when its worst corner is this close to the truth.
CORNER_TOLERANCE_PX = 3.0
#: Frames of the empty board averaged by learn_empty.
EMPTY_FRAMES = 4
#: Play frames per scene, about: fewer frames give fewer scenes (but every skin at least once).
FRAMES_PER_SCENE = 100
#: A scene starts after up to this many of the AI's pieces, so it shows stacks of any height.
MAX_SKIPPED_PIECES = 200
#: Filming starts up to this many frames into the scene's play (mid-flight, or at a spawn).
START_FRAMES = 30
#: The game's level (inclusive bounds): its gravity period is (11 - level) * 3 frames at 60 Hz.
LEVELS = (7, 10)
#: Frames between two key presses of the player (inclusive bounds).
KEY_FRAMES = (2, 4)
#: Chance that a piece ends with a drop key rather than falling row by row to its place.
HARD_DROP = 0.7
#: Frames of a line-clear animation (inclusive bounds).
FLASH_FRAMES = (2, 6)
#: Share of screen changes filmed half-drawn, in the scenes that tear.
TEAR_RATE = 0.15
#: Camera bumps: shift (inclusive bounds, px) and largest turn (degrees); one scene in BUMP_EVERY.
BUMP_SHIFT_PX = (2.0, 8.0)
BUMP_TURN_DEG = 0.5
BUMP_EVERY = 5
#: One scene in GAME_OVER_EVERY ends its game, with GAME_OVER_WEIGHT times the others' frames.
GAME_OVER_EVERY = 20
GAME_OVER_WEIGHT = 4
#: The game-over fill: frames per grey row, then seconds the grey well stays.
FILL_FRAMES_PER_ROW = 2
GAME_OVER_HOLD_S = 3.5
#: Rows the careless game's pile is raised to with junk before its play.
JUNK_PILE_ROWS = 13
#: A careless game is cut after this many frames if it has not ended (it ends long before).
MAX_GAME_FRAMES = 50_000
FPS = 60

Cell = tuple[int, int]
Flash = Literal["white", "blank", "background", "grey"]
#: How full rows go: flashing (white, blank, the background colour) or wiped from the centre out.
ClearAnimation = Literal["white", "blank", "background", "wipe"]
FrameKind = Literal["play", "line_clear", "tear", "game_over"]
HARD_KINDS = ("line_clear", "tear", "game_over", "after_bump")
EVENT_KINDS = ("spawn", "landed", "rows_cleared", "game_over")
_GREY: BGR = (128, 128, 128)
_WHITE: BGR = (255, 255, 255)


@dataclass(frozen=True)
class Shown:
    """What the game's screen shows in one state."""

    #: Colour id of every settled cell (0 empty, see ``skins``), rows x cols, bottom row first.
    stack_ids: np.ndarray
    piece: str | None = None
    falling: tuple[Cell, ...] = ()  # 1-based cells; rows above the well are not drawn
    flash_rows: tuple[int, ...] = ()  # 1-based rows drawn as ``flash`` says
    flash: Flash = "blank"
    next_piece: str | None = None  # in the preview box, when the skin has one
    score: int = 0  # the counters beside the well
    lines: int = 0

    def board(self) -> np.ndarray:
        """The settled stack with the falling piece's cells inside the well, rows x cols bool."""
        board = self.stack_ids > 0
        for x, y in self.falling:
            if y <= board.shape[0]:
                board[y - 1, x - 1] = True
        return board

    @property
    def whole_piece(self) -> bool:
        """A piece is falling and all its cells are inside the well."""
        return self.piece is not None and all(y <= self.stack_ids.shape[0] for _, y in self.falling)


@dataclass(frozen=True)
class TruthFrame:
    """One filmed frame of play as the game really is."""

    shown: Shown
    #: How many pieces of this scene's game have appeared so far (the falling one included).
    piece_number: int
    kind: FrameKind = "play"
    #: Boards a commit on this frame may show; the first is the game's board now.
    accepted: tuple[np.ndarray, ...] = ()
    #: Truth events that happen on this frame (the kinds of ``EVENT_KINDS``).
    events: tuple[str, ...] = ()
    #: A tear: the screen below ``tear_at`` (a fraction of the well's height) still shows this.
    torn_from: Shown | None = None
    tear_at: float = 0.0


@dataclass(frozen=True)
class PlayStyle:
    """How one scene's game is played and drawn."""

    level: int
    key_frames: int
    hidden_spawn: bool
    clear_animation: ClearAnimation | None  # None: full rows collapse at once
    flash_frames: int
    careless: bool  # random placements, on a raised pile: the game will end

    @classmethod
    def random(cls, rng: np.random.Generator, careless: bool) -> PlayStyle:
        """A style drawn from the module's bounds."""
        animations: tuple[ClearAnimation | None, ...] = (None, "white", "blank", "background", "wipe")
        return cls(
            level=int(rng.integers(LEVELS[0], LEVELS[1] + 1)),
            key_frames=int(rng.integers(KEY_FRAMES[0], KEY_FRAMES[1] + 1)),
            hidden_spawn=bool(rng.random() < 0.5),
            clear_animation=animations[int(rng.integers(len(animations)))],
            flash_frames=int(rng.integers(FLASH_FRAMES[0], FLASH_FRAMES[1] + 1)),
            careless=careless,
        )


def _settle(ids: np.ndarray, cells: tuple[Cell, ...], piece: str, clearable: int) -> tuple[np.ndarray, tuple[int, ...], np.ndarray]:
    """A piece locked into the colour ids: (ids with the piece, full clearable rows 1-based, ids
    after the collapse), removing rows as the engine's ``collapse_full_rows`` does."""
    locked = ids.copy()
    for x, y in cells:
        locked[y - 1, x - 1] = piece_index(piece)
    full = (locked > 0).all(axis=1)
    full[clearable:] = False
    kept = locked[~full]
    collapsed = np.vstack([kept, np.zeros((int(full.sum()), ids.shape[1]), dtype=ids.dtype)])
    return locked, tuple(int(r) + 1 for r in np.flatnonzero(full)), collapsed


def _wiped(shown: Shown, rows: tuple[int, ...], done: float) -> Shown:
    """``shown`` with the fraction ``done`` of each of ``rows`` emptied from the centre outwards
    (the NES line-clear animation)."""
    ids = shown.stack_ids.copy()
    cols = ids.shape[1]
    half = int(np.ceil(done * cols / 2))
    ids[[row - 1 for row in rows], cols // 2 - half : cols // 2 + half] = 0
    return dataclasses.replace(shown, stack_ids=ids)


class ScenePlay:
    """One scene's game, played by the AI (or carelessly) key by key, as frames of truth."""

    def __init__(self, spec: PlayerSpec, rules: Rules, seed: int, skipped: int, style: PlayStyle, rng: np.random.Generator) -> None:
        self.rules, self.style, self.rng = rules, style, rng
        self.player = Player(spec, rules)
        self.ids = self._unfilmed_stack(RandomPieces(seed), skipped)
        board = Board(rules.width, rules.height, cells=(self.ids > 0).astype(np.uint8))
        self.game = Game(rules, RandomPieces(seed + 1), initial_level=style.level, board=board)
        self.seed = seed
        self.number = 0
        if style.careless:
            self._raise_pile()

    # ---- the game without a camera --------------------------------------------------

    def _unfilmed_stack(self, source: RandomPieces, pieces: int) -> np.ndarray:
        """The colour ids of the stack after ``pieces`` of the AI's pieces, each placed where
        its keys take it (as the headless loop does; the empty well if the game ends first)."""
        ids = np.zeros((self.rules.height, self.rules.width), dtype=np.int8)
        for _ in range(pieces):
            piece = source.next()
            placement = self.player.choose((ids > 0).astype(np.uint8), piece).placement
            if placement is None or any(y > self.rules.height for _, y in placement.cells()):
                return np.zeros_like(ids)
            ids = _settle(ids, tuple(placement.cells()), piece, self.rules.clearable_rows)[2]
        return ids

    def _raise_pile(self) -> None:
        """Junk rows under the pile, up to JUNK_PILE_ROWS high, in random piece colours."""
        height = int(np.flatnonzero((self.ids > 0).any(axis=1)).max() + 1) if self.ids.any() else 0
        count = max(0, JUNK_PILE_ROWS - height)
        self.game.add_junk_rows(count, SplitMix64(int(self.rng.integers(1 << 31))))
        colours = self.rng.integers(1, 8, size=(count, self.rules.width)).astype(np.int8)
        self.ids = np.vstack([self.game.board.cells[:count].astype(np.int8) * colours, self.ids[: self.rules.height - count]])
        self._check()

    def _keys(self) -> list[str]:
        """The keys for the piece in play: the AI's placement, or a random one when careless."""
        assert self.game.piece is not None
        if self.style.careless:
            options = enumerate_placements(self.game.board, self.game.piece.kind, self.rules)
            return list(options[int(self.rng.integers(len(options)))].keys) if options else []
        placement = self.player.choose(self.game.board, self.game.piece.kind).placement
        return list(placement.keys) if placement is not None else []

    def _lock(self, events: list[GameEvent]) -> tuple[np.ndarray, tuple[int, ...]]:
        """Follow a landing in the colour ids; returns the ids before the collapse and the full rows."""
        landed = next(e for e in events if e.kind == "landed")
        locked, full, self.ids = _settle(self.ids, landed.cells, landed.piece, self.rules.clearable_rows)
        self._check()
        return locked, full

    def _check(self) -> None:
        if not np.array_equal(self.ids > 0, self.game.board.cells > 0):
            raise RuntimeError("the stack's colours lost track of the game's board")

    # ---- the game as the camera sees it ----------------------------------------------

    def _frame(self, shown: Shown, kind: FrameKind = "play", events: tuple[str, ...] = ()) -> TruthFrame:
        return TruthFrame(shown, self.number, kind, (shown.board(),), events)

    def _shown(self, ids: np.ndarray | None = None) -> Shown:
        """The screen now: ``ids`` (the current stack by default), the piece in play and the preview."""
        piece = self.game.piece if ids is None else None
        stack = (self.ids if ids is None else ids).copy()
        shown = Shown(stack, next_piece=self.game.source.peek(), score=self.game.score, lines=self.game.lines)
        return shown if piece is None else dataclasses.replace(shown, piece=piece.kind, falling=piece.cells())

    def _gravity_frames(self) -> int:
        return max(1, round(self.game.delay * FPS))

    def frames(self) -> Iterator[TruthFrame]:
        """The game's frames, piece after piece.  A careless game's frames end with its game-over
        animation; the AI's go on, in a new game if one ends."""
        while True:
            gravity = self._gravity_frames()
            self.game.iterate()
            if self.game.over:
                yield from self._game_over(gravity)
                if self.style.careless:
                    return
                # the AI's game ended: the player starts a new one, as the rig would
                self.seed += 1
                self.game = Game(self.rules, RandomPieces(self.seed + 1), initial_level=self.style.level)
                self.ids = np.zeros_like(self.ids)
                continue
            assert self.game.piece is not None
            self.number += 1
            keys = self._keys()
            if keys and keys[-1] == DROP and self.rng.random() >= HARD_DROP:
                keys.pop()  # let gravity bring it down
            spawn: tuple[str, ...] = ("spawn",)
            if self.style.hidden_spawn:
                above = self._shown()
                above = dataclasses.replace(above, falling=tuple((x, y + 1) for x, y in above.falling))
                for _ in range(gravity):
                    yield self._frame(above, events=spawn)
                    spawn = ()
            yield from self._flight(keys, gravity, spawn)

    def _flight(self, keys: list[str], gravity: int, spawn: tuple[str, ...]) -> Iterator[TruthFrame]:
        """The piece from its spawn to its lock (and the rows it clears), one frame at a time."""
        to_gravity, to_key = gravity, None  # keys start once the piece has fallen a row
        events: list[GameEvent] = []
        shown = self._shown()
        while True:
            yield self._frame(shown, events=spawn)
            spawn = ()
            to_gravity -= 1
            to_key = None if to_key is None else to_key - 1
            if to_key == 0 and keys:
                events, to_key = self.game.press(keys.pop(0)), self.style.key_frames
            elif to_gravity <= 0:
                events, to_gravity = self.game.iterate(), gravity
                to_key = self.style.key_frames if to_key is None else to_key
            else:
                continue
            if any(e.kind == "landed" for e in events):
                break
            shown = self._shown()
        locked, full = self._lock(events)
        landing = ("landed", "rows_cleared") if full else ("landed",)
        after = self.ids.copy()
        animation = self.style.clear_animation
        if full and animation is not None:
            before = self._shown(locked)
            for k in range(self.style.flash_frames):
                if animation == "wipe":
                    shown = _wiped(before, full, (k + 1) / self.style.flash_frames)
                else:
                    shown = dataclasses.replace(before, flash_rows=full, flash=animation) if k % 2 == 0 else before
                yield TruthFrame(shown, self.number, "line_clear", (before.board(), after > 0), landing)
                landing = ()
        for _ in range(self._gravity_frames()):  # the well without a piece until the next spawn
            yield self._frame(self._shown(after), events=landing)
            landing = ()

    def _game_over(self, gravity: int) -> Iterator[TruthFrame]:
        """The last board, then the well filling with grey from the bottom, and staying grey."""
        last = self._shown()
        events: tuple[str, ...] = ("game_over",)
        for _ in range(gravity):
            yield self._frame(last, "game_over", events)
            events = ()
        fills = [filled for filled in range(1, self.rules.height + 1) for _ in range(FILL_FRAMES_PER_ROW)]
        fills += [self.rules.height] * int(GAME_OVER_HOLD_S * FPS)
        for filled in fills:
            grey = dataclasses.replace(last, flash_rows=tuple(range(1, filled + 1)), flash="grey")
            yield TruthFrame(grey, self.number, "game_over", (last.board(),))


def with_tears(frames: list[TruthFrame], rng: np.random.Generator, rate: float) -> list[TruthFrame]:
    """``frames`` with a share ``rate`` of the screen changes between play frames filmed half-drawn."""
    out = list(frames)
    for i in range(1, len(out)):
        old, new = out[i - 1], out[i]
        changed = not np.array_equal(old.accepted[0], new.accepted[0])
        if old.kind == new.kind == "play" and changed and rng.random() < rate:
            tear_at = float(rng.uniform(0.05, 0.95))
            out[i] = dataclasses.replace(new, kind="tear", accepted=(*new.accepted, old.accepted[0]), torn_from=old.shown, tear_at=tear_at)
    return out


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
        true well corners in it."""
        screen = self.screen(None if truth is None else truth.shown)
        image = screen.image
        if truth is not None and truth.torn_from is not None:
            (_, top), _, (_, bottom), _ = screen.well_corners
            row = int(round(top + truth.tear_at * (bottom - top)))
            image = image.copy()
            image[row:] = self.screen(truth.torn_from).image[row:]
        frame, h = film(image, self.rng, settings)
        return frame, map_points(h, screen.well_corners)

    def calibration(self, frame: TruthFrame, tally: Tally) -> None:
        """find_well on one frame of play, against the true corners."""
        image, truth = self.filmed(frame, self.settings)
        fit = find_well(image)
        tally.scenes += 1
        if fit is not None:
            error = _worst_corner_error(fit.corners, truth)
            tally.corner_errors.append(error)
            tally.calibrated += error <= CORNER_TOLERANCE_PX

    def recognition(self, frames: list[TruthFrame], bump_at: int | None, k: int, tally: Tally) -> None:
        """Play ``frames`` through observe, the filter and the tracker, calibrated from the true
        corners; from frame ``bump_at`` on the camera has been bumped."""
        shots = [self.filmed(None, self.settings) for _ in range(EMPTY_FRAMES)]
        calibration = learn_empty([image for image, _ in shots], shots[0][1])
        board_filter, tracker, judge = BoardFilter(k), PieceTracker(calibration), _SpawnJudge(k)
        bumped = _bumped(self.settings, self.rng)
        for index, truth in enumerate(frames):
            after_bump = bump_at is not None and index >= bump_at
            image, _ = self.filmed(truth, bumped if after_bump else self.settings)
            timestamp = index / FPS
            started = time.thread_time()
            observation = observe(image, calibration)
            read = time.thread_time()
            update = board_filter.update(observation, timestamp)
            tracked = tracker.update(update, observation, timestamp)
            self.pipeline_latencies_s.append(time.thread_time() - started)
            self.latencies_s.append(read - started)
            play = truth.kind == "play" and not after_bump
            self._count(truth, "after_bump" if after_bump else truth.kind, observation, update, tracked, calibration, tally)
            judge.frame(truth, play, tracked.events, tally)
            if not after_bump:
                tally.true_events.update(truth.events)
        judge.finish(tally)

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


def run_bench(frames: int, seed: int, spec: PlayerSpec, k: int = 2) -> BenchResult:
    """Measure ``frames`` frames of play spread over ``scene_count(frames)`` scenes."""
    if frames < len(SKINS):
        raise ValueError(f"frames must be at least {len(SKINS)} (one per skin), got {frames}")
    rules = Rules("standard", 10, 20)
    scenes = scene_count(frames)
    overall, held_out, latencies, pipeline = Tally(), Tally(), [], []
    by_skin = {skin.name: Tally() for skin in SKINS}
    for scene, share in enumerate(frame_shares(frames, scenes)):
        rng = np.random.default_rng([seed, scene])
        skin = SKINS[scene % len(SKINS)]
        run = SceneRun(skin, CameraSettings.random(rng), rng, seed + scene, latencies, pipeline)
        style = PlayStyle.random(rng, careless=_ends_game(scene))
        play = ScenePlay(spec, rules, seed + scene, int(rng.integers(0, MAX_SKIPPED_PIECES + 1)), style, rng)
        truth = scene_frames(play, share, rng)
        bump_at = None
        if scene % BUMP_EVERY == BUMP_EVERY - 1 and not style.careless:
            bump_at = int(len(truth) * rng.uniform(0.5, 0.9))
        plays = [i for i, t in enumerate(truth[: bump_at or len(truth)]) if t.kind == "play"] or [0]
        tally = Tally()
        run.calibration(truth[plays[len(plays) // 2]], tally)
        run.recognition(truth, bump_at, k, tally)
        for group in (overall, by_skin[skin.name], *((held_out,) if skin.held_out else ())):
            group.add(tally)
    return BenchResult(overall, held_out, by_skin, latencies, pipeline)
