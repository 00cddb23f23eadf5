"""The target machine's game program: Standard Tetris from games/ driven frame by frame.

The machine runs a 60 Hz frame loop (see :mod:`.target`); each frame it reads the keys latched by
the keyboard and calls :meth:`GameSession.step` with them.  Keys act at once (rotate, left, right,
drop through :meth:`Game.press`; ``new_game`` restarts, ``pause`` toggles the pause); gravity runs
one :meth:`Game.iterate` every ``round(Game.delay * 60)`` frames, so level 1 falls every 30 frames
(0.50 s) and level 10 every 3 (0.05 s), exactly Fahey's delays.

Besides the occupancy board the session keeps each settled cell's piece colour (replaying the
engine's row collapse on the colour ids), so the screen can draw the stack in piece colours, and
junk rows and anything of unknown origin in the skin's "unknown" colour.

The original's calibration mode is :meth:`place_piece` (put a chosen piece at the top) and
:meth:`clear_board`.  Pure: no clock and no I/O; the caller owns time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import KEYS, Event, FallingPiece, Game, collapse_full_rows, fits
from gamerig.games.tetris.pieces import PIECE_NAMES, piece_index
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.sequence import SplitMix64, make_source
from gamerig.games.tetris.skins import UNKNOWN_PIECE_ID

FRAME_HZ: Final = 60
NEW_GAME: Final = "new_game"
PAUSE: Final = "pause"
SEQUENCES: Final = ("random", "fixed", "sz")


@dataclass(frozen=True)
class GameOptions:
    """How the target machine's game is set up (the original's menu)."""

    level: int = 1
    preview: bool = True
    #: 'random' (seeded), 'fixed' (``pieces`` repeated) or 'sz' (S, Z, S, Z, ...).
    sequence: str = "random"
    pieces: str = ""
    seed: int = 0
    width: int = 10
    height: int = 20

    def __post_init__(self) -> None:
        if self.sequence not in SEQUENCES:
            raise ValueError(f"sequence must be one of {', '.join(SEQUENCES)}, got {self.sequence!r}")
        if not 1 <= self.level <= 10:
            raise ValueError(f"level must be 1..10, got {self.level}")
        make_source(self.sequence, self.seed, self.pieces)  # a fixed sequence must be valid now
        Rules("standard", self.width, self.height)


def gravity_frames(delay: float) -> int:
    """Frames between free-fall iterations for an iteration delay in seconds (at least one)."""
    return max(1, round(delay * FRAME_HZ))


class GameSession:
    """One target machine's game, from power-on through any number of new games."""

    def __init__(self, options: GameOptions = GameOptions()) -> None:
        self.options = options
        self.rules = Rules("standard", options.width, options.height)
        self._junk_rng = SplitMix64(options.seed ^ 0x5EED)
        self.games_started = 0
        self.pieces_spawned = 0  # over all games: what faults at a piece count
        self.paused = False
        self.new_game()

    def new_game(self) -> None:
        """Start a fresh game on an empty board; game n of a session uses piece seed ``seed + n``."""
        o = self.options
        source = make_source(o.sequence, o.seed + self.games_started, o.pieces)
        self.game = Game(self.rules, source, preview=o.preview, initial_level=o.level)
        self.colour_ids = np.zeros((o.height, o.width), dtype=np.uint8)
        self.games_started += 1
        self.paused = False
        self._gravity_in = gravity_frames(self.game.delay)

    def step(self, keys: list[str]) -> tuple[list[str], list[Event]]:
        """One frame: apply the keys read this frame, then gravity if it is due.

        Returns the keys that acted (game keys while paused or unknown keys do nothing) and the
        game's events.
        """
        acted: list[str] = []
        events: list[Event] = []
        for key in keys:
            if key == NEW_GAME:
                self.new_game()
            elif key == PAUSE:
                self.paused = not self.paused
            elif key in KEYS and not self.paused and not self.game.over:
                events += self._track(self.game.press(key))  # type: ignore[arg-type]
            else:
                continue
            acted.append(key)
        if not self.paused and not self.game.over:
            self._gravity_in -= 1
            if self._gravity_in <= 0:
                events += self._track(self.game.iterate())
                self._gravity_in = gravity_frames(self.game.delay)
        return acted, events

    def add_junk_rows(self, count: int) -> None:
        """Lift the pile by ``count`` junk rows (the engine's junk, drawn in the unknown colour)."""
        self.game.add_junk_rows(count, self._junk_rng)
        ids = self.colour_ids
        n = min(count, ids.shape[0])
        if n:
            ids[n:] = ids[:-n].copy()
            ids[:n] = self.game.board.cells[:n] * UNKNOWN_PIECE_ID

    def place_piece(self, kind: str) -> None:
        """Calibration: put ``kind`` at the top in its spawn orientation, replacing the piece in play."""
        if kind not in PIECE_NAMES:
            raise ValueError(f"piece must be one of {PIECE_NAMES}, got {kind!r}")
        piece = FallingPiece(kind, 1, self.rules.spawn_x, self.rules.spawn_y)
        if not fits(self.game.board, piece.cells()):
            raise ValueError(f"piece {kind} does not fit at the top of the board; clear the board first")
        self.game.piece = piece
        self.game.free_fall_iterations = 0
        self._gravity_in = gravity_frames(self.game.delay)

    def clear_board(self) -> None:
        """Calibration: empty the board (the piece in play stays)."""
        self.game.board.clear()
        self.colour_ids[:] = 0

    def stack_ids(self) -> np.ndarray:
        """Colour id of each settled cell (0 empty), ``[y, x]`` bottom row first, as int8."""
        return self.colour_ids.astype(np.int8)

    def _track(self, events: list[Event]) -> list[Event]:
        """Count spawns; replay each landing on the colour ids: the piece's cells, then the same row collapse."""
        for event in events:
            if event.kind == "spawned":
                self.pieces_spawned += 1
            elif event.kind == "landed":
                for x, y in event.cells:
                    if 1 <= y <= self.rules.height:
                        self.colour_ids[y - 1, x - 1] = piece_index(event.piece)
                collapse_full_rows(Board(cells=self.colour_ids), self.rules.clearable_rows)
        return events
