"""The Standard Tetris board: W x H cells, 1-based coordinates, y counted from the bottom."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .rules import MAX_HEIGHT, MAX_WIDTH, MIN_HEIGHT, MIN_WIDTH

FILLED_CHARS = frozenset("#XOISZLJTx@")
EMPTY_CHARS = frozenset(".-_ ")


class Board:
    """Occupancy grid. ``cells[y - 1, x - 1]`` is 1 when cell (x, y) is filled.

    The array is C-contiguous uint8 so the compiled kernels can use it directly.
    """

    __slots__ = ("cells",)

    def __init__(self, width: int = 10, height: int = 20, cells: np.ndarray | None = None) -> None:
        if cells is None:
            if not (MIN_WIDTH <= width <= MAX_WIDTH and MIN_HEIGHT <= height <= MAX_HEIGHT):
                raise ValueError(f"board size {width} x {height} is outside 4 x 4 .. 200 x 400")
            cells = np.zeros((height, width), dtype=np.uint8)
        self.cells = np.ascontiguousarray(cells, dtype=np.uint8)

    @property
    def width(self) -> int:
        """Number of columns."""
        return int(self.cells.shape[1])

    @property
    def height(self) -> int:
        """Number of rows."""
        return int(self.cells.shape[0])

    def __getitem__(self, xy: tuple[int, int]) -> int:
        """Cell (x, y), 1-based; outside the board reads as empty, like Fahey's GetCell."""
        x, y = xy
        if 1 <= x <= self.width and 1 <= y <= self.height:
            return int(self.cells[y - 1, x - 1])
        return 0

    def __setitem__(self, xy: tuple[int, int], value: int) -> None:
        x, y = xy
        self.cells[y - 1, x - 1] = 1 if value else 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Board) and np.array_equal(self.cells, other.cells)

    def __hash__(self) -> int:  # boards are mutable; hash by identity like other mutables would not
        raise TypeError("Board is mutable and unhashable")

    def copy(self) -> Board:
        """An independent copy."""
        return Board(cells=self.cells.copy())

    def clear(self) -> None:
        """Empty every cell."""
        self.cells[:] = 0

    def column_heights(self) -> list[int]:
        """Row of the highest filled cell of each column (0 for an empty column)."""
        filled = self.cells.any(axis=0)
        top = self.height - np.argmax(self.cells[::-1, :], axis=0)
        return [int(h) if f else 0 for h, f in zip(top, filled)]

    def pile_height(self) -> int:
        """Row of the highest filled cell on the board (0 when empty)."""
        rows = np.flatnonzero(self.cells.any(axis=1))
        return int(rows[-1]) + 1 if rows.size else 0

    def filled_count(self) -> int:
        """Number of filled cells."""
        return int(self.cells.sum())

    @classmethod
    def from_rows(cls, rows: Iterable[str], width: int | None = None, height: int | None = None) -> Board:
        """Build a board from text rows written top row first ('#' filled, '.' empty).

        Rows missing at the top (when ``height`` is larger) are empty.
        """
        lines = [r for r in rows]
        w = width if width is not None else max(len(r) for r in lines)
        h = height if height is not None else len(lines)
        if len(lines) > h:
            raise ValueError(f"{len(lines)} rows given for a board of height {h}")
        board = cls(w, h)
        for i, text in enumerate(reversed(lines)):
            if len(text) != w:
                raise ValueError(f"row {i + 1} from the bottom has {len(text)} cells, expected {w}")
            for x, ch in enumerate(text, start=1):
                if ch in FILLED_CHARS:
                    board[x, i + 1] = 1
                elif ch not in EMPTY_CHARS:
                    raise ValueError(f"unknown cell character {ch!r} in row {i + 1} from the bottom")
        return board

    def to_rows(self, filled: str = "#", empty: str = ".") -> list[str]:
        """Text rows, top row first."""
        return ["".join(filled if v else empty for v in row) for row in self.cells[::-1]]

    def __repr__(self) -> str:
        return f"Board({self.width}x{self.height}, {self.filled_count()} filled)"
