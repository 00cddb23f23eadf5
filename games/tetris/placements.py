"""Candidate placements of a piece, each with the key sequence that reaches it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import kernel
from .board import Board
from .engine import DROP, LEFT, RIGHT, ROTATE
from .pieces import PIECE_NAMES, cells as piece_cells
from .rules import Rules



@dataclass(frozen=True)
class Placement:
    """Where a piece comes to rest, and how to get it there.

    ``rotations`` counter-clockwise turns from the spawn orientation, origin
    column ``x`` and landing row ``y`` (1-based).  ``keys`` are pressed once the
    piece has fallen one row from its spawn (Standard Tetris cannot rotate at
    spawn): rotations first, then single-column moves, then ``drop``.  Under
    simplified rules the keys describe the move ignoring the path, as those
    rules do.
    """

    piece: str
    rotations: int
    x: int
    y: int
    spawn_x: int  # the column the piece's keys start from

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys that reach this placement (derived on demand: the fast loops never need them)."""
        return keys_for(self.rotations, self.x, self.spawn_x)

    @property
    def orientation(self) -> int:
        """Fahey's 1-based orientation number."""
        return 1 + self.rotations

    def cells(self) -> list[tuple[int, int]]:
        """The 1-based board cells the piece occupies once landed (before rows clear)."""
        return [(self.x + dx, self.y + dy) for dx, dy in piece_cells(self.piece, self.orientation)]


def keys_for(rotations: int, x: int, spawn_x: int) -> tuple[str, ...]:
    """Rotations, then one key per column from the spawn column, then drop."""
    shift = x - spawn_x
    moves = (RIGHT,) * shift if shift > 0 else (LEFT,) * (-shift)
    return (ROTATE,) * rotations + moves + (DROP,)


def placement_from_row(piece: str, row: np.ndarray, rules: Rules) -> Placement:
    """Turn a kernel candidate row (0-based rotations, x, y) into a Placement."""
    rot, x0, y0 = int(row[kernel.C_ROT]), int(row[kernel.C_X]), int(row[kernel.C_Y])
    return Placement(piece, rot, x0 + 1, y0 + 1, rules.spawn_x)


def kind_of(piece: str) -> int:
    """0-based kernel index of a piece letter."""
    try:
        return PIECE_NAMES.index(piece)
    except ValueError:
        raise ValueError(f"unknown piece {piece!r}; expected one of {PIECE_NAMES}") from None


def enumerate_placements(board: Board, piece: str, rules: Rules) -> list[Placement]:
    """Every placement of ``piece`` the rules allow, in Fahey's search order.

    Standard rules: reachable from the spawn as described on :class:`Placement`;
    an empty list means the piece cannot spawn (game over).  Simplified rules:
    every orientation and column, excluding drops that stick out above the board.
    """
    out = np.zeros((kernel.MAX_CANDIDATES, 3), dtype=np.int64)
    heights = np.zeros(board.width, dtype=np.int64)
    n = kernel.candidates(board.cells, kind_of(piece), rules.name == "standard", heights, out)
    found = []
    for i in range(max(n, 0)):
        p = placement_from_row(piece, out[i], rules)
        if max(y for _, y in p.cells()) <= board.height:
            found.append(p)
    return found
