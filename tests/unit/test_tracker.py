"""The tracker reports exactly the engine's spawns, landings, clears and game over from filtered boards.

Every test plays the real engine key by key, shows each state of the screen for a few frames
as an observation (every cell in its piece's colour) through a real BoardFilter, and compares
what the tracker reports with what the engine did.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import DROP, LEFT, RIGHT, ROTATE, FallingPiece, Game, collapse_full_rows
from gamerig.games.tetris.engine import Event as EngineEvent
from gamerig.games.tetris.pieces import piece_index
from gamerig.games.tetris.placements import enumerate_placements
from gamerig.games.tetris.recognition import GridCalibration, Observation
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.sequence import FixedPieces, PieceSource, RandomPieces
from gamerig.games.tetris.temporal import BoardFilter
from gamerig.games.tetris.tracker import SPAWN_AREA_ROWS, Event, PieceTracker, TrackerUpdate

ROWS, COLS = 20, 10
FRAME_S = 1 / 60
GAME_OVER_S = 2.0  # random keys on a piece still above the screen change nothing for a while
FALL = "fall"  # one free-fall iteration of the engine
#: BGR colour of each piece O I S Z L J T, as the camera would see it.
PIECE_COLOURS = np.array(
    [[0, 220, 230], [230, 220, 0], [0, 200, 0], [0, 0, 220], [0, 140, 255], [220, 60, 0], [200, 0, 200]], dtype=np.float32
)
#: Share of shown states preceded by a misread of one or two cells (in the tests that ask for it).
MISREAD_RATE = 0.2


def _calibration(colours: np.ndarray | None = PIECE_COLOURS) -> GridCalibration:
    corners = np.array([[0, 0], [COLS, 0], [COLS, ROWS], [0, ROWS]], dtype=np.float32)
    return GridCalibration(corners, COLS, ROWS, np.zeros((ROWS + 2, COLS + 2, 3), np.float32), colours)


class Screen:
    """Engine play shown frame by frame to a BoardFilter and a PieceTracker.

    With ``hidden_rows`` the engine's well is that much taller than the visible one, so pieces
    spawn above the screen and come into view row by row.
    """

    def __init__(self, source: PieceSource, hidden_rows: int = 0, hold: int = 2, colour_vote: bool = True) -> None:
        self.game = Game(Rules("standard", COLS, ROWS + hidden_rows), source)
        self.filter = BoardFilter(k=2)
        self.tracker = PieceTracker(_calibration() if colour_vote else None, game_over_s=GAME_OVER_S)
        self.hold = hold
        #: show a landed piece in place before its rows clear (games without a line-clear
        #: animation clear them at once)
        self.lock_frames = True
        #: a piece locked partly above the visible well: the game is over for the camera
        self.locked_above = False
        self.time = 0.0
        self.engine_events: list[EngineEvent] = []
        self.updates: list[TrackerUpdate] = []
        #: for each update, the number of the piece in play (or the last one, between pieces)
        self.numbers: list[int] = []
        #: misread cells now and then, drawn from this generator
        self.misreads: np.random.Generator | None = None
        #: piece number -> type, for each piece shown with all four cells in view
        self.in_view: dict[int, str] = {}
        #: colour id (1..7) of every settled cell, engine rows, bottom first
        self.ids = np.zeros((ROWS + hidden_rows, COLS), np.uint8)

    @property
    def events(self) -> list[Event]:
        return [e for u in self.updates for e in u.events]

    def show(self, filled: np.ndarray, colours: np.ndarray, frames: int | None = None) -> None:
        count = self.hold if frames is None else frames
        if count and self.misreads is not None and self.misreads.random() < MISREAD_RATE:
            misread = filled.copy()  # one or two cells read wrong, long enough to be committed
            for _ in range(int(self.misreads.integers(1, 3))):
                misread[int(self.misreads.integers(ROWS)), int(self.misreads.integers(COLS))] ^= True
            self._frames(misread, colours, 2)
        self._frames(filled, colours, count)

    def _frames(self, filled: np.ndarray, colours: np.ndarray, count: int) -> None:
        for _ in range(count):
            observation = Observation(True, "", filled, np.ones(filled.shape, np.float32), colours)
            update = self.filter.update(observation, self.time)
            self.updates.append(self.tracker.update(update, observation, self.time))
            self.numbers.append(self.game.pieces + (self.game.piece is not None))
            self.time += FRAME_S

    def picture(self, ids: np.ndarray, piece: FallingPiece | None, piece_colour: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The visible well: settled cells by colour id (engine rows, bottom first) and ``piece``."""
        ids = ids.copy()
        if piece is not None:
            in_view = all(y <= ROWS for _, y in piece.cells())
            if in_view:
                self.in_view[self.game.pieces - (self.game.piece is None)] = piece.kind
            for x, y in piece.cells():
                ids[y - 1, x - 1] = piece_index(piece_colour or piece.kind)
        ids = ids[:ROWS]
        colours = np.zeros((ROWS, COLS, 3), np.float32)
        colours[ids > 0] = PIECE_COLOURS[ids[ids > 0] - 1]
        return ids > 0, colours

    def act(self, action: str, clear_flashes: int = 0) -> None:
        """One engine step, then its screen; a landing first shows the locked piece with its full
        rows (as games do before the rows go), and ``clear_flashes`` blank/show cycles of them."""
        piece = self.game.piece
        events = self.game.iterate() if action == FALL else self.game.press(action)
        self.engine_events += events
        if any(e.kind == "landed" for e in events):
            assert piece is not None
            landed = next(e for e in events if e.kind == "landed")
            locked = piece.moved(0, landed.cells[0][1] - piece.cells()[0][1])  # where a drop took it
            if self.lock_frames:
                self.show(*self.picture(self.ids, locked))
            for x, y in locked.cells():
                self.ids[y - 1, x - 1] = piece_index(locked.kind)
            self.locked_above |= any(y > ROWS for _, y in locked.cells())
            full = (self.ids > 0).all(axis=1)
            if not full.any() and all(y <= ROWS for _, y in locked.cells()):
                self.in_view[self.game.pieces - 1] = locked.kind  # seen whole in the stack at least
            for _ in range(clear_flashes if full.any() else 0):
                blanked = self.ids.copy()
                blanked[full] = 0
                self.show(*self.picture(blanked, None), frames=3)
                self.show(*self.picture(self.ids, None), frames=3)
            settled = Board(cells=self.ids)
            collapse_full_rows(settled, self.game.rules.clearable_rows)
            self.ids = settled.cells.copy()
            assert np.array_equal(self.ids > 0, self.game.board.cells > 0)
        self.show(*self.picture(self.ids, self.game.piece))

    def wait(self, seconds: float) -> None:
        self.show(*self.picture(self.ids, self.game.piece), frames=int(seconds / FRAME_S) + 1)


