"""A filled cell's own edge beside an empty cell lies inside the cell's square (gaps, shading):
the fit is told which pieces show one and on which side, so the stack's top and a falling
piece's path do not shrink the lattice."""

from __future__ import annotations

import numpy as np
import pytest

from gamerig.games.tetris.calibration import _Evidence, _homography, refine_corners
from gamerig.games.tetris.calibration_own_edges import FILLED_TEXTURE, PLAIN_TEXTURE, cell_texture, own_edge_sides
from gamerig.games.tetris.skins import skin
from support.filmed_play import filmed_play

COLS, ROWS = 4, 3


def vertical_piece(line: int, row: int) -> list[float]:
    return [line, row + 0.5]


def horizontal_piece(line: int, column: int) -> list[float]:
    return [column + 0.5, line]


def test_a_piece_between_a_filled_and_a_plain_cell_points_to_the_filled_one():
    texture = np.full((ROWS, COLS), 0.1)
    texture[1, 1] = 1.2  # one filled cell, in column 1 of row 1
    texture[1, 2] = 1.2  # and its neighbour to the right
    pieces = np.array([
        vertical_piece(1, 1),  # empty | filled: the cell is after the line
        vertical_piece(3, 1),  # filled | empty: before
        vertical_piece(2, 1),  # filled | filled: both edges, centred
        horizontal_piece(1, 1),  # empty above, filled below: after
        horizontal_piece(2, 1),  # filled above, empty below: before
        vertical_piece(1, 0),  # empty | empty
        vertical_piece(0, 1),  # the outline: a wall's edge or an open outline, handled apart
        horizontal_piece(0, -1),  # the top line's piece beyond the well's end
    ])
    assert own_edge_sides(pieces, texture).tolist() == [1, -1, 0, 1, -1, 0, 0, 0]


def test_a_cell_between_the_thresholds_tells_no_side():
    texture = np.full((ROWS, COLS), 0.1)
    texture[1, 1] = (FILLED_TEXTURE + PLAIN_TEXTURE) / 2
    pieces = np.array([vertical_piece(1, 1), vertical_piece(2, 1), horizontal_piece(1, 1), horizontal_piece(2, 1)])
    assert not own_edge_sides(pieces, texture).any()


def test_over_frames_of_play_a_glossy_stack_and_a_falling_piece_look_filled_and_the_rest_plain():
    frames, truth = filmed_play(1, skin("gradient_open"), 9)
    evidence = _Evidence.of(frames)
    texture = cell_texture(evidence.gx + evidence.gy, _homography(truth, 10, 20), 10, 20)
    told = (texture >= FILLED_TEXTURE) | (texture <= PLAIN_TEXTURE)
    assert told.mean() >= 0.95
    assert (texture >= FILLED_TEXTURE).sum() >= 9 * 4  # the T's cells over the frames, and more of the stack


@pytest.mark.parametrize("seed", range(9))
def test_an_open_glossy_well_refined_from_its_true_corners_stays_there(seed: int):
    """gradient_open (no walls, grid or fill; glossy cells with gaps): before, the stack's top
    and the T's path held the lattice small and the fit drifted 1.4-2.3 px from the truth
    (median 2.0); now 0.3-1.3 px."""
    frames, truth = filmed_play(seed, skin("gradient_open"), 9)
    fitted = refine_corners(frames, truth).corners
    assert np.linalg.norm(np.asarray(fitted, dtype=np.float64) - truth, axis=1).max() <= 1.5
