"""Follow the pieces through the temporal filter's committed boards: spawn, landed, rows cleared, game over.

The tracker keeps the settled stack and the falling piece (type by shape through
:func:`.recognition.falling_piece`, with the piece colour as a second vote when the calibration
knows the colours, or once the tracker has learned them from the pieces it named by shape) and
explains every committed board (``committed`` or ``resynced``) by one step of play from the
board it accepted last.  Frames the filter did not commit (steady, pending, unsure, no
observation) never produce events, except the game-over timeout below.

The steps, tried in this order (cells are 1-based (x, y), rows 1-based from the bottom):

* **nothing changed**: no event (a flashing row that shows again, a resync to the same board);
* **rows cleared**: the last accepted board had full rows, and the new board is that board with
  them removed and the rows above dropped, plus nothing or a new piece: ``landed`` for the piece
  that was falling (a row clears only when a piece locks), then ``rows_cleared`` with the rows as
  numbered before the clear, then ``spawn`` if a new tetromino is already there.  Frames of the
  line-clear animation (full rows blanking or flashing, rows above not yet dropped) are ``unsure``
  with that reason and change nothing;
* **a lock that cleared rows at once**: settled cells vanished with no full row seen before (a
  drop that locked and cleared between two commits, in a game without a line-clear animation):
  every resting place of the falling piece that completes a row is tried (and, if the falling
  piece landed unseen, of the next piece, of any type); when exactly one leaves the new board
  after its rows clear: ``landed`` (for both pieces in the second case), ``rows_cleared``, and
  ``spawn`` if a new tetromino is already there.  When several do and all leave the same stack
  and piece in play (a T into a slot over two rows alike, pointing down or up), the one straight
  below where the falling piece was last seen is taken: that is where a drop puts it;
* **the piece moved**: the cells off the stack are one tetromino of the falling piece's type
  (moved, rotated, fallen, dropped): no event;
* **a new piece appeared**: the falling piece's cells stay where they were and a new tetromino
  appears: the old piece locked, so ``landed`` for it (where it was last seen), then ``spawn``.
  Or the falling piece dropped, locked and the next one spawned between two committed boards:
  the new cells are a tetromino of the falling piece's type and a new piece near the top (within
  ``NEXT_PIECE_ROWS``: it may have moved and turned already), when only one such reading exists:
  ``landed`` where it rests, then ``spawn``;
  While only one to three cells of the new piece show (it comes in over the top row), nothing
  is reported yet: a misread cell up there must not end a piece;
* **arrival**: with no piece falling, new cells that are one tetromino are a ``spawn`` when they
  lie in the spawn area (the top ``SPAWN_AREA_ROWS`` rows), or lower with nothing settled above
  them (a piece first seen late: frames were lost, or it dropped before it showed whole); a
  tetromino appearing under settled cells is no new piece (a well filling at game over).  One to
  three cells that are the visible part of a tetromino partly above the top row are a piece
  entering the well, so a piece that spawns above the well is reported once, when all four cells
  show.  A tetromino whose colour votes against its shape is ``unsure`` and not reported until a
  frame where the vote agrees.

A board none of these explains is ``unsure``: the state stays, and no event is guessed.  When the
filter ``resynced``, when nothing was explained for ``resync_s`` seconds, or on the first board
seen, the stack is re-read from the board as a whole (status ``unsure``, with the reason): the
falling piece is then hidden in that stack.  It is found again when it moves (the cells that left
and the cells that came are one tetromino of one type, and there is only one way to cut them
from the stack), and a tetromino appearing while nothing vanished is clearly new, so it is a
``spawn`` (the piece hidden in the stack locked: no ``landed`` for it, its type is unknown).
A resync that ends the filter's chain of play comes with the stable board before it: when the
accepted state does not explain the resynced board, the stack is re-read from that one and the
resynced board explained from it, so the piece that moved between the two is found at once
(after an outage at level 10: 3 frames sooner).
On the first board seen, a lone tetromino in the spawn area, apart from the other cells, is a
piece that has just spawned: a ``spawn``, the rest is the stack.  Anything else on the first
board is read as stack, a lone tetromino lower down too: it may have landed already, and a
spawn the tracker did not see is not claimed (the vision bench's only false spawn in 10,000
frames was such a J).

**Game over**: the last explained board reaches the top ``top_out_rows`` rows (where Standard
Tetris spawns) with cells other than a piece in free fall (the stack, a piece resting on it, a
piece stuck partly above the well) and no step of play was explained for ``game_over_s`` seconds of
frames, whatever they show (the same board, a well filling row by row, no board at all):
``landed`` for the last piece if one was falling, then ``game_over``.  In Standard Tetris the game
ends when a new piece does not fit, so the last board simply freezes; other games fill the well
or change screen, which the filter does not commit.  ``game_over_s`` must exceed the longest
pause of play (line-clear animation plus the next spawn, a piece moving above the well unseen).
After game over the tracker waits for a new game (a board with at most one piece, all in its top
rows) and starts afresh; ``reset`` does that at once.

A ghost piece (the outline some games draw where the falling piece would land) reads as the
empty cells it is drawn over once recognition reads cells by their middles (``cell_look``: the
first frames of play, a fraction of a second); until then it reads as a second piece and the
tracker is unsure.  Not handled: games with a hold key (a piece swapped for another at the top is
unsure until the stack is re-read).

Measured: the unit tests drive it with real engine play through a real ``BoardFilter`` (clean
boards, no camera); on 80 random games (40 with pieces spawning above the well, half without lock
frames) it reported exactly the engine's events, or, above the well, one spawn for each piece that
came into view.  On filmed play (``gamerigctl bench vision --frames 1100``, seeds 0 to 9) it made
no false spawn; the misses left come from frames recognition refuses (every frame of a scene with
a few cells read without confidence gives the filter nothing to commit).  Pure: timestamps come
with the frames, no clocks, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

import cv2
import numpy as np

from .piece_colours import PieceColourLearner
from .pieces import ORIENTATIONS, PIECE_NAMES, cells as piece_cells
from .recognition import FallingPiece, GridCalibration, Observation, falling_piece
from .temporal import PIECE_CELLS, FilterUpdate

Cells = frozenset[tuple[int, int]]
#: A new piece shows whole within this many top rows (the height of the tallest piece).
SPAWN_AREA_ROWS = PIECE_CELLS
#: A piece that spawned after a drop, between two committed boards, is found within this many top
#: rows: at level 10 a plan made ahead moves and turns it at once while the camera skips frames
#: under load, and an I stood upright three rows down before the camera committed a board (the
#: tracker then explained nothing for 0.75 s, and the rig played blind).
NEXT_PIECE_ROWS = 2 * SPAWN_AREA_ROWS
EventKind = Literal["spawn", "landed", "rows_cleared", "game_over"]


@dataclass(frozen=True)
class Event:
    """Something the game did, as seen on the frame captured at ``timestamp``."""

    kind: EventKind
    timestamp: float
    #: spawn: the new piece; landed: the piece that landed.
    piece: str | None = None
    #: spawn / landed: the piece's 1-based (x, y) cells (at identification / where it locked).
    cells: tuple[tuple[int, int], ...] = ()
    #: rows_cleared: the 1-based rows that were cleared, numbered on the board before the clear.
    rows: tuple[int, ...] = ()


@dataclass(frozen=True)
class TrackerUpdate:
    """The tracker's answer to one frame."""

    events: tuple[Event, ...]
    #: Settled cells, rows x cols bool, bottom row first; None before the first committed board.
    stack: np.ndarray | None
    #: The piece in the air, if one is identified.
    falling: FallingPiece | None
    #: waiting (no board yet, or no piece in the air), tracking (a piece is followed),
    #: unsure (this frame or the board is not explained: see ``reason``), game_over.
    status: str
    reason: str = ""


