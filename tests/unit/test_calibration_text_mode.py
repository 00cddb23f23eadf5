"""An empty text-mode well (elektronika1986: thick walls and a floor, a dot in every empty
cell, no top, no grid) filmed by random cameras: its true corners score as a well, rough
corners refine to it, lattices the dots draw the search to do not, and find_well finds it
from the room its walls leave (0 of these 6 cameras before: None on 3, 11-31 px off on 3)."""

from __future__ import annotations

import numpy as np
import pytest

from gamerig.games.tetris.calibration import (
    _MIN_WELL_HEIGHT, MIN_SCORE, _Evidence, _lattice_agreement, _middle_gray, _peak_inside, refine_corners,
)
from gamerig.games.tetris.calibration_outline import well_rooms
from gamerig.games.tetris.skins import skin
from support.filmed_play import empty_wells_found, filmed_empty_well, worst_corner

SUCCESS_PX = 3.0
TEXT_MODE = skin("elektronika1986")


def test_a_walls_far_edge_on_the_profiles_rim_leaves_its_near_edge_a_peak():
    """Across a thick wall the gradient saturates at both its edges: with the far one on the
    profile's rim as strong as the near one on the line, the piece weighed nothing before (its
    first maximum was on the rim) and an empty text-mode well's left wall went unseen."""
    wall = np.array([1.0, 0.93, 0.36, 0.45, 0.95, 1.0, 1.0, 1.0, 0.91, 0.36, 0.14, 0.19, 0.26])
    flank = np.array([1.0, 0.9, 0.7, 0.5, 0.4, 0.3, 0.3, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1])
    assert _peak_inside(np.stack([wall, flank])).tolist() == [True, False]


@pytest.mark.parametrize("seed", [0, 1, 3, 4, 5])
def test_the_true_well_scores_as_a_well(seed: int):
    """Cameras 1 and 5 scored it 0 before (its left wall unseen, the dots taken for texture)."""
    frames, truth = filmed_empty_well(TEXT_MODE, seed)
    assert _lattice_agreement(_Evidence.of(frames), truth, 10, 20) >= MIN_SCORE


@pytest.mark.parametrize("seed", [0, 1, 5])
def test_rough_corners_refine_to_the_well(seed: int):
    """The operator's corners, 2 px off at random: scored 0 before on these cameras."""
    frames, truth = filmed_empty_well(TEXT_MODE, seed)
    rough = truth + np.random.default_rng(seed).uniform(-2, 2, (4, 2))
    fit = refine_corners(frames, rough)
    assert worst_corner(fit.corners, truth) <= SUCCESS_PX
    assert fit.score >= MIN_SCORE


@pytest.mark.parametrize("seed, off", [
    # its columns of dots taken for lines half a cell aside (scored 0.83 before edges had to
    # run along most of a piece of line)
    (0, [[-9.1, -2.2], [0.1, -25.3], [0.1, 0.3], [-10.1, 0.4]]),
    # its inner lines on columns of dots, each dot's edge a third of a cell long (scored 0.90)
    (3, [[-10.4, -19.3], [1.1, -31.1], [-0.3, 0.1], [-11.2, -0.6]]),
    # a side on a wall's far edge, the dots nowhere alike in its cells (0.83 and 0.69)
    (3, [[0.9, -16.4], [11.7, -6.3], [12.5, 0.6], [0.0, 0.1]]),
    (5, [[0.4, -14.9], [11.5, -5.0], [12.9, 0.5], [0.1, -0.1]]),
])
def test_a_lattice_the_dots_drew_the_search_to_is_no_well(seed: int, off: list[list[float]]):
    """Lattices find_well took on these cameras before, each scoring as a well."""
    frames, truth = filmed_empty_well(TEXT_MODE, seed)
    assert _lattice_agreement(_Evidence.of(frames), truth + np.array(off), 10, 20) < MIN_SCORE


def test_the_room_inside_thick_walls_is_a_candidate():
    """The hull of walls and a floor runs along their outer edges, 10-15 px off; the room
    they leave open is the well within a few pixels."""
    frames, truth = filmed_empty_well(TEXT_MODE, 3)
    rooms = well_rooms(_middle_gray(frames), 10, 20, _MIN_WELL_HEIGHT)
    assert rooms
    assert min(worst_corner(room, truth) for room in rooms) <= 3.5


def test_find_well_finds_the_empty_well():
    """Camera 2's dots are too dim to be found as marks, and its inside reads textured: None."""
    assert empty_wells_found(TEXT_MODE, 6, SUCCESS_PX) >= 5
