"""Dellacherie's features as Fahey computes them, pinned cell-exactly on hand-made boards.

Every expected number below was counted by hand from the definitions in
research/ai.md section 3.1 (hole depth and rows with holes: section 3.2).
Both the literal reference (reference_features.py) and the compiled kernel
must give them; a property test then checks kernel == reference on random piles.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gamerig.games.tetris import kernel
from gamerig.games.tetris.board import Board
from gamerig.games.tetris.placements import enumerate_placements, kind_of
from gamerig.games.tetris.rules import Rules

import reference_features as reference
from piles import pieces, piles

BOARD_FEATURES = ("row_transitions", "column_transitions", "holes", "wells", "hole_depth", "rows_with_holes", "pile_height")
PLACEMENT_FEATURES = ("landing_height", "eroded_cells", "rows_cleared") + BOARD_FEATURES


def kernel_board_features(board: Board) -> dict[str, float]:
    feats = np.zeros(kernel.N_FEATURES)
    kernel.board_features(board.cells, np.zeros(board.width, dtype=np.int64), feats)
    return {name: feats[kernel.FEATURE_NAMES.index(name)] for name in BOARD_FEATURES}


def kernel_placement_features(board: Board, piece: str, orientation: int, x: int, y: int, rules: Rules) -> dict[str, float]:
    """The kernel's features for a 1-based placement (it works 0-based)."""
    feats = np.zeros(kernel.N_FEATURES)
    scratch = np.zeros_like(board.cells)
    heights = np.zeros(board.width, dtype=np.int64)
    kernel.placement_features(
        board.cells, scratch, heights, kind_of(piece), orientation - 1, x - 1, y - 1, rules.clearable_rows, feats
    )
    return {name: feats[kernel.FEATURE_NAMES.index(name)] for name in PLACEMENT_FEATURES}


IMPLEMENTATIONS = {"reference": reference.board_features, "kernel": kernel_board_features}


def features(rowT: int, colT: int, holes: int, wells: int, depth: int, hole_rows: int, pile: int) -> dict[str, float]:
    return dict(zip(BOARD_FEATURES, (rowT, colT, holes, wells, depth, hole_rows, pile)))


HAND_BOARDS = {
    # 20 empty rows with both ends open: 2 each; every column's empty bottom meets the floor.
    "empty 10x20": (Board(10, 20), features(40, 10, 0, 0, 0, 0, 0)),
    # Flat top at row 3 over two covered holes, (2,1) and (4,2); each hole is flanked, so a well of 1.
    "flat pile with holes": (
        Board.from_rows([".....", ".....", ".....", "#####", "###.#", "#.###"]),
        features(6 + 0 + 2 + 2, 1 + 3 + 1 + 3 + 1, 2, 1 + 1, 2 + 1, 2, 3),
    ),
    # An open well of depth 3 in the middle: 3 + 2 + 1 = 6.
    "open well of depth 3": (
        Board.from_rows([".....", ".....", ".....", "##.##", "##.##", "##.##"]),
        features(6 + 3 * 2, 4 * 1 + 1, 0, 6, 0, 0, 3),
    ),
    # (2,2) is a covered hole flanked by filled cells: 1 hole and a well of 1; plus a
    # depth-3 well against the right wall: 3 + 2 + 1.
    "covered flanked hole": (
        Board.from_rows(["....", "###.", "#.#.", "###."]),
        features(2 + 2 + 4 + 2, 1 + 3 + 1 + 1, 1, 1 + 6, 1, 1, 3),
    ),
    # Wells against both walls: the left one of depth 2 (2 + 1), the right one of depth 1.
    "walls": (
        Board.from_rows([".....", ".....", ".....", ".###.", ".####"]),
        features(6 + 4 + 2, 1 + 1 + 1 + 1 + 1, 0, 3 + 1, 0, 0, 2),
    ),
    # A filled top row meets the empty sky (+1 per column); 3 holes under each of columns 2..4.
    "full top row": (
        Board.from_rows(["####", "#...", "#...", "#..."]),
        features(0 + 2 * 3, 1 + 3 * 3, 9, 0, 3, 3, 4),
    ),
}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("case", HAND_BOARDS)
def test_board_features_on_hand_made_boards(case: str, implementation: str) -> None:
    board, expected = HAND_BOARDS[case]
    assert IMPLEMENTATIONS[implementation](board) == expected


PLACEMENT_IMPLEMENTATIONS = {"reference": reference.placement_features, "kernel": kernel_placement_features}


@pytest.mark.parametrize("implementation", PLACEMENT_IMPLEMENTATIONS)
def test_vertical_i_clearing_two_rows_erodes_two_cells_per_row(implementation: str) -> None:
    board = Board.from_rows(["....", "....", "....", "....", "###.", "###."])
    rules = Rules(width=4, height=6)
    # I upright (orientation 2: dy -2..1) with its origin at (4, 3) covers (4,1)..(4,4).
    got = PLACEMENT_IMPLEMENTATIONS[implementation](board, "I", 2, 4, 3, rules)
    assert got["landing_height"] == 0.5 * (1 + 4)  # before the clear
    assert got["rows_cleared"] == 2
    assert got["eroded_cells"] == 2 * 2
    # After the collapse the upper half of the I is left standing in column 4, rows 1..2.
    assert {k: got[k] for k in BOARD_FEATURES} == features(4 * 2 + 2 * 2, 3 + 1, 0, 0, 0, 0, 2)


