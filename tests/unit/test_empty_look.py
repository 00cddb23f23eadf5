"""Learning the empty well from frames of a new game: a piece falls and lands during the
capture, in a game that draws a ghost piece and in one that outlines its cells."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.empty_look import BoardNotEmpty, learn_empty_well
from gamerig.games.tetris.pieces import cells as piece_cells
from gamerig.games.tetris.recognition import observe
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import skin
from gamerig.hardware.sim.synthetic_camera import CameraSettings
from support.filmed_play import filmed

#: A T pointing up falling straight down the middle of an empty well, and where it lands.
LANDED = Board.from_rows(["....#.....", "...###...."], height=20)


def _t_at(row: int) -> tuple[tuple[int, int], ...]:
    """The falling T's 1-based cells, pointing up with its flat side on ``row``."""
    return tuple((5 + dx, row + dy) for dx, dy in piece_cells("T", 3))


def _first_piece(skin_name: str, seed: int) -> tuple[list[np.ndarray], np.ndarray, list[np.ndarray]]:
    """Frames of a new game filmed as the rig calibrates it: the first T falling 12 rows (its
    ghost, on a skin that draws one, on the cells where it then lands), then 6 frames landed;
    the true well corners, and each frame's true filled cells (image order, top row first)."""
    look = skin(skin_name)
    rng = np.random.default_rng(seed)
    settings = CameraSettings.random(rng)
    screens = [render(Board(), look, falling=_t_at(19 - k), falling_piece="T") for k in range(12)]
    screens += [render(LANDED, look, stack_ids=np.where(LANDED.cells > 0, 7, 0)) for _ in range(6)]
    return *filmed(screens, rng, settings), [s.colour_ids > 0 for s in screens]


@pytest.mark.parametrize("seed", range(4))
def test_a_ghost_on_the_cells_where_the_first_piece_lands_is_learned_empty(seed):
    """The landed T's cells show its ghost, then the T, in every frame: they never look empty
    whole, but their middles do while the ghost is there."""
    frames, corners, truths = _first_piece("flat_modern", seed)
    calibration = learn_empty_well(frames, corners, 10, 20)
    by_middles = dataclasses.replace(calibration, read_middles=True)
    for frame, truth in zip(frames, truths):
        for read_by in (calibration, by_middles):
            observation = observe(frame, read_by)
            if read_by is calibration and not truth[:2].any():  # read whole, the ghost shows as filled
                continue
            assert observation.valid and np.array_equal(observation.filled, truth)


@pytest.mark.parametrize("seed", range(2))
def test_a_stack_of_outlined_cells_in_every_frame_is_no_empty_board(seed):
    """A game that outlines its cells shows a stack with empty-looking middles; outlined in
    every frame, it is no ghost that came or went."""
    look = skin("outline")
    rng = np.random.default_rng(seed)
    settings = CameraSettings.random(rng)
    stack = Board(cells=np.vstack([np.ones((3, 10), np.uint8), np.zeros((17, 10), np.uint8)]))
    stack.cells[:3, 9] = 0
    frames, corners = filmed([render(stack, look)] * 6, rng, settings)
    with pytest.raises(BoardNotEmpty, match=r"the board is not empty: \d+ cells look filled in every frame"):
        learn_empty_well(frames, corners, 10, 20)
