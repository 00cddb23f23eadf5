"""Headless AI play at full speed: the loop behind benchmarks, tuning and the demo."""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import kernel
from .placements import kind_of
from .players import Clock, Player
from .rules import Rules, actual_level, point_award
from .sequence import PieceSource


@dataclass
class GameResult:
    """What one headless game did."""

    lines: int = 0
    pieces: int = 0
    score: int = 0
    ended_by: str = "game over"  # or "max lines", "max pieces"
    elapsed_s: float = 0.0
    #: height_histogram[h] = placements after which the pile was h rows high
    height_histogram: list[int] = field(default_factory=list)
    #: seconds each decision took, in order
    decision_s: array = field(default_factory=lambda: array("d"))


@dataclass
class GameView:
    """What a progress callback sees after each placement (the live board is shared, not copied)."""

    cells: np.ndarray
    piece: str
    next_piece: str | None
    result: GameResult
    level: int


def play_game(
    player: Player,
    rules: Rules,
    source: PieceSource,
    preview: bool = False,
    max_lines: int | None = None,
    max_pieces: int | None = None,
    initial_level: int = 1,
    on_piece: Callable[[GameView], None] | None = None,
    clock: Clock = time.perf_counter,
) -> GameResult:
    """Play one game to its end (or a cap) with placements applied directly.

    Applying the chosen placement equals pressing its keys in the engine (the
    property tests check that), so this loop skips the key-by-key simulation.
    Under standard rules each piece falls one row before its keys are pressed,
    which costs one free-fall iteration in the score (none for a piece that
    could not fall and landed where it spawned).
    """
    cells = np.zeros((rules.height, rules.width), dtype=np.uint8)
    heights = np.zeros(rules.width, dtype=np.int64)
    result = GameResult(height_histogram=[0] * (rules.height + 1))
    hist = result.height_histogram
    standard = rules.name == "standard"
    clearable = rules.clearable_rows
    level = actual_level(0, initial_level)
    started = clock()
    piece = source.next()
    while True:
        next_piece = source.peek() if preview else None
        decision = player.choose(cells, piece, next_piece)
        placement = decision.placement
        if placement is None:  # the piece cannot spawn (standard) or fit anywhere (simplified)
            break
        result.decision_s.append(decision.elapsed_s)
        kind = kind_of(piece)
        lines, pile = kernel.settle(cells, kind, placement.rotations, placement.x - 1, placement.y - 1, clearable, heights)
        result.pieces += 1
        # Standard Tetris: one free-fall row before the keys, unless the piece could not fall.
        falls = 1 if standard and placement.y < rules.spawn_y else 0
        result.score += point_award(level, falls)
        result.lines += lines
        level = actual_level(result.lines, initial_level)
        hist[pile] += 1
        piece = source.next()
        if on_piece is not None:
            on_piece(GameView(cells, piece, source.peek() if preview else None, result, level))
        if max_lines is not None and result.lines >= max_lines:
            result.ended_by = "max lines"
            break
        if max_pieces is not None and result.pieces >= max_pieces:
            result.ended_by = "max pieces"
            break
    result.elapsed_s = clock() - started
    return result