def _kinds(events: list[Event]) -> list[tuple[str, str | None]]:
    return [(e.kind, e.piece) for e in events]


def _expected(engine_events: list[EngineEvent]) -> list[tuple[str, str | None]]:
    """The engine's events as the tracker names them (rows_cleared and game_over name no piece)."""
    names = {"spawned": "spawn", "landed": "landed", "rows_cleared": "rows_cleared", "game_over": "game_over"}
    return [(names[e.kind], e.piece if e.kind in ("spawned", "landed") else None) for e in engine_events]


def _move(screen: Screen, keys: list[str], falls: int = 1) -> None:
    """Spawn the next piece, press ``keys`` with a fall between each, and drop it."""
    screen.act(FALL)
    for key in keys:
        screen.act(key)
        for _ in range(falls):
            screen.act(FALL)
    screen.act(DROP)


@pytest.mark.parametrize("colour_vote", [True, False])
def test_spawns_landings_and_a_cleared_row_in_the_engines_order(colour_vote):
    screen = Screen(FixedPieces("IIOT", repeat=False), colour_vote=colour_vote)
    _move(screen, [LEFT] * 3)  # I on columns 1-4
    _move(screen, [RIGHT])  # I on columns 5-8
    _move(screen, [RIGHT] * 4)  # O on columns 9-10: row 1 is full
    screen.act(FALL)  # T spawns
    assert _kinds(screen.events) == [
        ("spawn", "I"), ("landed", "I"), ("spawn", "I"), ("landed", "I"),
        ("spawn", "O"), ("landed", "O"), ("rows_cleared", None), ("spawn", "T"),
    ]  # fmt: skip
    assert _kinds(screen.events) == _expected(screen.engine_events)
    by_kind = {e.kind: e for e in screen.events}
    assert by_kind["rows_cleared"].rows == (1,)
    assert screen.events[0].cells == ((4, 20), (5, 20), (6, 20), (7, 20))
    assert screen.events[5].cells == ((9, 1), (10, 1), (9, 2), (10, 2))  # where the O locked
    final = screen.updates[-1]
    assert final.status == "tracking" and final.falling.name == "T"
    assert final.falling.colour_agrees is (True if colour_vote else None)  # shape alone without piece colours
    assert np.array_equal(final.stack, screen.game.board.cells.astype(bool))


