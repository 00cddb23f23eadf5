"""An empty well open at the top (walls and a floor, the well filled with the frame's colour,
no grid) shows three sides and nothing inside: the calibration offers the hull of its walls as
a candidate, takes a plain inside with walls and floor holding as a well, and puts its top where
the walls end (a text-mode well like that: tests/unit/test_calibration_text_mode.py)."""

from __future__ import annotations

import numpy as np
import pytest

from gamerig.games.tetris.calibration import (
    _MAX_PLAIN_INTERIOR, _MIN_WELL_HEIGHT, MIN_SCORE, _Evidence, _fit_lines, _interior_texture, _lattice_agreement,
    _middle_gray,
)
from gamerig.games.tetris.calibration_outline import well_outlines
from support.filmed_play import empty_wells_found, filmed_empty_well, open_top, worst_corner
from support.pictures import RECTANGLE, picture_with_a_rectangle

SUCCESS_PX = 3.0


def test_the_hull_of_walls_and_a_floor_is_a_candidate():
    """No closed outline: before, no candidate came from the outlines at all."""
    frames, truth = filmed_empty_well(open_top("outline"), 0)
    outlines = well_outlines(_middle_gray(frames), 10, 20, _MIN_WELL_HEIGHT)
    assert outlines
    assert min(worst_corner(outline, truth) for outline in outlines) <= 6.0  # the walls' outer edges


@pytest.mark.parametrize("seed", [0, 5])
def test_an_open_wells_top_is_put_where_its_walls_end(seed: int):
    """From corners whose top is two thirds of a cell too high (where square cells put it under a
    skewed camera, or where the search left it) the fit brings it down to the walls' ends; the
    previous corners held it there before."""
    frames, truth = filmed_empty_well(open_top("outline"), seed)
    evidence = _Evidence.of(frames)
    pitch = np.linalg.norm(truth[1] - truth[0]) / 10
    start = truth + np.array([[0, -0.66 * pitch], [0, -0.66 * pitch], [0, 0], [0, 0]])
    assert worst_corner(_fit_lines(evidence.gx, evidence.gy, start, 10, 20), truth) <= 1.5


def test_a_bright_plain_well_reads_plain_through_the_cameras_moire_and_a_picture_does_not():
    """A bright blue well filmed read 0.15 (more than ``_MAX_PLAIN_INTERIOR``) on the fine
    texture: the camera's moire and noise.  A rectangle drawn on a picture stays textured."""
    frames, truth = filmed_empty_well(open_top("picture"), 0)
    assert _interior_texture(_Evidence.of(frames).coarse_texture, truth, 10, 20) <= _MAX_PLAIN_INTERIOR
    for seed in (3, 4, 5):
        picture = picture_with_a_rectangle(seed)
        assert _interior_texture(_Evidence.of(picture).coarse_texture, RECTANGLE, 10, 20) > 2 * _MAX_PLAIN_INTERIOR


@pytest.mark.parametrize("name", ["outline", "flat_modern"])
def test_find_well_finds_an_empty_well_open_at_the_top(name: str):
    """A thin bright wall and a dim one: 0 of these 6 cameras found before (None, or 41-205 px off)."""
    assert empty_wells_found(open_top(name), 6, SUCCESS_PX) >= 5


def test_a_preview_boxs_side_beside_an_open_well_is_no_wall():
    """On this camera a lattice with its left side on the preview box's right edge (4 cells
    long) and its right side on the well's wall scored 1.0 like the well (41 px off, taken):
    each wall and the floor must show along half its length."""
    frames, truth = filmed_empty_well(open_top("outline"), 1)
    beside_the_box = truth + np.array([[-22.4, -34.7], [-2.2, -34.7], [-1.0, -0.9], [-20.6, -0.3]])
    evidence = _Evidence.of(frames)
    assert _lattice_agreement(evidence, beside_the_box, 10, 20) < MIN_SCORE
    assert _lattice_agreement(evidence, truth, 10, 20) >= MIN_SCORE
