"""Rule sets and Standard Tetris's level, speed and score formulas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RulesName = Literal["standard", "simplified"]

MIN_WIDTH, MAX_WIDTH = 4, 200
MIN_HEIGHT, MAX_HEIGHT = 4, 400


@dataclass(frozen=True)
class Rules:
    """Which game is played.

    ``standard`` is Fahey's Standard Tetris: pieces spawn at (1 + W/2, H) and are
    moved at row H-1 (rotations first, then single-column translations, each
    step checked), then dropped; the game ends when a new piece does not fit.

    ``simplified`` is the research literature's game (MDPTetris, BCTS,
    El-Tetris): every orientation and column is dropped straight from above and
    the game ends when a piece sticks out above row H (before its rows clear).

    ``clear_top_row``: Fahey's ``CollapseAnyCompletedRows`` scans rows 1..H-1
    only, so a full top row stays unless a row below it clears in the same
    landing and pulls it into reach.  We default to False, his behaviour,
    because every anchor we compare with (his 10 x 10 and 10 x 20 measurements,
    the 2003 rig) was produced by that code; the difference only shows when
    the stack already touches the ceiling.
    """

    name: RulesName = "standard"
    width: int = 10
    height: int = 20
    clear_top_row: bool = False

    def __post_init__(self) -> None:
        if self.name not in ("standard", "simplified"):
            raise ValueError(f"rules must be 'standard' or 'simplified', got {self.name!r}")
        if not MIN_WIDTH <= self.width <= MAX_WIDTH:
            raise ValueError(f"board width must be {MIN_WIDTH}..{MAX_WIDTH}, got {self.width}")
        if not MIN_HEIGHT <= self.height <= MAX_HEIGHT:
            raise ValueError(f"board height must be {MIN_HEIGHT}..{MAX_HEIGHT}, got {self.height}")

    @property
    def spawn_x(self) -> int:
        """1-based spawn column of a piece's origin."""
        return 1 + self.width // 2

    @property
    def spawn_y(self) -> int:
        """1-based spawn row of a piece's origin."""
        return self.height

    @property
    def clearable_rows(self) -> int:
        """How many rows, from the bottom, can be removed when full."""
        if self.name == "simplified" or self.clear_top_row:
            return self.height
        return self.height - 1


def earned_level(lines: int) -> int:
    """Level earned by completed rows: 1 up to 10 rows, +1 per 10 rows, at most 10."""
    if lines <= 0:
        return 1
    if lines >= 91:
        return 10
    return 1 + (lines - 1) // 10


def actual_level(lines: int, initial_level: int = 1) -> int:
    """The level the game runs at: the initial level or the earned one, whichever is higher."""
    return max(initial_level, earned_level(lines))


def iteration_delay(level: int) -> float:
    """Seconds between free-fall iterations: 0.50 s at level 1 ... 0.05 s at level 10."""
    return (11 - level) * 0.05


def point_award(level: int, free_fall_iterations: int) -> int:
    """Points for landing a piece; rows cleared score nothing. Never negative."""
    return max(0, 21 + 3 * level - free_fall_iterations)
