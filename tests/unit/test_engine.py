"""The key-by-key Standard Tetris engine against the rules of STANDARD_TETRIS.md 2-6 and Fahey's code."""

from __future__ import annotations

import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import Event, FallingPiece, Game, NotDefinedByRules
from gamerig.games.tetris.pieces import PIECE_NAMES
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.sequence import FixedPieces, SplitMix64


def new_game(pieces: str = "T", board: Board | None = None, rules: Rules | None = None, **kwargs) -> Game:
    """A game of a fixed piece sequence; the rules default to Standard Tetris at the board's size."""
    if rules is None:
        rules = Rules(width=board.width, height=board.height) if board else Rules()
    return Game(rules, FixedPieces(pieces), board=board, **kwargs)


def kinds(events: list[Event]) -> list[str]:
    return [e.kind for e in events]


def spawn_and_fall(game: Game) -> None:
    """Spawn the next piece and let it fall one row, where Standard Tetris moves it."""
    assert kinds(game.iterate()) == ["spawned"]
    assert game.iterate() == []


def rows_with_column_empty(width: int, height: int, filled_rows: int, empty_column: int) -> Board:
    board = Board(width, height)
    for y in range(1, filled_rows + 1):
        for x in range(1, width + 1):
            board[x, y] = x != empty_column
    return board


# ---- spawning ---------------------------------------------------------------------


@pytest.mark.parametrize("piece", PIECE_NAMES)
def test_pieces_spawn_at_six_twenty_inside_the_four_by_two_region(piece: str) -> None:
    game = new_game(piece)
    (event,) = game.iterate()
    assert game.piece == FallingPiece(piece, 1, 6, 20)
    assert event == Event("spawned", piece, game.piece.cells())
    assert all(4 <= x <= 7 and 19 <= y <= 20 for x, y in event.cells)
    assert any(y == 20 for _, y in event.cells)  # every piece touches the top edge