def test_moves_rotations_and_falls_report_no_second_spawn():
    screen = Screen(FixedPieces("TL", repeat=False))
    screen.act(FALL)
    for key in [ROTATE, LEFT, ROTATE, FALL, RIGHT, RIGHT, ROTATE, FALL, FALL, ROTATE, LEFT]:
        screen.act(key)
    assert _kinds(screen.events) == [("spawn", "T")]
    assert screen.updates[-1].falling.name == "T"
    assert screen.updates[-1].falling.orientation == screen.game.piece.orientation
    assert screen.updates[-1].falling.origin == (screen.game.piece.x, screen.game.piece.y)
    assert {u.status for u in screen.updates[4:]} == {"tracking"}


def test_a_flashing_line_clear_reports_nothing_until_the_rows_collapse():
    screen = Screen(FixedPieces("IIOT", repeat=False))
    _move(screen, [LEFT] * 3)
    _move(screen, [RIGHT])
    screen.act(FALL)
    for key in [RIGHT] * 4:
        screen.act(key)
    seen = len(screen.updates)
    screen.act(DROP, clear_flashes=2)
    during = screen.updates[seen:-2]  # the lock, the flashes, not yet the collapsed board
    assert not [e for u in during for e in u.events]
    assert any(u.status == "unsure" and "line-clear" in u.reason for u in during)
    assert all(u.stack is not None and u.stack[0].sum() == 8 for u in during)  # the stack is not cut by a blank row
    screen.act(FALL)
    assert _kinds(screen.events)[-4:] == [("spawn", "O"), ("landed", "O"), ("rows_cleared", None), ("spawn", "T")]
    assert np.array_equal(screen.updates[-1].stack, screen.game.board.cells.astype(bool))


def test_a_drop_that_locks_and_clears_rows_at_once_is_found():
    screen = Screen(FixedPieces("IIOT", repeat=False))
    screen.lock_frames = False  # the dropped piece is never seen in place
    _move(screen, [LEFT] * 3)
    _move(screen, [RIGHT])
    _move(screen, [RIGHT] * 4)
    screen.act(FALL)
    assert _kinds(screen.events) == _expected(screen.engine_events)
    cleared = [u for u in screen.updates if any(e.kind == "rows_cleared" for e in u.events)]
    assert [e for e in cleared[0].events if e.kind != "rows_cleared"][0].cells == ((9, 1), (10, 1), (9, 2), (10, 2))
    assert np.array_equal(screen.updates[-1].stack, screen.game.board.cells.astype(bool))


