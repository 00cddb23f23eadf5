"""Fahey's Dellacherie features, written cell by cell from research/ai.md section 3.1 (and 3.2).

Deliberately slow and literal, one loop per sentence of the definition, so it
can serve as the reference the compiled kernel is checked against.  Cells are
read through ``Board[x, y]`` (1-based, y from the bottom; empty outside the
board); walls, floor and sky are handled where each definition says so.
"""

from __future__ import annotations

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import collapse_full_rows
from gamerig.games.tetris.pieces import cells as piece_cells
from gamerig.games.tetris.rules import Rules


def row_transitions(board: Board) -> int:
    """Filled/empty changes between neighbours along every row y = 1..H, the walls counting as filled."""
    total = 0
    for y in range(1, board.height + 1):
        for x in range(1, board.width):
            if board[x, y] != board[x + 1, y]:
                total += 1
        if not board[1, y]:
            total += 1
        if not board[board.width, y]:
            total += 1
    return total


def column_transitions(board: Board) -> int:
    """Changes between y and y+1 (y = 1..H-1), +1 for an empty bottom cell (floor filled),
    +1 for a filled top cell (sky empty)."""
    total = 0
    for x in range(1, board.width + 1):
        for y in range(1, board.height):
            if board[x, y] != board[x, y + 1]:
                total += 1
        if not board[x, 1]:
            total += 1
        if board[x, board.height]:
            total += 1
    return total


def column_top(board: Board, x: int) -> int:
    """Row of the highest filled cell of column x, 0 if the column is empty."""
    for y in range(board.height, 0, -1):
        if board[x, y]:
            return y
    return 0


def is_hole(board: Board, x: int, y: int) -> bool:
    """An empty cell below the highest filled cell of its column."""
    return not board[x, y] and y < column_top(board, x)


def holes(board: Board) -> int:
    """Empty cells below the highest filled cell of their column, counted per cell."""
    return sum(is_hole(board, x, y) for x in range(1, board.width + 1) for y in range(1, board.height + 1))


def wells(board: Board) -> int:
    """For every cell whose two side neighbours are filled (walls count as filled), the run of
    consecutive empty cells from it downward (0 if it is filled)."""
    total = 0
    for x in range(1, board.width + 1):
        for y in range(board.height, 0, -1):
            left = board[x - 1, y] if x > 1 else 1
            right = board[x + 1, y] if x < board.width else 1
            if left and right:
                run = 0
                while y - run >= 1 and not board[x, y - run]:
                    run += 1
                total += run
    return total


def hole_depth(board: Board) -> int:
    """Per column: the filled cells above the column's lowest hole (MDPTetris feature -1)."""
    total = 0
    for x in range(1, board.width + 1):
        lowest = next((y for y in range(1, board.height + 1) if is_hole(board, x, y)), None)
        if lowest is not None:
            total += sum(1 for y in range(lowest + 1, board.height + 1) if board[x, y])
    return total


def rows_with_holes(board: Board) -> int:
    """Rows holding at least one hole (MDPTetris feature -2)."""
    return sum(
        any(is_hole(board, x, y) for x in range(1, board.width + 1)) for y in range(1, board.height + 1)
    )


def board_features(board: Board) -> dict[str, float]:
    """Features of a settled board (after the collapse)."""
    return {
        "row_transitions": row_transitions(board),
        "column_transitions": column_transitions(board),
        "holes": holes(board),
        "wells": wells(board),
        "hole_depth": hole_depth(board),
        "rows_with_holes": rows_with_holes(board),
        "pile_height": max(column_top(board, x) for x in range(1, board.width + 1)),
    }


def placement_features(board: Board, piece: str, orientation: int, x: int, y: int, rules: Rules) -> dict[str, float]:
    """All features of landing ``piece`` with its origin at (x, y) on ``board`` (left unchanged).

    Landing height and eroded cells are taken before the collapse, the board
    features after it, in the order Fahey's evaluation does.
    """
    cells = [(x + dx, y + dy) for dx, dy in piece_cells(piece, orientation)]
    after = board.copy()
    for cell in cells:
        after[cell] = 1
    ys = [cy for _, cy in cells]
    removed = collapse_full_rows(after, rules.clearable_rows)
    features = {
        "landing_height": 0.5 * (min(ys) + max(ys)),
        "eroded_cells": len(removed) * sum(1 for cy in ys if cy in removed),
        "rows_cleared": len(removed),
    }
    features.update(board_features(after))
    return features