@pytest.mark.parametrize("width", [4, 5, 11])
def test_spawn_column_follows_the_width(width: int) -> None:
    game = Game(Rules(width=width, height=6), FixedPieces("I"))
    game.iterate()
    assert (game.piece.x, game.piece.y) == (1 + width // 2, 6)


@pytest.mark.parametrize("piece", PIECE_NAMES)
def test_a_piece_cannot_rotate_at_spawn_but_can_one_row_lower(piece: str) -> None:
    game = new_game(piece)
    game.iterate()
    game.press("rotate")
    assert game.piece.orientation == 1
    game.iterate()
    game.press("rotate")
    assert game.piece.orientation == (1 if piece == "O" else 2)


def test_rotation_wraps_after_the_last_distinct_orientation() -> None:
    for piece, turns in (("I", 2), ("S", 2), ("T", 4), ("L", 4)):
        game = new_game(piece)
        spawn_and_fall(game)
        seen = []
        for _ in range(turns):
            game.press("rotate")
            seen.append(game.piece.orientation)
        assert seen == list(range(2, turns + 1)) + [1]


def test_a_blocked_spawn_ends_the_game() -> None:
    board = Board(10, 20)
    board[6, 20] = 1
    game = new_game("O", board=board)
    assert kinds(game.iterate()) == ["game_over"]
    assert game.over and game.piece is None and game.pieces == 0
    assert game.iterate() == [] and game.press("drop") == []


# ---- moving ---------------------------------------------------------------------------


def test_left_and_right_stop_at_the_walls() -> None:
    game = new_game("I")
    spawn_and_fall(game)
    for _ in range(8):
        game.press("left")
    assert game.piece.x == 3  # cells in columns 1..4
    for _ in range(12):
        game.press("right")
    assert game.piece.x == 9  # cells in columns 7..10


def test_moves_into_occupied_cells_are_refused() -> None:
    board = Board(10, 20)
    board[2, 19] = 1
    board[6, 17] = 1
    game = new_game("I", board=board)
    spawn_and_fall(game)  # flat I in columns 4..7 of row 19
    game.press("rotate")  # upright it would cover (6, 17)
    assert game.piece.orientation == 1
    game.press("left")
    game.press("left")  # the second step would cover (2, 19)
    assert (game.piece.x, game.piece.y) == (5, 19)


def test_keys_do_nothing_without_a_piece() -> None:
    game = new_game("T")
    assert game.press("left") == [] and game.press("drop") == []
    assert game.piece is None and game.board == Board(10, 20)


def test_unknown_keys_are_rejected() -> None:
    game = new_game("T")
    with pytest.raises(ValueError, match="unknown key 'up'; expected one of rotate, left, right, drop"):
        game.press("up")  # type: ignore[arg-type]


# ---- falling and landing -----------------------------------------------------------


def test_an_iteration_that_starts_with_the_piece_resting_lands_it() -> None:
    game = new_game("O")
    game.iterate()
    for _ in range(18):  # origin row 20 -> 2: the O's bottom row reaches the floor
        assert game.iterate() == []
    assert game.piece.y == 2 and game.free_fall_iterations == 18
    events = game.iterate()
    assert events == [Event("landed", "O", ((5, 1), (6, 1), (6, 2), (5, 2)), points=24 - 18)]
    assert game.piece is None and game.pieces == 1 and game.score == 6
    assert game.board.to_rows()[-2:] == ["....##....", "....##...."]


def test_drop_lands_at_once_and_scores_the_falls_saved() -> None:
    game = new_game("T")
    spawn_and_fall(game)
    events = game.press("drop")
    assert kinds(events) == ["landed"]
    assert set(events[0].cells) == {(6, 1), (5, 2), (6, 2), (7, 2)}
    assert game.score == 21 + 3 * 1 - 1


def test_the_next_iteration_after_landing_spawns_the_next_piece() -> None:
    game = new_game("TI")
    spawn_and_fall(game)
    game.press("drop")
    assert game.iterate() == [Event("spawned", "I", ((4, 20), (5, 20), (6, 20), (7, 20)))]
    assert game.free_fall_iterations == 0


@pytest.mark.parametrize("rows", [1, 2, 3, 4])
def test_an_upright_i_clears_up_to_four_rows(rows: int) -> None:
    game = new_game("I", board=rows_with_column_empty(10, 20, rows, empty_column=10))
    spawn_and_fall(game)
    game.press("rotate")
    for _ in range(4):
        game.press("right")
    events = game.press("drop")
    assert kinds(events) == ["landed", "rows_cleared"]
    assert events[1].rows == rows and game.lines == rows
    remaining = {(x, y) for x in range(1, 11) for y in range(1, 21) if game.board[x, y]}
    assert remaining == {(10, y) for y in range(1, 4 - rows + 1)}


def test_a_lone_full_top_row_is_never_cleared_by_default() -> None:
    # A flat I that cannot fall fills the top row; Fahey's collapse never scans row H.
    board = Board.from_rows(["#....#", "..#...", "......", "......", "......", "......"])
    game = new_game("II", board=board)
    game.iterate()
    assert kinds(game.iterate()) == ["landed"]
    assert game.lines == 0 and game.board.to_rows()[0] == "######"
    assert kinds(game.iterate()) == ["game_over"]


def test_the_top_row_clears_when_the_rules_say_so() -> None:
    board = Board.from_rows(["#....#", "..#...", "......", "......", "......", "......"])
    game = Game(Rules(width=6, height=6, clear_top_row=True), FixedPieces("II"), board=board)
    game.iterate()
    assert kinds(game.iterate()) == ["landed", "rows_cleared"]
    assert game.lines == 1 and game.board.to_rows()[0] == "......"
    assert kinds(game.iterate()) == ["spawned"]


def test_a_full_top_row_clears_when_a_row_below_it_does() -> None:
    # The T cannot fall and completes rows 5 and 6; removing row 5 pulls row 6 into the
    # scanned range, where Fahey's collapse checks the same position again and removes it.
    board = Board.from_rows(["##...#", "###.##", "#.....", "#.....", "#.....", "#....."])
    game = new_game("T", board=board)
    game.iterate()
    events = game.iterate()
    assert kinds(events) == ["landed", "rows_cleared"] and events[1].rows == 2
    assert game.board.to_rows() == ["......", "......"] + ["#....."] * 4


# ---- levels, speed, score --------------------------------------------------------


def test_levels_delay_and_score_follow_the_lines() -> None:
    # Rows 1..12 lack only column 1: three upright I's there clear 4 rows each.
    game = new_game("I", board=rows_with_column_empty(10, 20, 12, empty_column=1))
    assert (game.level, game.delay) == (1, pytest.approx(0.50))
    for _ in range(3):
        spawn_and_fall(game)
        game.press("rotate")
        for _ in range(5):
            game.press("left")
        game.press("drop")
    assert game.lines == 12 and game.pieces == 3
    assert (game.level, game.delay) == (2, pytest.approx(0.45))
    # Each piece scores at the level it was played at (lines 0, 4, 8: level 1), one fall each.
    assert game.score == 3 * (21 + 3 * 1 - 1)


def test_initial_level_sets_speed_and_points() -> None:
    game = new_game("O", initial_level=5)
    assert (game.level, game.delay) == (5, pytest.approx(0.30))
    spawn_and_fall(game)
    game.press("drop")
    assert game.score == 21 + 3 * 5 - 1


@pytest.mark.parametrize("level", [0, 11])
def test_initial_level_outside_one_to_ten_is_rejected(level: int) -> None:
    with pytest.raises(ValueError, match="initial level must be 1..10"):
        new_game(initial_level=level)


def test_a_board_of_the_wrong_size_is_rejected() -> None:
    with pytest.raises(ValueError, match="board is 6 x 6 but the rules say 10 x 20"):
        Game(Rules(), FixedPieces("T"), board=Board(6, 6))


def test_the_game_plays_on_its_own_copy_of_the_board() -> None:
    board = Board(10, 20)
    game = new_game("O", board=board)
    spawn_and_fall(game)
    game.press("drop")
    assert board.filled_count() == 0 and game.board.filled_count() == 4


# ---- preview ----------------------------------------------------------------------


def test_next_piece_is_shown_only_with_the_preview() -> None:
    hidden = new_game("TSZ")
    hidden.iterate()
    assert hidden.next_piece is None
    shown = new_game("TSZ", preview=True)
    shown.iterate()
    assert shown.next_piece == "S"
    shown.press("drop")
    shown.iterate()
    assert (shown.piece.kind, shown.next_piece) == ("S", "Z")


# ---- junk rows ---------------------------------------------------------------------


def test_junk_rows_lift_the_pile_and_keep_a_gap_in_every_row() -> None:
    board = Board(4, 60)
    board[1, 1] = 1
    board[2, 60] = 1  # pushed out of the top and lost
    game = new_game("T", board=board, rules=Rules(width=4, height=60))
    game.add_junk_rows(50, SplitMix64(9))
    assert game.board[1, 51] == 1 and game.board[2, 60] == 0
    junk = game.board.cells[:50]
    assert (junk.sum(axis=1) < 4).all()  # each row can still be cleared
    assert 0.55 < junk.mean() < 0.8  # Fahey fills a junk cell with probability 2/3


def test_junk_rows_are_deterministic_from_the_seed() -> None:
    def junk(seed: int) -> list[str]:
        game = new_game("T")
        game.add_junk_rows(5, SplitMix64(seed))
        return game.board.to_rows()

    assert junk(1) == junk(1)
    assert junk(1) != junk(2)


def test_negative_junk_is_rejected() -> None:
    with pytest.raises(ValueError, match="junk row count must be >= 0"):
        new_game("T").add_junk_rows(-1, SplitMix64(0))


# ---- determinism ------------------------------------------------------------------


def test_the_same_keys_give_the_same_game() -> None:
    def play(seed: int) -> tuple[list[str], int, int, int]:
        rng = SplitMix64(seed)
        game = new_game("OISZLJT", preview=True)
        for _ in range(3000):
            if game.over:
                break
            game.iterate()
            for _ in range(rng.below(4)):
                game.press(("rotate", "left", "right", "drop")[rng.below(4)])
        return game.board.to_rows(), game.score, game.lines, game.pieces

    first = play(11)
    assert first == play(11)
    assert first[3] > 10


# ---- simplified rules --------------------------------------------------------------


def simplified_game(board: Board, pieces: str = "O") -> Game:
    return Game(Rules(name="simplified", width=board.width, height=board.height), FixedPieces(pieces), board=board)


def test_simplified_rules_drop_straight_from_above_onto_an_overhang() -> None:
    board = Board.from_rows(["......", "......", ".#....", "......", "......", "......"])
    game = simplified_game(board)
    game.iterate()
    events = game.place_directly(0, 2)  # the O covers columns 1..2 and stops on (2, 4)
    assert set(events[0].cells) == {(1, 5), (2, 5), (1, 6), (2, 6)}
    assert not game.over and game.score == 21 + 3


def test_simplified_rules_end_the_game_on_overflow_before_rows_clear() -> None:
    # The O would complete row 4 but its upper half sticks out above the board.
    board = Board.from_rows(["..##", "#..#", "#..#", "#.##"])
    game = simplified_game(board)
    game.iterate()
    assert kinds(game.place_directly(0, 2)) == ["game_over"]
    assert game.over and game.lines == 0 and game.board == board


def test_simplified_rules_have_no_spawn_check() -> None:
    board = Board(10, 20)
    board[6, 20] = 1
    game = simplified_game(board)
    assert kinds(game.iterate()) == ["spawned"]


def test_simplified_rules_have_no_keys_and_standard_rules_no_direct_placement() -> None:
    game = simplified_game(Board(10, 20))
    game.iterate()
    with pytest.raises(NotDefinedByRules, match="use place_directly"):
        game.press("left")
    with pytest.raises(NotDefinedByRules, match="no gravity"):
        game.iterate()
    standard = new_game("T")
    standard.iterate()
    with pytest.raises(NotDefinedByRules, match="use press"):
        standard.place_directly(0, 5)


def test_direct_placement_rejects_bad_rotations_and_columns() -> None:
    game = simplified_game(Board(10, 20), "S")
    with pytest.raises(RuntimeError, match="call iterate"):
        game.place_directly(0, 5)
    game.iterate()
    with pytest.raises(ValueError, match="rotations must be 0..1"):
        game.place_directly(2, 5)
    with pytest.raises(ValueError, match="does not fit the board at column 10"):
        game.place_directly(0, 10)  # the flat S reaches one column right of its origin