def test_pieces_spawning_above_the_well_are_reported_once_when_all_four_cells_show():
    screen = Screen(FixedPieces("TSZLJIO", repeat=False), hidden_rows=2)
    for _ in range(6):
        _move(screen, [FALL, FALL])
    for _ in range(3):  # the O spawns above the screen and falls into view
        screen.act(FALL)
    assert _kinds(screen.events) == _expected(screen.engine_events)
    spawns = [e for e in screen.events if e.kind == "spawn"]
    assert [e.piece for e in spawns] == list("TSZLJIO")
    assert all(len(e.cells) == 4 and all(y <= ROWS for _, y in e.cells) for e in spawns)
    entering = [u for u in screen.updates if "entering the well" in u.reason]
    assert entering and not [e for u in entering for e in u.events if e.kind == "spawn"]


def test_stacking_to_the_top_ends_the_game_after_the_board_freezes():
    screen = Screen(FixedPieces("O"))
    while not screen.game.over:
        screen.act(FALL)
        screen.act(DROP)
    screen.act(FALL)  # nothing happens any more
    assert "game_over" not in _kinds(screen.events)[-1]
    screen.wait(GAME_OVER_S)
    assert _kinds(screen.events) == [("spawn", "O"), ("landed", "O")] * 10 + [("game_over", None)]
    assert _kinds(screen.events) == _expected(screen.engine_events)
    assert screen.updates[-1].status == "game_over"
    assert np.array_equal(screen.updates[-1].stack, screen.game.board.cells.astype(bool))


def test_after_game_over_an_empty_well_starts_a_new_game():
    screen = Screen(FixedPieces("O"))
    while not screen.game.over:
        screen.act(FALL)
        screen.act(DROP)
    screen.wait(GAME_OVER_S)
    screen.game = Game(Rules("standard", COLS, ROWS), FixedPieces("T"))
    screen.ids[:] = 0
    screen.wait(1.0)  # the filter resyncs to the empty well after its resync_frames
    screen.act(FALL)
    assert _kinds(screen.events)[-2:] == [("game_over", None), ("spawn", "T")]


def test_a_stack_met_mid_game_is_reread_and_the_hidden_falling_piece_found_when_it_moves():
    screen = Screen(FixedPieces("LOOT", repeat=False))
    for keys in ([LEFT] * 4, [RIGHT] * 4):
        _move(screen, keys)
    for _ in range(5):
        screen.act(FALL)  # the O in play, below the spawn area
    screen.tracker.reset()
    screen.filter.reset()
    screen.updates.clear()
    screen.show(*screen.picture(screen.ids, screen.game.piece))
    assert screen.updates[-1].status == "unsure" and "re-read" in screen.updates[-1].reason
    assert screen.updates[-1].falling is None
    screen.act(LEFT)
    assert screen.updates[-1].status == "tracking" and screen.updates[-1].falling.name == "O"
    screen.act(DROP)
    screen.act(FALL)
    assert _kinds(screen.events) == [("landed", "O"), ("spawn", "T")]


def test_after_a_camera_outage_the_piece_that_spawned_unseen_is_followed_at_its_next_fall():
    # a 1 s freeze at level 10: the O locked and the S fell half-way down while no frame came
    screen = Screen(FixedPieces("OSI", repeat=False))
    screen.act(FALL)
    screen.act(FALL)
    assert screen.updates[-1].falling is not None and screen.updates[-1].falling.name == "O"
    screen.hold = 0
    while screen.game.pieces < 1:
        screen.act(FALL)
    for _ in range(10):
        screen.act(FALL)  # the S spawns and falls below the rows where a next piece is looked for
    screen.time += 1.0
    screen.hold = 2
    screen.act(FALL)
    assert screen.updates[-1].status == "unsure" and "no frame for" in screen.updates[-1].reason  # re-read at once
    screen.act(FALL)  # the S moves: found (not after the tracker's own resync_s of blindness)
    assert screen.updates[-1].status == "tracking" and screen.updates[-1].falling.name == "S"
    assert np.array_equal(screen.updates[-1].stack, screen.game.board.cells.astype(bool))


