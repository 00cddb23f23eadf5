"""A new piece shown at the top of the well, in its middle, tells an open well from the fits a
column aside, which its lattice alone cannot."""

from __future__ import annotations

import numpy as np
import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.calibration import _grays, _homography, find_well
from gamerig.games.tetris.calibration_spawn import SpawnCue
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import skin
from gamerig.hardware.sim.synthetic_camera import CameraSettings
from support.bench_scenes import calibration_shots
from support.filmed_play import columns_aside, filmed, worst_corner

SUCCESS_PX = 3.0
FRAMES = 10


#: Cells (column, rows below the piece's top) of the pieces ``open_well_play`` spawns, where
#: Standard Tetris puts them (columns 5-7).
SPAWNED = {"T": [(5, 0), (6, 0), (7, 0), (6, 1)], "S": [(6, 0), (7, 0), (5, 1), (6, 1)]}


def open_well_play(
    seed: int, spawn_frame: int = 2, bottom_first: bool = False, piece: str = "T"
) -> tuple[list[np.ndarray], np.ndarray]:
    """Frames of an open well (gradient_open: no walls, grid or fill) whose stack fills columns
    1-8 of rows 1-4 at random (row 1 whole), filmed by one random camera: no piece until frame
    ``spawn_frame``, then ``piece`` spawned in rows 19-20 (``SPAWNED``) falling a row a frame;
    with ``bottom_first``, the frame before shows its bottom cells alone in row 20 (a piece
    coming in from above the well).  And the true corners."""
    rng = np.random.default_rng(seed)
    cells = np.zeros((20, 10), dtype=np.uint8)
    cells[:4, :8] = rng.random((4, 8)) < 0.75
    cells[0, :8] = 1
    ids = cells * rng.integers(1, 9, size=cells.shape)
    settings = CameraSettings.random(rng)
    screens = []
    for k in range(FRAMES):
        top = 20 - (k - spawn_frame)
        falling = [(x, top - down) for x, down in SPAWNED[piece]] if k >= spawn_frame else []
        if bottom_first and k == spawn_frame - 1:
            falling = [(x, 20) for x, down in SPAWNED[piece] if down == 1]
        screens.append(render(Board(cells=cells), skin("gradient_open"), falling=falling,
                              falling_piece=piece if falling else None, stack_ids=ids, seed=seed))
    return filmed(screens, rng, settings)


def test_the_piece_that_appears_is_in_the_middle_of_the_true_well_only():
    frames, truth = open_well_play(0)
    cue = SpawnCue(_grays(frames))
    assert cue.centred(_homography(truth, 10, 20), 10) is True
    assert cue.centred(_homography(columns_aside(truth, -1), 10, 20), 10) is False  # the T in columns 6-8 of it
    assert cue.centred(_homography(columns_aside(truth, 2), 10, 20), 10) is False


def test_a_piece_there_from_the_first_frame_says_where_it_came_in():
    """It may have been moved aside before the frames began, but most often it has not."""
    frames, truth = open_well_play(0, spawn_frame=0)
    cue = SpawnCue(_grays(frames))
    assert cue.centred(_homography(truth, 10, 20), 10) is True
    assert cue.centred(_homography(columns_aside(truth, -1), 10, 20), 10) is False


@pytest.mark.parametrize("piece", ["T", "S"])
def test_a_piece_coming_in_from_above_appears_when_it_shows_whole(piece: str):
    """The T's stem, then the T a row down: the stem is among its cells.  The S's bottom
    cells, then the S a row down: they are among its cells a row up (paper, scene 51 of
    tests/calibration_eval.py --seed 3: a Z, 21 px off before)."""
    frames, truth = open_well_play(0, spawn_frame=3, bottom_first=True, piece=piece)
    cue = SpawnCue(_grays(frames))
    assert cue.centred(_homography(truth, 10, 20), 10) is True
    assert cue.centred(_homography(columns_aside(truth, 2), 10, 20), 10) is False
    assert cue.top_row(_homography(truth, 10, 20), 10) == 0


def test_a_piece_waiting_at_the_top_half_the_frames_does_not_mislead():
    """paper, scene 128 of tests/calibration_eval.py --seed 4: a piece at the top in about half
    the frames leaves the frames' median there neither piece nor page, and every frame looked
    new there: its middle column made a piece appear off the well's middle."""
    frames, truth = calibration_shots(4, 128)
    assert SpawnCue(_grays(frames)).centred(_homography(truth, 10, 20), 10) is not False


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_find_well_puts_an_open_well_where_the_new_piece_is_in_its_middle(seed: int):
    """A stack eight columns wide fits as well a column or two aside (these three landed 18-35
    px off before the cue)."""
    frames, truth = open_well_play(seed)
    fit = find_well(frames)
    assert fit is not None
    assert worst_corner(fit.corners, truth) <= SUCCESS_PX


def rows_taller(corners: np.ndarray, rows: int, height: int = 20) -> np.ndarray:
    """Well corners with the top edge moved up by ``rows`` rows (negative: down)."""
    moved = np.asarray(corners, dtype=np.float64).copy()
    moved[:2] -= rows * (moved[3] - moved[0] + moved[2] - moved[1]) / (2 * height)
    return moved


def test_a_new_piece_shows_its_top_in_the_top_row_of_the_true_well_only():
    frames, truth = open_well_play(0)
    cue = SpawnCue(_grays(frames))
    assert cue.top_row(_homography(truth, 10, 20), 10) == 0
    assert cue.top_row(_homography(rows_taller(truth, 1), 10, 20), 10) == 1  # a row too tall: the T in its rows 1-2
    assert cue.top_row(_homography(rows_taller(truth, -1), 10, 20), 10) == -1


def test_a_piece_there_from_the_first_frame_places_no_top():
    frames, truth = open_well_play(0, spawn_frame=0)
    assert SpawnCue(_grays(frames)).top_row(_homography(truth, 10, 20), 10) is None


def test_find_well_puts_an_open_wells_top_where_a_new_piece_shows():
    """gradient_open, scene 93 of tests/calibration_eval.py --seed 2: its stack three rows high
    and a J falling fit a lattice with a row more as well (18 px off before the cue)."""
    frames, truth = calibration_shots(2, 93)
    fit = find_well(frames)
    assert fit is not None
    assert worst_corner(fit.corners, truth) <= SUCCESS_PX
