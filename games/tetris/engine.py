"""Standard Tetris played key by key, exactly as Fahey's game runs it.

Pure and deterministic: no clock, no I/O.  The caller owns time: it calls
:meth:`Game.iterate` once per free-fall delay (:attr:`Game.delay` seconds) and
:meth:`Game.press` on each key's rising edge.

This is the reference the compiled kernel is checked against, so it is written
independently of :mod:`.kernel`, in plain Python over :class:`.Board`, following
Fahey's ``STGame``/``STBoard`` step by step:

- an iteration with no piece spawns the next one at (1 + W/2, H), orientation 1;
  if it does not fit, the game is over;
- an iteration with a piece moves it down one row if it fits (a free-fall
  iteration, which costs a point), otherwise it lands: an iteration that starts
  with the piece resting lands it;
- rotate (counter-clockwise, the next orientation), left and right apply only
  if the moved piece lies inside the board and overlaps nothing; drop moves it
  down as far as it fits and lands it at once;
- landing adds the cells, removes completed rows (Fahey's scan, see
  :func:`collapse_full_rows`), then scores ``point_award(level, free falls)``.

Score level: Fahey's game fixes a piece's point value when it spawns, so a
piece scores at the level it was played at, before its own rows count (the
headless loop in :mod:`.headless` scores the same way).

Under the simplified rules of the research literature key-by-key play is not
defined; :meth:`Game.place_directly` drops a piece straight from above instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final, Literal

from .board import Board
from .pieces import Cell, cells as piece_cells, orientation_count
from .rules import Rules, actual_level, iteration_delay, point_award
from .sequence import PieceSource, SplitMix64

Key = Literal["rotate", "left", "right", "drop"]
ROTATE: Final = "rotate"
LEFT: Final = "left"
RIGHT: Final = "right"
DROP: Final = "drop"
KEYS: Final[tuple[Key, ...]] = (ROTATE, LEFT, RIGHT, DROP)

EventKind = Literal["spawned", "landed", "rows_cleared", "game_over"]

MIN_LEVEL, MAX_LEVEL = 1, 10


class NotDefinedByRules(RuntimeError):
    """An action the selected rule set does not define (keys under simplified rules, ...)."""


@dataclass(frozen=True)
class Event:
    """Something the game did: a piece spawned or landed, rows cleared, the game ended.

    ``cells`` are the landed piece's cells (before rows clear), ``rows`` the
    number of rows cleared, ``points`` what the landing scored.
    """

    kind: EventKind
    piece: str
    cells: tuple[Cell, ...] = ()
    rows: int = 0
    points: int = 0


@dataclass(frozen=True)
class FallingPiece:
    """The piece in play: its letter, Fahey's 1-based orientation and its origin (x, y)."""

    kind: str
    orientation: int
    x: int
    y: int

    def cells(self) -> tuple[Cell, ...]:
        """The 1-based board cells the piece covers."""
        return tuple((self.x + dx, self.y + dy) for dx, dy in piece_cells(self.kind, self.orientation))

    def moved(self, dx: int, dy: int) -> FallingPiece:
        """The same piece shifted by (dx, dy)."""
        return replace(self, x=self.x + dx, y=self.y + dy)

    def rotated(self) -> FallingPiece:
        """The piece turned counter-clockwise: the next orientation, wrapping after the last."""
        return replace(self, orientation=self.orientation % orientation_count(self.kind) + 1)


def after_key(board: Board, piece: FallingPiece, key: Key, above_allowed: bool = False) -> FallingPiece:
    """Where ``key`` takes ``piece`` on ``board``: a turn or a move only if the piece fits there
    (else it stays), a drop straight down to where it comes to rest.  ``above_allowed``: the space
    above row H counts as open (see :func:`fits`)."""
    if key == DROP:
        while (lower := after_fall(board, piece)) is not None:
            piece = lower
        return piece
    moved = piece.rotated() if key == ROTATE else piece.moved(-1 if key == LEFT else 1, 0)
    return moved if fits(board, moved.cells(), above_allowed) else piece