def test_a_piece_apart_in_the_spawn_area_of_the_first_board_is_a_spawn():
    screen = Screen(FixedPieces("LOT", repeat=False))
    _move(screen, [LEFT] * 4)
    screen.act(FALL)  # the O spawns
    screen.tracker.reset()
    screen.filter.reset()
    screen.updates.clear()
    screen.show(*screen.picture(screen.ids, screen.game.piece))
    assert _kinds(screen.events) == [("spawn", "O")]
    assert screen.updates[-1].status == "tracking"
    assert np.array_equal(screen.updates[-1].stack, screen.ids > 0)


def test_a_lone_piece_low_in_the_first_board_is_read_as_stack_not_as_a_spawn():
    # met between pieces: the only cells are a J that has landed; it may as well be falling,
    # so the tracker must not claim a spawn it did not see (the vision bench caught this once)
    pile = np.zeros((ROWS, COLS), np.uint8)
    pile[0, [8, 9]] = 1
    pile[[1, 2], 9] = 1
    screen = Screen(FixedPieces("T", repeat=False))
    screen.game = Game(Rules("standard", COLS, ROWS), FixedPieces("T", repeat=False), board=Board(cells=pile))
    screen.ids = pile * piece_index("J")
    screen.show(*screen.picture(screen.ids, None))
    assert screen.events == []
    assert np.array_equal(screen.updates[-1].stack, pile > 0)
    screen.act(FALL)  # the next piece spawns: that one is seen arriving
    assert _kinds(screen.events) == [("spawn", "T")]


def test_a_drop_lock_and_spawn_the_filter_saw_in_one_commit_are_landed_and_spawn():
    screen = Screen(FixedPieces("OTI", repeat=False))
    screen.act(FALL)
    screen.act(FALL)
    screen.hold = 0  # the drop, the lock and the next spawn happen between two frames
    screen.act(DROP)
    screen.act(FALL)
    screen.hold = 2
    screen.act(FALL)  # committed at once: the O's cells moved down and a T came
    assert _kinds(screen.events) == [("spawn", "O"), ("landed", "O"), ("spawn", "T")]
    assert screen.updates[-1].status == "tracking" and screen.updates[-1].falling.name == "T"
    screen.act(DROP)
    screen.act(FALL)
    assert _kinds(screen.events) == [("spawn", "O"), ("landed", "O"), ("spawn", "T"), ("landed", "T"), ("spawn", "I")]
    assert np.array_equal(screen.updates[-1].stack, screen.game.board.cells.astype(bool))


def test_a_next_piece_that_moved_turned_and_fell_before_the_commit_is_still_its_spawn():
    # level 10, a plan made ahead: the I is pushed right, stood upright and falls while the camera
    # commits no board (frames skipped under load); it is found below the spawn rows
    screen = Screen(FixedPieces("OIT", repeat=False))
    screen.act(FALL)
    screen.act(FALL)
    screen.hold = 0
    screen.act(DROP)
    screen.act(FALL)  # the I spawns
    for action in (RIGHT, RIGHT, ROTATE, FALL, FALL, FALL, FALL):
        screen.act(action)
    screen.hold = 2
    screen.act(FALL)
    assert screen.game.piece is not None and max(y for _, y in screen.game.piece.cells()) <= ROWS - SPAWN_AREA_ROWS
    assert _kinds(screen.events) == [("spawn", "O"), ("landed", "O"), ("spawn", "I")]
    assert screen.updates[-1].status == "tracking" and screen.updates[-1].falling.name == "I"
    assert np.array_equal(screen.updates[-1].stack, screen.game.board.cells.astype(bool))


