"""A well drawn in a fill of its own (paper: white on a tinted page), whose stack leaves its
first column empty, with the preview box a little right of it: the lattice alone fitted it a
column right (the box's edge for a wall); the fill's look tells the fits apart."""

from __future__ import annotations

import numpy as np
import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.calibration import _homography, find_well
from gamerig.games.tetris.calibration_fill import column_move
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import skin
from gamerig.hardware.sim.synthetic_camera import CameraSettings
from support.filmed_play import columns_aside, filmed

SUCCESS_PX = 3.0
FRAMES = 10


def paper_play(seed: int, skin_name: str = "paper") -> tuple[list[np.ndarray], np.ndarray]:
    """Frames of a stack in columns 2-10 of rows 1-3 (row 1 whole), an S falling in columns
    7-9 from the first frame (so no spawn is seen), filmed by one random camera; and the true
    corners."""
    rng = np.random.default_rng(seed)
    cells = np.zeros((20, 10), dtype=np.uint8)
    cells[:3, 1:] = rng.random((3, 9)) < 0.7
    cells[0, 1:] = 1
    ids = cells * rng.integers(1, 8, size=cells.shape)
    settings = CameraSettings.random(rng)
    screens = []
    for k in range(FRAMES):
        row = 17 - k
        falling = [(7, row), (8, row), (8, row + 1), (9, row + 1)]
        screens.append(render(Board(cells=cells), skin(skin_name), falling=falling, falling_piece="S", stack_ids=ids,
                              next_piece="Z", seed=seed))
    return filmed(screens, rng, settings)


def test_a_fit_a_column_off_the_fill_is_told_which_way_to_move():
    frames, truth = paper_play(1)
    assert column_move(frames, _homography(truth, 10, 20), 10, 20) == 0
    assert column_move(frames, _homography(columns_aside(truth, 1), 10, 20), 10, 20) == -1  # a column of the page at its right
    assert column_move(frames, _homography(columns_aside(truth, -1), 10, 20), 10, 20) == 1


def test_a_well_with_no_fill_of_its_own_says_nothing():
    """gradient_open's background runs through the well: every column looks alike."""
    frames, truth = paper_play(1, "gradient_open")
    for columns in (-1, 0, 1):
        assert column_move(frames, _homography(columns_aside(truth, columns), 10, 20), 10, 20) == 0


@pytest.mark.parametrize("seed", [0, 1, 2, 6])
def test_the_well_is_found_on_its_fill_not_a_column_towards_the_box(seed):
    """Each of these scenes was found a column right (18-21 px off) before the cue."""
    frames, truth = paper_play(seed)
    fit = find_well(frames)
    assert fit is not None
    assert np.abs(fit.corners - truth).max() <= SUCCESS_PX
