"""Calibration finds the well on filmed synthetic screens, against their ground truth."""

from __future__ import annotations

import numpy as np
import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.calibration import find_well, refine_corners
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import SKINS, Skin
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

T_CELLS = [(4, 18), (5, 18), (6, 18), (5, 17)]
SUCCESS_PX = 3.0  # a fit whose worst corner is this close to the truth reads every cell right


def _filmed_game(seed: int, sk: Skin) -> tuple[np.ndarray, np.ndarray]:
    """A frame of a game in progress (a random stack up to 9 rows, a falling T) filmed by a
    random webcam, and the true well corners in that frame."""
    rng = np.random.default_rng(seed)
    cells = np.zeros((20, 10), dtype=np.uint8)
    height = int(rng.integers(1, 10))
    cells[:height] = rng.random((height, 10)) < 0.6
    ids = cells * rng.integers(1, 9, size=cells.shape)
    screen = render(Board(cells=cells), sk, falling=T_CELLS, falling_piece="T", next_piece="I", stack_ids=ids, seed=seed)
    frame, h = film(screen.image, rng, CameraSettings.random(rng))
    return frame, map_points(h, screen.well_corners)


# one scene per skin, held-out skins included; measured: 8 of 11 within 3 px
@pytest.fixture(scope="module")
def scenes() -> list[tuple[str, np.ndarray, np.ndarray]]:
    return [(sk.name, *_filmed_game(200 + k, sk)) for k, sk in enumerate(SKINS)]


def test_find_well_locates_the_well_on_most_skins_under_a_random_camera(scenes):
    errors = {}
    for name, frame, truth in scenes:
        fit = find_well(frame)
        errors[name] = np.inf if fit is None else np.linalg.norm(fit.corners - truth, axis=1)
    found = {name: e for name, e in errors.items() if np.max(e) <= SUCCESS_PX}
    assert len(found) >= 8, f"worst corner error per skin: { {n: float(np.max(e)) for n, e in errors.items()} }"
    assert np.median(np.concatenate(list(found.values()))) <= 1.5


def test_refine_corners_snaps_corners_given_within_6_px(scenes):
    rng = np.random.default_rng(7)
    errors = []
    for _, frame, truth in scenes:
        rough = truth + rng.uniform(-6.0, 6.0, size=(4, 2))
        errors.append(np.linalg.norm(refine_corners(frame, rough).corners - truth, axis=1))
    errors_px = np.concatenate(errors)
    assert np.median(errors_px) <= 1.5
    assert np.mean(errors_px <= SUCCESS_PX) >= 0.8


@pytest.mark.parametrize(
    "frame",
    [
        np.zeros((480, 640, 3), dtype=np.uint8),
        np.random.default_rng(1).integers(0, 256, size=(480, 640, 3), dtype=np.uint8),
        film(np.full((480, 640, 3), (60, 90, 120), dtype=np.uint8), np.random.default_rng(2), CameraSettings.random(np.random.default_rng(2)))[0],
    ],
    ids=["black", "noise", "filmed_blank_screen"],
)
def test_a_frame_without_a_well_gives_none(frame):
    assert find_well(frame) is None


def test_bad_input_is_refused_with_a_clear_error():
    frame = np.zeros((480, 640, 3), dtype=np.uint8)
    with pytest.raises(ValueError, match="uint8 H x W x 3"):
        find_well(frame[:, :, 0])
    with pytest.raises(ValueError, match="4 x 2"):
        refine_corners(frame, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="at least 2 x 2"):
        find_well(frame, cols=1)