def after_fall(board: Board, piece: FallingPiece) -> FallingPiece | None:
    """Where gravity takes ``piece`` on ``board``: a row down, or None where it rests (it lands)."""
    lower = piece.moved(0, -1)
    return lower if fits(board, lower.cells()) else None


def fits(board: Board, cells: tuple[Cell, ...], above_allowed: bool = False) -> bool:
    """True if every cell is inside the board and empty (Fahey's IsGoalAcceptable).

    ``above_allowed`` treats the space above row H as open sky, for pieces
    dropped from above under the simplified rules.
    """
    for x, y in cells:
        if not 1 <= x <= board.width or y < 1:
            return False
        if y > board.height:
            if above_allowed:
                continue
            return False
        if board[x, y]:
            return False
    return True


def collapse_full_rows(board: Board, clearable_rows: int) -> list[int]:
    """Remove completed rows the way Fahey's ``CollapseAnyCompletedRows`` does.

    Rows are scanned bottom-up at positions 1..``clearable_rows``; a removed
    row lets everything above it move down one and the same position is
    checked again.  So with ``clearable_rows = H - 1`` (his code) a full top
    row stays unless a row below it is removed in the same landing, which
    pulls it down into the scanned range.  Returns the removed rows' numbers
    on the board as it was before the collapse, bottom first.
    """
    rows = [[int(v) for v in row] for row in board.cells]  # bottom row first
    origin = list(range(1, board.height + 1))
    removed: list[int] = []
    position = 0
    while position < clearable_rows:
        if all(rows[position]):
            removed.append(origin.pop(position))
            del rows[position]
            rows.append([0] * board.width)  # empty sky moves in at the top
            origin.append(0)
        else:
            position += 1
    board.cells[:, :] = rows
    return removed


