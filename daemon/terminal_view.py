"""Plain-text pictures of boards and pieces, for terminals and logs.

Everything here returns lists of text lines without escape codes, so callers
decide how to show them: the demo redraws them in place with ANSI codes,
``gamerigctl watch`` will put an observed and a predicted board side by side.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gamerig.games.tetris.pieces import cells as piece_cells

# Two characters per cell keep cells roughly square in a terminal font.
FILLED = "[]"
EMPTY = " ."
PIECE_EMPTY = "  "
LEFT_WALL, RIGHT_WALL = "<!", "!>"


def render_board(cells: np.ndarray) -> list[str]:
    """The board as text, top row first, walled like the classic Tetris screen.

    ``cells`` is indexed ``[y, x]``, 0-based, bottom row first; non-zero is filled.
    """
    width = cells.shape[1]
    rows = [
        LEFT_WALL + "".join(FILLED if v else EMPTY for v in row) + RIGHT_WALL
        for row in cells[::-1]
    ]
    rows.append(LEFT_WALL + "=" * (2 * width) + RIGHT_WALL)
    rows.append("  " + "\\/" * width)
    return rows


def render_piece(name: str) -> list[str]:
    """A piece in its spawn orientation, top row first, trimmed to its bounding box."""
    offsets = piece_cells(name, 1)
    xs = [dx for dx, _ in offsets]
    ys = [dy for _, dy in offsets]
    filled = set(offsets)
    return [
        "".join(FILLED if (dx, dy) in filled else PIECE_EMPTY for dx in range(min(xs), max(xs) + 1))
        for dy in range(max(ys), min(ys) - 1, -1)
    ]


def side_by_side(blocks: Sequence[Sequence[str]], gap: int = 3) -> list[str]:
    """Join blocks of lines into columns, each padded to its widest line, tops aligned."""
    widths = [max((len(line) for line in block), default=0) for block in blocks]
    height = max((len(block) for block in blocks), default=0)
    spacer = " " * gap
    return [
        spacer.join(
            (block[i] if i < len(block) else "").ljust(width) for block, width in zip(blocks, widths)
        ).rstrip()
        for i in range(height)
    ]