def test_a_colour_that_votes_against_the_shape_holds_the_spawn_back():
    screen = Screen(FixedPieces("T", repeat=False))
    screen.show(*screen.picture(screen.ids, screen.game.piece))  # the empty well
    screen.game.iterate()
    screen.show(*screen.picture(screen.ids, screen.game.piece, piece_colour="O"))
    assert not screen.events and screen.updates[-1].status == "unsure" and "colour" in screen.updates[-1].reason
    screen.act(FALL)
    assert _kinds(screen.events) == [("spawn", "T")]


def test_piece_colours_are_learned_from_the_first_spawns_then_vote():
    screen = Screen(FixedPieces("OISZLJT" * 3 + "T", repeat=False))
    screen.tracker = PieceTracker(_calibration(colours=None), game_over_s=GAME_OVER_S)
    game = screen.game
    while game.pieces < 21:  # pieces landed
        if game.pieces == 20:
            assert screen.tracker.calibration.piece_colours is None  # the third T is still to come
        screen.act(FALL)  # the next piece spawns
        screen.act(FALL)
        lowest = min(enumerate_placements(game.board, game.piece.kind, game.rules), key=lambda p: p.y)
        for key in lowest.keys:
            if game.piece is None:
                break
            screen.act(key)
    assert [e.piece for e in screen.events if e.kind == "spawn"] == list("OISZLJT" * 3)
    assert np.allclose(screen.tracker.calibration.piece_colours, PIECE_COLOURS)
    # learned, the colour votes: the next T drawn in the O's colour is held back
    screen.game.iterate()
    screen.show(*screen.picture(screen.ids, screen.game.piece, piece_colour="O"))
    assert screen.updates[-1].status == "unsure" and "colour" in screen.updates[-1].reason


def test_a_misread_cell_committed_for_a_moment_reports_nothing():
    screen = Screen(FixedPieces("TOI", repeat=False))
    _move(screen, [LEFT, LEFT])
    screen.act(FALL)
    screen.act(FALL)
    for glitch in [(1, ROWS), (9, 1), (5, 1)]:  # a cell in the top row, one beside the stack, one of the stack lost
        filled, colours = screen.picture(screen.ids, screen.game.piece)
        filled[glitch[1] - 1, glitch[0] - 1] ^= True
        screen.show(filled, colours)
        # a lone cell in the top row may be a piece coming in: nothing is reported until it is one
        assert screen.updates[-1].status == ("tracking" if glitch[1] == ROWS else "unsure")
        assert screen.updates[-1].falling.name == "O"
        screen.act(FALL)
        assert screen.updates[-1].status == "tracking"
    screen.act(DROP)
    screen.act(FALL)
    assert _kinds(screen.events) == _expected(screen.engine_events)


def test_cells_filling_in_under_the_stack_are_no_new_piece():
    pile = np.zeros((ROWS, COLS), np.uint8)
    pile[0, [0, 1, 2, 7, 8, 9]] = 1
    pile[1, :9] = 1  # columns 4-7 of row 1 are holes under row 2
    screen = Screen(FixedPieces("T", repeat=False))
    screen.game = Game(Rules("standard", COLS, ROWS), FixedPieces("T", repeat=False), board=Board(cells=pile))
    screen.ids = pile * piece_index("J")
    screen.show(*screen.picture(screen.ids, None))  # met mid-game: the pile is read as it is
    screen.act(FALL)
    screen.act(FALL)
    # a game-over animation fills the well from the bottom, here in an I's colour, so that only
    # where the four new cells lie tells them from an I
    screen.ids[0] = piece_index("I")
    screen.show(*screen.picture(screen.ids, screen.game.piece))
    assert _kinds(screen.events) == [("spawn", "T")]
    assert screen.updates[-1].status == "unsure" and "under settled cells" in screen.updates[-1].reason


