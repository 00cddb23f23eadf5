"""An empty well without grid lines shows only its outline: the calibration finds it by that
outline (``calibration_outline``) and does not take its blank inside for a lattice of half
its pitch."""

from __future__ import annotations

import numpy as np
import pytest

from gamerig.games.tetris.calibration import (
    _MIN_WELL_HEIGHT, MIN_SCORE, _along_edges, _Evidence, _half_pitch, _lattice_agreement, _middle_gray,
)
from gamerig.games.tetris.calibration_outline import well_outlines
from gamerig.games.tetris.skins import skin
from support.filmed_play import empty_wells_found, filmed_empty_well, worst_corner

SUCCESS_PX = 3.0


def test_the_outline_of_an_empty_well_is_a_quadrilateral_of_its_shape():
    frames, truth = filmed_empty_well(skin("nes"), 1)
    outlines = well_outlines(_middle_gray(frames), 10, 20, _MIN_WELL_HEIGHT)
    assert outlines
    assert min(worst_corner(outline, truth) for outline in outlines) <= 5.0  # a wall's inner or outer edge


def test_a_frame_without_a_closed_outline_gives_none():
    rng = np.random.default_rng(0)
    noise = rng.normal(128, 30, (480, 640)).clip(0, 255).astype(np.float32)
    assert well_outlines(noise, 10, 20, _MIN_WELL_HEIGHT) == []


def test_an_empty_wells_blank_inside_is_no_lattice_of_half_its_pitch():
    """Every other inner line shows as little as the rest there: nothing (this took the true
    well out of the choice before, and a checker beside it was chosen)."""
    frames, truth = filmed_empty_well(skin("nes"), 1)
    evidence = _Evidence.of(frames)
    assert not _half_pitch(*_along_edges(evidence.gx, evidence.gy), truth, 10, 20)


@pytest.mark.parametrize("name", ["nes", "picture"])
def test_find_well_finds_an_empty_walled_well(name: str):
    """nes (a white wall on a checker background) and picture (a dark well framed on a busy
    picture): 2 and 3 of these 6 cameras found before, the others None or 60-222 px off."""
    assert empty_wells_found(skin(name), 6, SUCCESS_PX) >= 5


def test_a_preview_box_on_a_plain_page_is_no_lattice():
    """paper's empty well hardly shows, and a lattice whose lines ran along the preview box's
    four sides scored 0.6 (found on this camera, 141 px off the well): a lattice's lines come
    side by side somewhere, a box's do not."""
    frames, truth = filmed_empty_well(skin("paper"), 4)
    box_lattice = truth + np.array([[131.4, -14.8], [139.5, -14.7], [140.9, 3.4], [133.4, 3.3]])
    assert _lattice_agreement(_Evidence.of(frames), box_lattice, 10, 20) < MIN_SCORE
