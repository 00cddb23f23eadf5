"""Synthetic Tetris play with ground truth, frame by frame, for the vision benchmark and tests.

The play: a Standard Tetris game (10 x 20) in the engine, key by key, as a 60 Hz camera sees
it, from a stack left by a given number of the AI's pieces (stacks of any height).  Each piece spawns at the top (in half of
the scenes it first shows one row higher, partly above the well), falls one row per gravity
period of the scene's level (7..10: 12 to 3 frames a row), and is rotated and shifted by the
AI's keys, one every 2..4 frames; it then either drops at once or falls row by row to its
place, and locks.  Full rows collapse; the next piece spawns one gravity period later.  The
preview box, when the skin has one, shows the next piece, and score and lines counters beside
the well change as the game scores.  Every state is held for the frames it lasts and every
frame is filmed anew.

Hard frames, as the style asks:

* line clear: for 2..6 frames before they collapse, full rows flash (white, blank, or the
  background colour, alternating with their normal look) or empty from the centre outwards
  (the NES wipe), per scene;
* tear: a screen change filmed half-drawn, the new screen above a random row of the well and
  the old one below it;
* game over: a careless ``PlayStyle`` plays (random placements) on a pile raised by junk rows
  until a piece cannot spawn; the well then fills with grey from the bottom, a row every 2
  frames, and stays grey for ``GAME_OVER_HOLD_S`` (longer than the tracker waits before it
  calls the game over).

Pure and deterministic given the seed and the generator: no I/O, no clocks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .board import Board
from .engine import DROP, Game, Event as GameEvent
from .pieces import piece_index
from .placements import enumerate_placements
from .players import Player, PlayerSpec
from .rules import Rules
from .sequence import RandomPieces, SplitMix64

#: The game's level (inclusive bounds): its gravity period is (11 - level) * 3 frames at 60 Hz.
LEVELS = (7, 10)
#: Frames between two key presses of the player (inclusive bounds).
KEY_FRAMES = (2, 4)
#: Chance that a piece ends with a drop key rather than falling row by row to its place.
HARD_DROP = 0.7
#: Frames of a line-clear animation (inclusive bounds).
FLASH_FRAMES = (2, 6)
#: The game-over fill: frames per grey row, then seconds the grey well stays.
FILL_FRAMES_PER_ROW = 2
GAME_OVER_HOLD_S = 3.5
#: Rows the careless game's pile is raised to with junk before its play.
JUNK_PILE_ROWS = 13
FPS = 60
Cell = tuple[int, int]
Flash = Literal["white", "blank", "background", "grey"]
#: How full rows go: flashing (white, blank, the background colour) or wiped from the centre out.
ClearAnimation = Literal["white", "blank", "background", "wipe"]
FrameKind = Literal["play", "line_clear", "tear", "game_over"]
#: The kinds of truth events, as the tracker names its events.
EVENT_KINDS = ("spawn", "landed", "rows_cleared", "game_over")


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
            # the grey rows are filled cells on the screen: reading them so is right, not a misread
            screen_board = last.board()
            screen_board[:filled] = True
            yield TruthFrame(grey, self.number, "game_over", (last.board(), screen_board))


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