@pytest.mark.parametrize("implementation", PLACEMENT_IMPLEMENTATIONS)
def test_flat_i_on_the_floor_has_landing_height_one(implementation: str) -> None:
    got = PLACEMENT_IMPLEMENTATIONS[implementation](Board(10, 20), "I", 1, 6, 1, Rules())
    assert got["landing_height"] == 1.0
    assert got["eroded_cells"] == 0


# Row 5 lacks only column 4 and row 6 (the top) lacks columns 3..5: a T spawning at (4, 6)
# cannot fall (its arms rest on row 5) and lands where it spawned, completing rows 5 and 6.
# Fahey's collapse removes row 5, then rechecks that position, now holding the full top
# row, and removes it too.
TOP_ROW_PULLED_DOWN = ["##...#", "###.##", "#.....", "#.....", "#.....", "#....."]


@pytest.mark.parametrize("implementation", ["reference", "kernel"])
def test_full_top_row_is_removed_when_a_row_below_it_is(implementation: str) -> None:
    board = Board.from_rows(TOP_ROW_PULLED_DOWN)
    got = PLACEMENT_IMPLEMENTATIONS[implementation](board, "T", 1, 4, 6, Rules(width=6, height=6))
    assert got["rows_cleared"] == 2
    assert got["eroded_cells"] == 2 * 4
    assert got["pile_height"] == 4


@pytest.mark.parametrize("implementation", PLACEMENT_IMPLEMENTATIONS)
@pytest.mark.parametrize("clear_top_row, cleared", [(False, 0), (True, 1)])
def test_a_lone_full_top_row_stays_unless_the_rules_clear_it(implementation: str, clear_top_row: bool, cleared: int) -> None:
    board = Board.from_rows(["#....#", "..#...", "......", "......", "......", "......"])
    rules = Rules(width=6, height=6, clear_top_row=clear_top_row)
    # A flat I at its spawn (4, 6) rests on (3, 5) and fills the top row.
    got = PLACEMENT_IMPLEMENTATIONS[implementation](board, "I", 1, 4, 6, rules)
    assert got["rows_cleared"] == cleared
    assert got["pile_height"] == (5 if cleared else 6)


@settings(max_examples=60)
@given(board=piles(), piece=pieces, clear_top_row=st.booleans(), simplified=st.booleans())
def test_kernel_features_equal_the_reference_on_random_piles(
    board: Board, piece: str, clear_top_row: bool, simplified: bool
) -> None:
    rules = Rules(
        name="simplified" if simplified else "standard",
        width=board.width,
        height=board.height,
        clear_top_row=clear_top_row,
    )
    for p in enumerate_placements(board, piece, rules):
        args = (board, piece, p.orientation, p.x, p.y, rules)
        assert kernel_placement_features(*args) == reference.placement_features(*args), p


@pytest.mark.parametrize("width", [4, 5, 10, 11])
def test_priority_is_fahey_tie_break_formula(width: int) -> None:
    spawn_x = 1 + width // 2
    for rotations in range(4):
        for x in range(1, width + 1):
            expected = 100 * abs(x - spawn_x) + (10 if x < spawn_x else 0) - rotations
            assert kernel.priority(width, rotations, x - 1) == expected


def test_priority_prefers_the_edges_then_the_left_then_fewer_rotations() -> None:
    assert kernel.priority(10, 0, 0) == 510  # column 1: five from the spawn column 6, left of it
    assert kernel.priority(10, 0, 9) == 400  # column 10: four to the right
    assert kernel.priority(10, 3, 5) == -3  # at the spawn column after three turns


def moves_inside_the_board(piece: str, width: int) -> int:
    """(orientation, column) pairs that keep the piece inside a board of this width."""
    from gamerig.games.tetris.pieces import ORIENTATIONS

    return sum(width - (max(dx for dx, _ in o) - min(dx for dx, _ in o)) for o in ORIENTATIONS[piece])


def kernel_reach(board: Board) -> tuple[int, int]:
    feats = np.zeros(kernel.N_FEATURES)
    kernel.board_features(board.cells, np.zeros(board.width, dtype=np.int64), feats)
    return int(feats[kernel.FEATURE_NAMES.index("unreachable")]), int(feats[kernel.FEATURE_NAMES.index("blocked_spawns")])


def test_a_blocked_spawn_makes_every_move_unreachable() -> None:
    # 10 wide: O 9, I 7+10, S 8+9, Z 8+9, L/J/T 8+9+8+9 each = 162 moves; no piece can spawn.
    board = Board.from_rows(["....##...."] + [".........."] * 8 + ["#........."])
    assert kernel_reach(board) == (162, 7)


def test_an_empty_board_blocks_nothing() -> None:
    assert kernel_reach(Board(10, 10)) == (0, 0)


@settings(max_examples=150)
@given(board=piles())
def test_unreachable_counts_the_moves_the_placement_search_cannot_reach(board: Board) -> None:
    from gamerig.games.tetris.pieces import PIECE_NAMES

    rules = Rules(width=board.width, height=board.height)
    expected_blocked = 0
    expected_spawns = 0
    for piece in PIECE_NAMES:
        reachable = len(enumerate_placements(board, piece, rules))
        expected_blocked += moves_inside_the_board(piece, board.width) - reachable
        expected_spawns += reachable == 0
    assert kernel_reach(board) == (expected_blocked, expected_spawns)
