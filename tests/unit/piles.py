"""Hypothesis strategies for boards like those met in play: ragged piles with holes and overhangs."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.pieces import PIECE_NAMES

pieces = st.sampled_from(PIECE_NAMES)


@st.composite
def piles(draw: st.DrawFn, min_width: int = 4, max_width: int = 11, max_height: int = 16) -> Board:
    """A pile of random column heights (some reaching the top, so the spawn is sometimes
    blocked) with random holes below the surface and no full row, as after any landing."""
    width = draw(st.integers(min_width, max_width))
    height = draw(st.integers(4, max_height))
    tops = draw(st.lists(st.integers(0, height), min_size=width, max_size=width))
    hole_chance = draw(st.sampled_from([0.0, 0.15, 0.4]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cells = np.zeros((height, width), dtype=np.uint8)
    for x, top in enumerate(tops):
        if top:
            cells[: top - 1, x] = rng.random(top - 1) >= hole_chance
            cells[top - 1, x] = 1
    for y in np.flatnonzero(cells.all(axis=1)):
        cells[y, rng.integers(width)] = 0
    return Board(cells=cells)