def test_unsure_and_missing_frames_report_nothing_and_keep_the_state():
    screen = Screen(FixedPieces("T", repeat=False))
    screen.act(FALL)
    blank = Observation(False, "black frame", np.zeros((ROWS, COLS), bool), np.zeros((ROWS, COLS), np.float32), np.zeros((ROWS, COLS, 3), np.float32))
    update = screen.tracker.update(screen.filter.update(blank, screen.time), blank, screen.time)
    assert update.events == () and update.status == "unsure" and "black frame" in update.reason
    assert update.falling.name == "T"


def _random_game(seed: int, hidden_rows: int, misreads: bool = False) -> Screen:
    """Up to 60 pieces, most of them played to the lowest place they reach (so rows clear) with
    random falls between the keys, the others moved at random; then, if the game is over (or a
    piece locked partly above the visible well), the frozen board until the tracker says so."""
    rng = np.random.default_rng(seed)
    screen = Screen(RandomPieces(seed), hidden_rows=hidden_rows, hold=int(rng.integers(2, 4)))
    screen.lock_frames = bool(rng.random() < 0.5)
    screen.misreads = np.random.default_rng(seed + 1) if misreads else None
    game = screen.game
    while not game.over and not screen.locked_above and game.pieces < 60:
        screen.act(FALL)  # the next piece spawns
        if game.piece is None:
            break
        screen.act(FALL)  # keys start one row below the spawn
        placements = enumerate_placements(game.board, game.piece.kind, game.rules) if game.piece else []
        if placements and rng.random() < 0.8:
            lowest = min(p.y for p in placements)
            keys = list(rng.choice([p for p in placements if p.y == lowest]).keys)
        else:
            keys = [str(k) for k in rng.choice([FALL, LEFT, RIGHT, ROTATE], size=6)] + [DROP]
        for key in keys:
            if game.piece is None:
                break
            screen.act(key)
            if game.piece is not None and rng.random() < 0.3:
                screen.act(FALL)
    if game.over or screen.locked_above:
        screen.wait(GAME_OVER_S)
    else:
        screen.act(FALL)  # the next spawn shows that the last piece landed
    return screen


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_play_reports_exactly_the_engines_events(seed):
    screen = _random_game(seed, hidden_rows=0)
    assert _kinds(screen.events) == _expected(screen.engine_events)
    landed = [(e.piece, e.cells) for e in screen.events if e.kind == "landed"]
    assert landed == [(e.piece, tuple(sorted(e.cells, key=lambda c: (c[1], c[0])))) for e in screen.engine_events if e.kind == "landed"]


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_play_above_the_well_spawns_each_piece_that_came_into_view_once(seed):
    screen = _random_game(seed, hidden_rows=2)
    assert [e.piece for e in screen.events if e.kind == "spawn"] == [kind for _, kind in sorted(screen.in_view.items())]
    assert (_kinds(screen.events)[-1] == ("game_over", None)) == (screen.game.over or screen.locked_above)


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), hidden_rows=st.sampled_from([0, 2]))
def test_misread_cells_committed_during_play_make_no_false_spawn(seed, hidden_rows):
    screen = _random_game(seed, hidden_rows, misreads=True)
    kinds = {}  # piece number -> type, from the engine's spawns
    for event in screen.engine_events:
        if event.kind == "spawned":
            kinds[len(kinds) + 1] = event.piece
    last = 0
    for update, number in zip(screen.updates, screen.numbers):
        for event in update.events:
            if event.kind == "spawn":  # a true spawn is a later piece than the last one, named right
                assert number > last and event.piece == kinds[number]
                last = number


def test_bad_settings_are_a_clear_error():
    with pytest.raises(ValueError, match="top_out_rows"):
        PieceTracker(top_out_rows=0)
    with pytest.raises(ValueError, match="game_over_s"):
        PieceTracker(game_over_s=0)
    with pytest.raises(ValueError, match="resync_s"):
        PieceTracker(resync_s=0)
