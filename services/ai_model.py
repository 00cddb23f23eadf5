"""The ai's model of the game: the board it believes (the stack once its planned pieces have
landed), lines, pieces, and the level it plays at: the screen's if it shows one (and
``play.level_from_screen``), else the one its gravity shows (services/ai_fall_step.py), else the
initial level raised by the lines the ai counted.  Where the count says the level changes, the
fall samples start again, from the pieces planned at the new level (the piece whose lines raised
it falls on at the old step): at a boundary the count is right at once (if it has not drifted)
while the falls would show the old step for a piece or two; and if it has drifted, the new
samples soon show the game's real step, which then prevails.  No I/O, no clock."""

from __future__ import annotations

from collections.abc import Sequence

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import MAX_LEVEL, MIN_LEVEL
from gamerig.games.tetris.rules import Rules, actual_level

from .ai_fall_step import FallStep


class GameModel:
    """What the ai believes; ``board`` is None until it has seen one (not synced)."""

    def __init__(self, rules: Rules, initial_level: int, level_from_screen: bool) -> None:
        self.rules = rules
        self.initial_level = initial_level
        self.level_from_screen = level_from_screen
        self.board: Board | None = None
        self.lines = 0
        self.pieces = 0
        self.screen_level: int | None = None
        self.fall_step = FallStep()

    @property
    def synced(self) -> bool:
        """True once the model holds a board."""
        return self.board is not None

    @property
    def level(self) -> int:
        """The level the screen shows (if configured and shown), else the one the falls show, else
        the initial level raised by the lines."""
        if self.level_from_screen and self.screen_level is not None:
            return self.screen_level
        seen = self.fall_step.level()
        if seen is None:
            return actual_level(self.lines, self.initial_level)
        return max(seen, self.initial_level)  # a game never runs below the level it began at

    def see_fall(self, piece: str, row: int, t_capture: float, planned_level: int | None) -> None:
        """The frame of ``t_capture`` first showed ``piece`` fallen to ``row``; ``planned_level``:
        the level the ai planned that piece at, if it did.  A piece planned before its own lines
        raised the count's level still falls at the old step: its falls are no sample of the new
        level (taken as samples, they brought the old level back at once, and the next piece was
        planned and timed to the old fall step)."""
        if planned_level is None or planned_level == self.level:
            self.fall_step.see_fall(piece, row, t_capture)

    def see_level(self, level: object) -> None:
        """Note the level a frame showed (ignored unless 1..10)."""
        if isinstance(level, int) and not isinstance(level, bool) and MIN_LEVEL <= level <= MAX_LEVEL:
            self.screen_level = level

    def adopt(self, rows: Sequence[str]) -> Board:
        """Take an observed board (rows top first); ValueError if it does not fit the rules."""
        board = Board.from_rows(list(rows), self.rules.width, self.rules.height)
        if len(rows) != self.rules.height:
            raise ValueError(f"board has {len(rows)} rows, the rules say {self.rules.height}")
        self.board = board
        return board

    def commit(self, predicted: Board, lines_cleared: int) -> None:
        """A placement was planned: believe its result."""
        self.board = predicted
        self._count_lines(lines_cleared)
        self.pieces += 1

    def withdraw(self, lines_cleared: int) -> None:
        """A planned piece was forgotten before it landed (a halt, a pause): take it and its lines
        back.  It lands unplanned, or is seen still falling and planned again, and counted then:
        counted twice, a piece forgotten at a halt put the count a line ahead of the game, and at a
        level boundary the ai planned and timed pieces a level too fast for seconds (a level-5
        bench run: 5 mismatches, the count 4 lines ahead by its end)."""
        self._count_lines(-lines_cleared)
        self.pieces = max(0, self.pieces - 1)

    def _count_lines(self, change: int) -> None:
        counted = actual_level(self.lines, self.initial_level)
        self.lines = max(0, self.lines + change)
        if actual_level(self.lines, self.initial_level) != counted:
            self.fall_step.forget()

    def new_game(self) -> None:
        """The game ended: forget the board (the next one observed is adopted) and the counts."""
        self.board = None
        self.lines = 0
        self.pieces = 0
        self.fall_step = FallStep()


def rows_of(board: Board) -> list[str]:
    """The bus's board form: rows top first, '#' full, '.' empty."""
    return board.to_rows()