class Game:
    """One game of Standard Tetris (or the simplified research game), driven by its caller.

    ``board`` optionally starts the game on a copy of an existing pile (its
    size must match the rules).  ``preview`` shows the next piece; a player may
    use :attr:`next_piece` only when it is shown, so it is None otherwise.
    """

    def __init__(
        self,
        rules: Rules,
        source: PieceSource,
        preview: bool = False,
        initial_level: int = 1,
        board: Board | None = None,
    ) -> None:
        if not MIN_LEVEL <= initial_level <= MAX_LEVEL:
            raise ValueError(f"initial level must be {MIN_LEVEL}..{MAX_LEVEL}, got {initial_level}")
        if board is not None and (board.width, board.height) != (rules.width, rules.height):
            raise ValueError(
                f"board is {board.width} x {board.height} but the rules say {rules.width} x {rules.height}"
            )
        self.rules = rules
        self.source = source
        self.preview = preview
        self.initial_level = initial_level
        self.board = board.copy() if board is not None else Board(rules.width, rules.height)
        self.piece: FallingPiece | None = None
        self.free_fall_iterations = 0  # of the piece in play; each one costs a point
        self.lines = 0
        self.score = 0
        self.pieces = 0  # pieces landed
        self.over = False

    # ---- what the screen shows -------------------------------------------------

    @property
    def level(self) -> int:
        """The level the game runs at (1..10)."""
        return actual_level(self.lines, self.initial_level)

    @property
    def delay(self) -> float:
        """Seconds between free-fall iterations at the current level."""
        return iteration_delay(self.level)

    @property
    def next_piece(self) -> str | None:
        """The piece that spawns next, or None when the preview is off."""
        return self.source.peek() if self.preview and not self.over else None

    @property
    def standard(self) -> bool:
        """True under Fahey's Standard Tetris rules (key-by-key play)."""
        return self.rules.name == "standard"

    # ---- gravity and keys --------------------------------------------------------

    def iterate(self) -> list[Event]:
        """One free-fall iteration: spawn a piece, move it down a row, or land it."""
        if self.over:
            return []
        if self.piece is None:
            return self._spawn()
        if not self.standard:
            raise NotDefinedByRules("the simplified rules have no gravity; use place_directly()")
        lower = after_fall(self.board, self.piece)
        if lower is not None:
            self.piece = lower
            self.free_fall_iterations += 1
            return []
        return self._land()

    def press(self, key: Key) -> list[Event]:
        """Apply a key press: rotate/left/right if the result fits, or drop and land."""
        if key not in KEYS:
            raise ValueError(f"unknown key {key!r}; expected one of {', '.join(KEYS)}")
        if not self.standard:
            raise NotDefinedByRules("the simplified rules have no keys; use place_directly()")
        if self.over or self.piece is None:
            return []
        self.piece = after_key(self.board, self.piece, key)
        return self._land() if key == DROP else []

    def place_directly(self, rotations: int, x: int) -> list[Event]:
        """Simplified rules: drop the piece in play, turned ``rotations`` times, straight down at column ``x``.

        ``x`` is the origin column (1-based).  There is no path: the piece falls
        from above the board onto the pile.  If any of its cells then lies above
        row H the game ends before its rows clear (MDPTetris with
        allow_lines_after_overflow = 0).
        """
        if self.standard:
            raise NotDefinedByRules("standard rules move pieces by keys; use press() and iterate()")
        if self.over:
            return []
        if self.piece is None:
            raise RuntimeError("no piece in play: call iterate() to spawn one first")
        count = orientation_count(self.piece.kind)
        if not 0 <= rotations < count:
            raise ValueError(f"piece {self.piece.kind} has {count} orientations; rotations must be 0..{count - 1}")
        # No piece reaches more than 2 rows below its origin: from H + 4 it starts wholly above the board.
        piece = FallingPiece(self.piece.kind, 1 + rotations, x, self.rules.height + 4)
        if not all(1 <= cx <= self.board.width for cx, _ in piece.cells()):
            raise ValueError(f"piece {piece.kind} turned {rotations} times does not fit the board at column {x}")
        while fits(self.board, piece.moved(0, -1).cells(), above_allowed=True):
            piece = piece.moved(0, -1)
        self.piece = piece
        if any(cy > self.board.height for _, cy in piece.cells()):
            return self._end()
        return self._land()

    # ---- the board's own events ---------------------------------------------------

    def add_junk_rows(self, count: int, rng: SplitMix64) -> None:
        """Lift the pile by ``count`` rows and fill the new bottom rows with random junk.

        As in Fahey's game each junk cell is filled with probability 2/3, rows
        pushed past the top are lost and the piece in play is not moved; unlike
        his, every junk row keeps at least one empty cell so it can be cleared.
        """
        if count < 0:
            raise ValueError(f"junk row count must be >= 0, got {count}")
        width = self.board.width
        for _ in range(count):
            self.board.cells[1:, :] = self.board.cells[:-1, :].copy()
            row = [1 if rng.below(3) else 0 for _ in range(width)]
            if all(row):
                row[rng.below(width)] = 0
            self.board.cells[0, :] = row

    # ---- internals --------------------------------------------------------------

    def _spawn(self) -> list[Event]:
        kind = self.source.next()
        piece = FallingPiece(kind, 1, self.rules.spawn_x, self.rules.spawn_y)
        self.piece = piece
        self.free_fall_iterations = 0
        if self.standard and not fits(self.board, piece.cells()):
            return self._end()
        return [Event("spawned", kind, piece.cells())]

    def _land(self) -> list[Event]:
        assert self.piece is not None
        piece = self.piece
        for cell in piece.cells():
            self.board[cell] = 1
        removed = collapse_full_rows(self.board, self.rules.clearable_rows)
        points = point_award(self.level, self.free_fall_iterations)
        self.score += points
        self.lines += len(removed)
        self.pieces += 1
        self.piece = None
        events = [Event("landed", piece.kind, piece.cells(), points=points)]
        if removed:
            events.append(Event("rows_cleared", piece.kind, rows=len(removed)))
        return events

    def _end(self) -> list[Event]:
        assert self.piece is not None
        kind = self.piece.kind
        self.piece = None
        self.over = True
        return [Event("game_over", kind)]
