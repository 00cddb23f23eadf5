"""Screens of a Tetris this project did not draw: tetris-py (pygame), played by random keys.

Run by tests/third_party_eval.py in its own virtual environment (pygame and tetris-py, never the
project's dependencies), with no display (SDL's dummy driver):

    python tetris_py_screens.py SCENES OUT_DIR

Writes OUT_DIR/<scene>.npz: ``screens`` (FRAMES x H x W x 3 BGR uint8, the game's window),
``cells`` (FRAMES x 20 x 10 bool, top row first: the stack and the falling piece), ``ghosts``
(the same for the outline the game draws where the piece would land, where no cell is),
``empty`` (the window with an empty well and no ghost) and ``corners`` (the well's outer corners
TL, TR, BR, BL in window pixels, pixel-centre convention).
Each scene is a new game played to a random stack height, then FRAMES screens of the play that
follows (a key or a fall between screens, every second screen kept, pieces spawning where the
game puts them: a random column).  Drives the game through its engine's internals, so the
versions are pinned by the caller.
"""

from __future__ import annotations

import os
import random
import sys

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"

import numpy as np  # noqa: E402
import pygame  # noqa: E402
from tetris.board import ROW_PADDING  # noqa: E402
from tetris.direction import Direction  # noqa: E402
from tetris.engine import EnginePygame  # noqa: E402

FRAMES = 24
WINDOW_BACKGROUND = (20, 20, 20)  # the game's dark grey
MAX_STACK_ROWS = 14


class Game:
    """One tetris-py game on a window nobody sees."""

    def __init__(self) -> None:
        self.engine = EnginePygame()
        self.ui = self.engine._interface

    def corners(self) -> np.ndarray:
        """The well's outer corners in window pixels."""
        left, top = self.ui._grid._position
        cell, board = self.ui._block_size, self.engine._board
        right, bottom = left + board.width * cell, top + board.height * cell
        return np.array([[left, top], [right, top], [right, bottom], [left, bottom]], float) - 0.5

    def new(self) -> None:
        """A new game with its first piece."""
        self.engine._new_game()
        self.engine._new_active_piece()

    def screen(self) -> np.ndarray:
        """The window as the game draws it now (BGR)."""
        self.ui.draw_screen()
        return self._window()

    def empty_screen(self) -> np.ndarray:
        """The window with the well empty and no ghost, as a calibration would want it."""
        board, ui = self.engine._board, self.ui
        grid = board._grid
        board.reset()
        ui._screen.fill(WINDOW_BACKGROUND)
        ui._draw_title()
        ui._grid._draw_tetriminoes()
        ui._grid._draw_grid_lines()
        ui._grid._draw_border()
        ui._draw_info_section()
        ui._draw_statistics_section()
        board._grid = grid
        return self._window()

    def truth(self) -> tuple[np.ndarray, np.ndarray]:
        """The well's filled cells (the falling piece is part of the game's grid) and its ghost's."""
        cells = np.array(self.engine._board._grid)[ROW_PADDING:] > 0
        ghost = np.zeros_like(cells)
        for point in self.engine._active_piece.lowest_possible_position():
            if point.y >= ROW_PADDING:
                ghost[point.y - ROW_PADDING, point.x] = True
        return cells, ghost & ~cells

    def _window(self) -> np.ndarray:
        rgb = pygame.surfarray.array3d(self.ui._screen).transpose(1, 0, 2)
        return np.ascontiguousarray(rgb[..., ::-1])

    def stack_rows(self) -> int:
        """Rows from the floor to the top of the stack (the falling piece, in the game's grid too, apart)."""
        stack = np.array(self.engine._board._grid) > 0
        for point in self.engine._active_piece.points:
            stack[point.y, point.x] = False
        rows = np.flatnonzero(stack.any(axis=1))
        return len(stack) - int(rows[0]) if len(rows) else 0

    def fall(self) -> bool:
        """One row down; on landing, the rows cleared and the next piece (a new game if it
        ended).  False when the piece landed."""
        if self.engine._active_piece.move(Direction.DOWN):
            return True
        self.engine._board.clear_completed_rows(list(self.engine._active_piece.rows))
        if self.engine._board.reached_top_row():
            self.engine._new_game()
        self.engine._new_active_piece()
        return False


def steering(rng: random.Random) -> list[str]:
    """A random player's keys for one piece: turns, then moves one way."""
    return ["rotate"] * rng.randrange(4) + [rng.choice(("left", "right"))] * rng.randrange(6)


def press(game: Game, key: str) -> None:
    """One key of ``steering``'s on the falling piece (the game ignores one it cannot do)."""
    piece = game.engine._active_piece
    if key == "rotate":
        piece.rotate()
    else:
        piece.move(Direction.LEFT if key == "left" else Direction.RIGHT)


def scene(game: Game, seed: int) -> dict[str, np.ndarray]:
    """One scene's arrays (see the module docstring)."""
    random.seed(seed)  # where the game spawns its pieces
    rng = random.Random(seed)
    game.new()
    target = rng.randrange(MAX_STACK_ROWS)
    while game.stack_rows() < target:
        for key in steering(rng):
            press(game, key)
        while game.fall():
            pass
    empty = game.empty_screen()
    screens, cells, ghosts, keys, tick = [], [], [], steering(rng), 0
    while len(screens) < 2 * FRAMES:
        screens.append(game.screen())
        filled, ghost = game.truth()
        cells.append(filled)
        ghosts.append(ghost)
        tick += 1
        if keys and tick % 2:
            press(game, keys.pop(0))
        elif not game.fall():
            keys = steering(rng)
    return {"screens": np.stack(screens[::2]), "cells": np.stack(cells[::2]), "ghosts": np.stack(ghosts[::2]),
            "empty": empty, "corners": game.corners()}


def main() -> None:
    scenes, out = int(sys.argv[1]), sys.argv[2]
    game = Game()
    for k in range(scenes):
        np.savez_compressed(os.path.join(out, f"{k}.npz"), **scene(game, k))


if __name__ == "__main__":
    main()
