"""The seven Standard Tetris pieces with Fahey's orientation tables.

Cells are (dx, dy) offsets from the piece's origin, y pointing up, exactly as in
Fahey's ``STPiece`` table.  Orientation 1 is the spawn orientation; ``rotate``
(counter-clockwise) goes to the next distinct orientation and wraps.
"""

from __future__ import annotations

from typing import Final

#: Piece letters in Fahey's index order: pieceIndex 1..7 maps to O I S Z L J T.
PIECE_NAMES: Final[str] = "OISZLJT"

Cell = tuple[int, int]

#: Distinct orientations of each piece, orientation 1 first.
ORIENTATIONS: Final[dict[str, tuple[tuple[Cell, ...], ...]]] = {
    "O": (((-1, -1), (0, -1), (0, 0), (-1, 0)),),
    "I": (
        ((-2, 0), (-1, 0), (0, 0), (1, 0)),
        ((0, -2), (0, -1), (0, 0), (0, 1)),
    ),
    "S": (
        ((-1, -1), (0, -1), (0, 0), (1, 0)),
        ((1, -1), (0, 0), (1, 0), (0, 1)),
    ),
    "Z": (
        ((0, -1), (1, -1), (-1, 0), (0, 0)),
        ((0, -1), (0, 0), (1, 0), (1, 1)),
    ),
    "L": (
        ((-1, -1), (-1, 0), (0, 0), (1, 0)),
        ((0, -1), (1, -1), (0, 0), (0, 1)),
        ((-1, 0), (0, 0), (1, 0), (1, 1)),
        ((0, -1), (0, 0), (-1, 1), (0, 1)),
    ),
    "J": (
        ((1, -1), (-1, 0), (0, 0), (1, 0)),
        ((0, -1), (0, 0), (0, 1), (1, 1)),
        ((-1, 0), (0, 0), (1, 0), (-1, 1)),
        ((-1, -1), (0, -1), (0, 0), (0, 1)),
    ),
    "T": (
        ((0, -1), (-1, 0), (0, 0), (1, 0)),
        ((0, -1), (0, 0), (1, 0), (0, 1)),
        ((-1, 0), (0, 0), (1, 0), (0, 1)),
        ((0, -1), (-1, 0), (0, 0), (0, 1)),
    ),
}


def piece_index(name: str) -> int:
    """Fahey's 1-based piece index (O=1 ... T=7)."""
    return PIECE_NAMES.index(name) + 1


def piece_name(index: int) -> str:
    """Piece letter for Fahey's 1-based index."""
    if not 1 <= index <= 7:
        raise ValueError(f"piece index must be 1..7, got {index}")
    return PIECE_NAMES[index - 1]


def orientation_count(name: str) -> int:
    """Number of distinct orientations: O 1, I/S/Z 2, L/J/T 4."""
    return len(ORIENTATIONS[name])


def cells(name: str, orientation: int) -> tuple[Cell, ...]:
    """Offsets of a piece in a 1-based orientation; orientations wrap like Fahey's Rotate()."""
    table = ORIENTATIONS[name]
    return table[(orientation - 1) % len(table)]
