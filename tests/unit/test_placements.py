"""Every candidate placement carries keys that land exactly it, checked in the key-by-key engine.

The engine (games/tetris/engine.py) is the independent, literal model of
Fahey's game; placements come from the compiled kernel.  Over random piles,
some reaching the top so the spawn is blocked, and all seven pieces.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from gamerig.games.tetris import kernel
from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import Event, Game, Key
from gamerig.games.tetris.pieces import PIECE_NAMES, cells as piece_cells, orientation_count
from gamerig.games.tetris.placements import enumerate_placements, kind_of
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.sequence import FixedPieces

from piles import piles

CellSet = frozenset[tuple[int, int]]


def standard_rules(board: Board) -> Rules:
    return Rules(width=board.width, height=board.height)


def play_keys(board: Board, piece: str, keys: tuple[Key, ...]) -> tuple[Game, list[Event]]:
    """Spawn ``piece`` on a copy of ``board``, let it fall one row, press ``keys``; the game and its events."""
    game = Game(standard_rules(board), FixedPieces(piece), board=board)
    events = game.iterate()
    assert [e.kind for e in events] == ["spawned"]
    events += game.iterate()
    for key in keys:
        events += game.press(key)
    return game, events


def landed_cells(events: list[Event]) -> CellSet:
    landings = [e for e in events if e.kind == "landed"]
    assert len(landings) == 1, events
    return frozenset(landings[0].cells)


def reachable_cell_sets(board: Board, piece: str) -> set[CellSet]:
    """Every landing reachable at row H-1 by rotations, then single-column moves, then drop."""
    found = set()
    for rotations in range(4):
        for shift in range(-board.width, board.width + 1):
            moves: tuple[Key, ...] = ("left",) * -shift if shift < 0 else ("right",) * shift
            _, events = play_keys(board, piece, ("rotate",) * rotations + moves + ("drop",))
            found.add(landed_cells(events))
    return found


def spawn_blocked(board: Board, piece: str) -> bool:
    game = Game(standard_rules(board), FixedPieces(piece), board=board)
    return [e.kind for e in game.iterate()] == ["game_over"]


@settings(max_examples=40)
@given(board=piles())
def test_placement_keys_land_exactly_that_placement(board: Board) -> None:
    rules = standard_rules(board)
    for piece in PIECE_NAMES:
        for p in enumerate_placements(board, piece, rules):
            game, events = play_keys(board, piece, p.keys)
            assert landed_cells(events) == frozenset(p.cells()), p
            # The headless loop applies placements with kernel.place instead of keys: same board.
            placed = np.zeros_like(board.cells)
            kernel.place(board.cells, placed, kind_of(piece), p.rotations, p.x - 1, p.y - 1, rules.clearable_rows)
            assert np.array_equal(game.board.cells, placed), p


@settings(max_examples=30)
@given(board=piles())
def test_placements_are_exactly_the_reachable_landings(board: Board) -> None:
    for piece in PIECE_NAMES:
        placements = enumerate_placements(board, piece, standard_rules(board))
        cell_sets = [frozenset(p.cells()) for p in placements]
        assert len(set(cell_sets)) == len(cell_sets), "duplicate placements"
        if spawn_blocked(board, piece):
            assert placements == []
        else:
            assert set(cell_sets) == reachable_cell_sets(board, piece)


def test_a_blocked_spawn_gives_no_placements() -> None:
    board = Board(10, 20)
    board[6, 20] = 1  # every piece covers (6, 20) at spawn
    for piece in PIECE_NAMES:
        assert spawn_blocked(board, piece)
        assert enumerate_placements(board, piece, standard_rules(board)) == []


def test_a_piece_that_cannot_fall_one_row_has_one_placement_where_it_spawned() -> None:
    board = Board(10, 20)
    board[6, 18] = 1  # the T's stem at (6, 19) rests on it
    (only,) = enumerate_placements(board, "T", standard_rules(board))
    assert (only.rotations, only.x, only.y) == (0, 6, 20)
    _, events = play_keys(board, "T", only.keys)
    assert landed_cells(events) == frozenset(only.cells())


def columns_for(piece: str, rotations: int, width: int) -> range:
    """Origin columns that keep the turned piece inside the board."""
    dxs = [dx for dx, _ in piece_cells(piece, 1 + rotations)]
    return range(1 - min(dxs), width - max(dxs) + 1)


@settings(max_examples=40)
@given(board=piles())
def test_simplified_rules_enumerate_every_column_and_skip_overflows(board: Board) -> None:
    rules = Rules(name="simplified", width=board.width, height=board.height)
    for piece in PIECE_NAMES:
        expected = {}
        for rotations in range(orientation_count(piece)):
            for x in columns_for(piece, rotations, board.width):
                game = Game(rules, FixedPieces(piece), board=board)
                game.iterate()
                events = game.place_directly(rotations, x)
                if not game.over:
                    expected[rotations, x] = landed_cells(events)
        got = {(p.rotations, p.x): frozenset(p.cells()) for p in enumerate_placements(board, piece, rules)}
        assert got == expected