@dataclass(frozen=True)
class _Step:
    """One explained step of play: the state after it and what it reports."""

    stack: np.ndarray
    falling: FallingPiece | None
    events: tuple[Event, ...] = ()
    reason: str = ""


def _cells(mask: np.ndarray) -> Cells:
    ys, xs = np.nonzero(mask)
    return frozenset(zip((xs + 1).tolist(), (ys + 1).tolist()))


def _mask(cells: Cells, shape: tuple[int, ...]) -> np.ndarray:
    mask = np.zeros(shape, dtype=bool)
    for x, y in cells:
        mask[y - 1, x - 1] = True
    return mask


def piece_cells_of(piece: FallingPiece) -> Cells:
    """The 1-based board cells a recognised piece covers."""
    ox, oy = piece.origin
    return frozenset((ox + dx, oy + dy) for dx, dy in piece_cells(piece.name, piece.orientation))


def _collapsed(board: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The board with ``rows`` (0-based) removed and the rows above dropped down."""
    kept = np.delete(board, rows, axis=0)
    return np.vstack([kept, np.zeros((len(rows), board.shape[1]), dtype=bool)])


def _partial_shapes() -> dict[Cells, list[tuple[int, int]]]:
    """What shows of each tetromino partly above the top row -> how far the whole piece reaches
    left and right of what shows.  Shapes are keyed by (x from the leftmost shown cell, rows
    down from the top row)."""
    shapes: dict[Cells, list[tuple[int, int]]] = {}
    for table in ORIENTATIONS.values():
        for offsets in table:
            for above in range(1, PIECE_CELLS):  # rows of the piece's span hidden above the top row
                top = max(dy for _, dy in offsets)
                shown = [(dx, dy) for dx, dy in offsets if dy <= top - above]
                if not shown or len(shown) == PIECE_CELLS:
                    continue
                left, highest = min(dx for dx, _ in shown), max(dy for _, dy in shown)
                key = frozenset((dx - left, highest - dy) for dx, dy in shown)
                reach = (left - min(dx for dx, _ in offsets), max(dx for dx, _ in offsets) - left)
                shapes.setdefault(key, []).append(reach)
    return shapes


_PARTIAL_SHAPES = _partial_shapes()


def _entering(cells: Cells, rows: int, cols: int) -> bool:
    """True when 1..3 ``cells`` are what shows of a tetromino partly above the top row."""
    if not 0 < len(cells) < PIECE_CELLS or max(y for _, y in cells) != rows:
        return False
    left = min(x for x, _ in cells)
    reaches = _PARTIAL_SHAPES.get(frozenset((x - left, rows - y) for x, y in cells), [])
    return any(left - to_left >= 1 and left + to_right <= cols for to_left, to_right in reaches)


def _entering_part(board: np.ndarray) -> np.ndarray:
    """The cells of ``board`` that are a piece coming in over the top row (its cells touching
    the top row, apart from the rest), or no cells."""
    _, labels = cv2.connectedComponents(board.astype(np.uint8), connectivity=4)
    touching = np.isin(labels, [label for label in np.unique(labels[-1]) if label])
    return touching if _entering(_cells(touching), *board.shape) else np.zeros_like(board)


def _completing_locks(stack: np.ndarray, names: str) -> Iterator[tuple[str, Cells]]:
    """Every place a piece of one of ``names`` can rest on ``stack`` filling the last gaps of a row."""
    rows, cols = stack.shape
    missing = (~stack).sum(axis=1)
    oy, ox = np.mgrid[1 : rows + 1, 1 : cols + 1]  # every origin on the board
    for name in names:
        for offsets in ORIENTATIONS[name]:
            fits, rests, completes = np.ones_like(stack), np.zeros_like(stack), np.zeros_like(stack)
            for dx, dy in offsets:
                x, y = ox + dx, oy + dy
                inside = (x >= 1) & (x <= cols) & (y >= 1) & (y <= rows)
                xi, yi = np.clip(x, 1, cols) - 1, np.clip(y, 1, rows) - 1
                fits &= inside & ~stack[yi, xi]
                rests |= inside & ((y == 1) | stack[np.maximum(yi - 1, 0), xi])
            for dy in {dy for _, dy in offsets}:  # a row whose gaps are exactly the piece's cells in it
                y = oy + dy
                completes |= (y >= 1) & (y <= rows) & (missing[np.clip(y, 1, rows) - 1] == sum(1 for _, d in offsets if d == dy))
            for y0, x0 in zip(*np.nonzero(fits & rests & completes)):
                yield name, frozenset((int(x0) + 1 + dx, int(y0) + 1 + dy) for dx, dy in offsets)


def _dropped_straight(cells: Cells, stack: np.ndarray) -> Cells:
    """Where ``cells`` (a piece in the air, clear of ``stack``) rest after falling straight down."""
    while all(y > 1 and not stack[y - 2, x - 1] for x, y in cells):
        cells = frozenset((x, y - 1) for x, y in cells)
    return cells


def _sorted(cells: Cells) -> tuple[tuple[int, int], ...]:
    return tuple(sorted(cells, key=lambda c: (c[1], c[0])))


class PieceTracker:
    """Turns the filter's committed boards into piece events; see the module docstring.

    ``calibration`` gives the colour vote (its piece colours; without them the shape decides
    alone, and the tracker learns them from the first ``colour_samples`` spawns of each piece,
    after which the colour votes); ``top_out_rows`` are the rows where a stack means the game may
    be over, ``game_over_s`` how long nothing may happen then before it is; ``resync_s`` how long
    boards may stay unexplained before the stack is re-read.
    """

    def __init__(
        self,
        calibration: GridCalibration | None = None,
        top_out_rows: int = 2,
        game_over_s: float = 3.0,
        resync_s: float = 0.75,
        colour_samples: int = 3,
    ) -> None:
        if top_out_rows < 1:
            raise ValueError(f"top_out_rows must be at least 1, got {top_out_rows}")
        if game_over_s <= 0:
            raise ValueError(f"game_over_s must be positive, got {game_over_s}")
        if resync_s <= 0:
            raise ValueError(f"resync_s must be positive, got {resync_s}")
        self.calibration = calibration
        self._colours = PieceColourLearner(colour_samples)  # a new game keeps what it learned
        self.top_out_rows = top_out_rows
        self.game_over_s = game_over_s
        self.resync_s = resync_s
        self.reset()

    def reset(self) -> None:
        """Forget the game: the next committed board starts a new one."""
        self._stack: np.ndarray | None = None
        self._falling: FallingPiece | None = None
        self._certain = True  # False: the stack was re-read and may hide the falling piece
        self._over = False
        self._last_step = 0.0
        self._seen: np.ndarray | None = None  # the last board explained (or re-read)
        self._unexplained_since: float | None = None  # when the first board not explained came
        self._status, self._reason = "waiting", "no board committed yet"

    def update(self, update: FilterUpdate, observation: Observation, timestamp: float) -> TrackerUpdate:
        """Feed the filter's answer to one frame, the frame's observation and its capture time."""
        events: list[Event] = []
        status, reason = self._status, self._reason
        if update.status in ("committed", "resynced") and update.board is not None:
            resynced = update.status == "resynced"
            events += self._on_board(update.board, observation, timestamp, resynced, update.reason, update.previous)
            status, reason = self._status, self._reason
        elif self._unexplained_since is not None and update.board is not None:
            if timestamp - self._unexplained_since >= self.resync_s:
                self._rederive(update.board, f"nothing was explained for {self.resync_s:g} s")
            status, reason = self._status, self._reason
        elif update.status in ("unsure", "no_observation") and not self._over:
            status, reason = "unsure", f"{update.status.replace('_', ' ')}: {update.reason}"
        if not self._over and self._stack is not None and self._topped_out() and timestamp - self._last_step >= self.game_over_s:
            events += self._game_over(timestamp)
            status, reason = self._status, self._reason
        self._learn_colours(events, observation)
        stack = None if self._stack is None else self._stack.copy()
        return TrackerUpdate(tuple(events), stack, self._falling, status, reason)

    def _learn_colours(self, events: list[Event], observation: Observation) -> None:
        """A sample of each spawned piece's colour, while the calibration lacks piece colours;
        once every piece has enough, the calibration gets them and the colour votes."""
        if self.calibration is None or self.calibration.piece_colours is not None or not observation.valid:
            return
        for event in events:
            # a spawn named from an earlier board of the filter's chain may have moved since
            rows = observation.filled.shape[0]
            if event.kind == "spawn" and all(y <= rows and observation.filled[y - 1, x - 1] for x, y in event.cells):
                self._colours.add(observation, event.piece, event.cells)
        self.calibration = self._colours.with_colours(self.calibration)

    # ---- committed boards ---------------------------------------------------------

    def _on_board(
        self, board: np.ndarray, observation: Observation, timestamp: float, resynced: bool, why: str, previous: np.ndarray | None
    ) -> list[Event]:
        board = board.astype(bool)
        if self._over:
            if not self._new_game(board):
                return []
            self.reset()
        first = self._stack is None
        if first:
            self._start(board, timestamp)
            resynced, why = True, "the first board seen"
        if first and board.any():
            # a lone tetromino low in the well may as well have landed: only one apart in the
            # spawn area is a piece known to be falling
            step = self._piece_on_first_board(board, observation, timestamp) or "no piece apart in the spawn area"
        else:
            step = self._explain(board, observation, timestamp)
            if isinstance(step, str) and resynced and previous is not None:
                # the stack re-read from the board before in the filter's chain of play: the
                # piece that moved since is found now, not a fall step later
                self._rederive(previous, why)
                step = self._explain(board, observation, timestamp)
        if isinstance(step, str):
            if self._unexplained_since is None:
                self._unexplained_since = timestamp
            if resynced or timestamp - self._unexplained_since >= self.resync_s:
                self._rederive(board, f"{why or f'nothing was explained for {self.resync_s:g} s'}: {step}")
            else:
                self._status, self._reason = "unsure", step
            return []
        changed = not np.array_equal(board, self._seen)
        self._stack, self._falling, self._seen, self._unexplained_since = step.stack, step.falling, board, None
        if changed:
            self._certain, self._last_step = True, timestamp
        if not self._certain:
            self._status = "unsure"
        else:
            self._status, self._reason = ("tracking" if self._falling else "waiting"), step.reason
        return list(step.events)

    def _start(self, board: np.ndarray, timestamp: float) -> None:
        self._stack = np.zeros_like(board, dtype=bool)
        self._seen = self._stack
        self._last_step = timestamp

    def _rederive(self, board: np.ndarray, why: str) -> None:
        board = board.astype(bool)
        self._stack = board & ~_entering_part(board)
        self._falling, self._certain, self._unexplained_since, self._seen = None, False, None, board.copy()
        self._status = "unsure"
        self._reason = f"{why}; the stack is re-read from the board and the falling piece is not identified yet"

    def _new_game(self, board: np.ndarray) -> bool:
        """A board with at most one piece, all in its top rows: a new game began."""
        rows = board.shape[0]
        cells = _cells(board)
        return len(cells) <= PIECE_CELLS and all(y > rows - PIECE_CELLS for _, y in cells)

    def _explain(self, board: np.ndarray, observation: Observation, timestamp: float) -> _Step | str:
        """The step of play from the accepted state to ``board``, or why there is none."""
        assert self._stack is not None
        stack, falling = self._stack, self._falling
        falling_cells = piece_cells_of(falling) if falling is not None else frozenset()
        before = stack | _mask(falling_cells, stack.shape)
        if np.array_equal(board, before):
            return _Step(stack, falling, reason=self._reason if not self._certain else "")
        landed = (Event("landed", timestamp, falling.name, _sorted(falling_cells)),) if falling is not None else ()
        full = np.flatnonzero(before.all(axis=1))
        if len(full):
            # Standard Tetris scans rows 1..H-1 only: a full top row may stay
            for rows in (full, full[full < len(before) - 1]):
                cleared = _collapsed(before, rows)
                if len(rows) and not (cleared & ~board).any():
                    arrival = self._arrival(cleared, board & ~cleared, observation, timestamp)
                    if isinstance(arrival, _Step):
                        events = (*landed, Event("rows_cleared", timestamp, rows=tuple(int(r) + 1 for r in rows)), *arrival.events)
                        return _Step(arrival.stack, arrival.falling, events, arrival.reason)
            if not (board & ~before).any() and not (before & ~board)[~before.all(axis=1)].any():
                return "full rows are being cleared (line-clear animation)"
        vanished = int((stack & ~board).sum())
        if vanished:
            if not self._certain and falling is None:
                adopted = self._adopt(board, observation)
                if isinstance(adopted, _Step):
                    return adopted
            return self._locked_and_cleared(board, observation, timestamp)
        new = board & ~stack
        if falling is None:
            return self._arrival(stack, new, observation, timestamp)
        new_cells = _cells(new)
        if falling_cells < new_cells:
            settled = stack | _mask(falling_cells, stack.shape)
            arrival = self._arrival(settled, new & ~settled, observation, timestamp)
            if isinstance(arrival, str):
                return f"the falling {falling.name} stayed and {arrival}"
            if arrival.falling is None:  # part of the next piece shows: its spawn will report the landing
                return _Step(stack, falling, reason=arrival.reason)
            return _Step(arrival.stack, arrival.falling, (*landed, *arrival.events), arrival.reason)
        moved = self._identify(new, observation)
        if moved is not None and moved.name == falling.name:
            return _Step(stack, moved)
        dropped = self._dropped_and_spawned(new, observation, timestamp)
        if dropped is not None:
            return dropped
        return f"the falling {falling.name} became {len(new_cells)} cells that are no {falling.name}"

    def _dropped_and_spawned(self, new: np.ndarray, observation: Observation, timestamp: float) -> _Step | None:
        """The falling piece dropped and locked and the next piece spawned, all between two
        committed boards (Standard Tetris spawns at the next gravity step after a drop, which at
        level 5 and up is often sooner than the filter's k frames): ``new`` is a tetromino of the
        falling piece's type plus a new piece in the spawn area; only a unique such reading is taken."""
        assert self._stack is not None and self._falling is not None
        found = []
        for part, piece in self._pieces_in(new, observation):
            if piece.name != self._falling.name:
                continue
            arrival = self._arrival(self._stack | part, new & ~part, observation, timestamp)
            if not isinstance(arrival, _Step) or arrival.falling is None:
                continue
            if max(y for _, y in piece_cells_of(arrival.falling)) <= len(new) - NEXT_PIECE_ROWS:
                continue  # the next piece is near the top, the landed one below it
            landed = Event("landed", timestamp, piece.name, _sorted(_cells(part)))
            found.append(_Step(arrival.stack, arrival.falling, (landed, *arrival.events), arrival.reason))
        return found[0] if len(found) == 1 else None

    def _arrival(self, stack: np.ndarray, new: np.ndarray, observation: Observation, timestamp: float) -> _Step | str:
        """What ``new`` cells above an accepted ``stack`` with no piece falling are."""
        cells = _cells(new)
        if not cells:
            return _Step(stack, None)
        piece = self._identify(new, observation) if len(cells) == PIECE_CELLS else None
        if piece is not None:
            if piece.colour_agrees is False:
                return f"a new piece's shape says {piece.name} but its colour says {piece.colour_candidates}"
            in_spawn_area = max(y for _, y in cells) > len(stack) - SPAWN_AREA_ROWS
            if not in_spawn_area and any(stack[y:, x - 1].any() for x, y in cells):
                return f"a {piece.name} showed under settled cells, where no new piece can fall"
            return _Step(stack, piece, (Event("spawn", timestamp, piece.name, _sorted(cells)),))
        if _entering(cells, *stack.shape):
            return _Step(stack, None, reason=f"a piece is entering the well ({len(cells)} cells show)")
        return f"{len(cells)} new cells are not a piece"

    def _locked_and_cleared(self, board: np.ndarray, observation: Observation, timestamp: float) -> _Step | str:
        """A piece dropped, locked and completed rows that cleared, all between two committed boards.

        The piece is the falling one; or the falling piece landed unseen and the next piece,
        never seen whole, did this (then it is of any type: its ``landed`` follows the falling
        piece's); with no piece known it is of any type.  Every resting place that completes a
        row is tried; the one whose cleared rows leave ``board`` (plus nothing, part of the next
        piece or the next piece) is taken when it is the only one, or when it is the falling
        piece's straight drop and every other one leaves the same stack and piece in play.
        """
        assert self._stack is not None
        stack, falling = self._stack, self._falling
        bases: list[tuple[np.ndarray, str, tuple[Event, ...]]] = []
        if falling is not None:
            cells = piece_cells_of(falling)
            bases.append((stack, falling.name, ()))
            landed = Event("landed", timestamp, falling.name, _sorted(cells))
            bases.append((stack | _mask(cells, stack.shape), PIECE_NAMES, (landed,)))
        else:
            bases.append((stack, PIECE_NAMES, ()))
            if not self._certain:  # the piece that dropped may be one hidden in the re-read stack
                bases += [(stack & ~hidden, piece.name, ()) for hidden, piece in self._pieces_in(stack & ~board, observation)]
        found: dict[Cells, _Step] = {}
        for base, names, earlier in bases:
            for name, placed in _completing_locks(base, names):
                locked = base | _mask(placed, base.shape)
                full = np.flatnonzero(locked.all(axis=1))
                cleared = _collapsed(locked, full)
                if (cleared & ~board).any():
                    continue
                arrival = self._arrival(cleared, board & ~cleared, observation, timestamp)
                if isinstance(arrival, _Step):
                    events = (
                        *earlier,
                        Event("landed", timestamp, name, _sorted(placed)),
                        Event("rows_cleared", timestamp, rows=tuple(int(r) + 1 for r in full)),
                        *arrival.events,
                    )
                    found[placed] = _Step(arrival.stack, arrival.falling, events, arrival.reason)
        if len(found) > 1 and falling is not None:
            # locks that leave the same stack and piece in play differ only in what the events
            # say (a T into a slot over two rows alike, pointing down or up); a drop falls
            # straight, so the lock straight below where the piece was last seen happened
            straight = _dropped_straight(piece_cells_of(falling), stack)
            outcomes = {(step.stack.tobytes(), step.falling) for step in found.values()}
            if straight in found and len(outcomes) == 1:
                return found[straight]
        if len(found) != 1:
            vanished = int((stack & ~board).sum())
            return f"{vanished} settled cells vanished and {len(found) or 'no'} locks that clear rows lead to this board"
        return next(iter(found.values()))

    def _piece_on_first_board(self, board: np.ndarray, observation: Observation, timestamp: float) -> _Step | None:
        """The first board's only tetromino that stands apart from the rest in the spawn area:
        a piece that has just spawned (settled cells do not float up there), reported as such."""
        rows = len(board)
        apart = [(part, piece) for part, piece in self._pieces_in(board, observation) if part[rows - SPAWN_AREA_ROWS :].sum() == PIECE_CELLS]
        if len(apart) != 1:
            return None
        arrival = self._arrival(board & ~apart[0][0], apart[0][0], observation, timestamp)
        return arrival if isinstance(arrival, _Step) else None

    def _pieces_in(self, cells: np.ndarray, observation: Observation) -> list[tuple[np.ndarray, FallingPiece]]:
        """The 4-connected parts of ``cells`` that are tetrominoes, with what they are."""
        count, labels = cv2.connectedComponents(cells.astype(np.uint8), connectivity=4)
        parts = [labels == label for label in range(1, count)]
        return [(part, piece) for part in parts if (piece := self._identify(part, observation)) is not None]

    def _adopt(self, board: np.ndarray, observation: Observation) -> _Step | str:
        """Find the falling piece hidden in a re-read stack from how the board changed.

        The cells that left the stack and the cells that came must be the old and new places
        of one tetromino of one type, sharing the cells that stayed; only a unique such cut
        is taken.
        """
        assert self._stack is not None
        stack = self._stack
        left, came = _cells(stack & ~board), _cells(board & ~stack)
        if not 0 < len(left) <= PIECE_CELLS or len(came) != len(left):
            return f"{len(left)} cells left and {len(came)} came: no move of one piece"
        changed = left | came
        # a tetromino spans at most 4 x 4 cells: shared cells lie within 3 of every changed one
        near = [c for c in _cells(stack & board) if all(abs(c[0] - x) <= 3 and abs(c[1] - y) <= 3 for x, y in changed)]
        cuts: list[tuple[Cells, FallingPiece]] = []
        for shared in combinations(near, PIECE_CELLS - len(left)):
            old = self._identify(_mask(left | frozenset(shared), stack.shape), observation)
            new = self._identify(_mask(came | frozenset(shared), stack.shape), observation)
            if old is not None and new is not None and old.name == new.name and new.colour_agrees is not False:
                cuts.append((left | frozenset(shared), new))
        if len(cuts) != 1:
            return f"{'no' if not cuts else len(cuts)} ways to cut a moving piece out of the re-read stack"
        old_cells, piece = cuts[0]
        return _Step(stack & ~_mask(old_cells, stack.shape), piece)

    def _identify(self, cells: np.ndarray, observation: Observation) -> FallingPiece | None:
        """The tetromino ``cells`` form (type, orientation, origin, colour vote), or None."""
        seen = Observation(True, "", cells, np.ones(cells.shape, dtype=np.float32), observation.colours)
        return falling_piece(seen, np.zeros_like(cells), self.calibration)

    # ---- game over -------------------------------------------------------------------

    def _topped_out(self) -> bool:
        """The last accepted board reaches the top rows with cells other than a piece in free fall:
        the stack, a falling piece resting on it, or a piece that stays partly above the well."""
        assert self._stack is not None
        board = self._seen
        if self._falling is not None:
            cells = piece_cells_of(self._falling)
            if not any(y == 1 or self._stack[y - 2, x - 1] for x, y in cells):
                board = board & ~_mask(cells, board.shape)
        return bool(board[len(board) - self.top_out_rows :].any())

    def _game_over(self, timestamp: float) -> list[Event]:
        assert self._stack is not None
        events = []
        if self._falling is not None:
            cells = piece_cells_of(self._falling)
            events.append(Event("landed", timestamp, self._falling.name, _sorted(cells)))
            self._stack = self._stack | _mask(cells, self._stack.shape)
            self._falling = None
        events.append(Event("game_over", timestamp))
        self._over = True
        self._status, self._reason = "game_over", f"the stack reached the top rows and nothing moved for {self.game_over_s:g} s"
        return events
