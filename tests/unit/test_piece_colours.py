"""Piece colours learned from filmed pieces identified by shape, and the colour vote they give."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.piece_colours import PieceColourLearner
from gamerig.games.tetris.pieces import PIECE_NAMES, cells as piece_cells
from gamerig.games.tetris.recognition import GridCalibration, falling_piece, learn_empty, observe
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import skin
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

ORIGIN = (5, 10)


class Camera:
    """One skin filmed by one random webcam, with a calibration learned on its empty board."""

    def __init__(self, skin_name: str, seed: int) -> None:
        self.skin = dataclasses.replace(skin(skin_name), ghost=False)  # cell_look's tests read ghosts
        self.rng = np.random.default_rng(seed)
        self.settings = CameraSettings.random(self.rng)
        empty = render(Board(), self.skin)
        shots = [film(empty.image, self.rng, self.settings) for _ in range(3)]
        self.calibration = learn_empty([image for image, _ in shots], map_points(shots[0][1], empty.well_corners))

    def piece(self, name: str, orientation: int = 1) -> tuple[np.ndarray, tuple[tuple[int, int], ...]]:
        """A filmed frame of ``name`` falling alone in the well, and its cells."""
        cells = tuple((ORIGIN[0] + dx, ORIGIN[1] + dy) for dx, dy in piece_cells(name, orientation))
        image, _ = film(render(Board(), self.skin, cells, name).image, self.rng, self.settings)
        return image, cells


def _learned(camera: Camera, samples: int = 3) -> GridCalibration:
    learner = PieceColourLearner(min_samples=samples)
    for name in PIECE_NAMES:
        for _ in range(samples):
            image, cells = camera.piece(name)
            learner.add(observe(image, camera.calibration), name, cells)
    return learner.with_colours(camera.calibration)


@pytest.mark.parametrize("skin_name", ["flat_modern", "neon"])  # neon is held out of tuning
def test_learned_colours_agree_with_every_piece_and_tell_pieces_of_other_colours_apart(skin_name):
    camera = Camera(skin_name, seed=3)
    calibration = _learned(camera)
    assert calibration.piece_colours is not None
    for name in PIECE_NAMES:
        image, _ = camera.piece(name, orientation=2 if name != "O" else 1)
        found = falling_piece(observe(image, calibration), np.zeros((20, 10), bool), calibration)
        assert found is not None and found.name == name
        assert found.colour_agrees, f"{name}: colour says {found.colour_candidates}"
    # these skins give T and I different colours: a T's colour votes against the I's shape
    t_colour = calibration.piece_colours[PIECE_NAMES.index("T")]
    i_colour = calibration.piece_colours[PIECE_NAMES.index("I")]
    assert np.linalg.norm(t_colour - i_colour) > 40


def test_a_single_colour_game_learns_a_vote_that_never_rejects_a_shape():
    camera = Camera("paper", seed=4)
    calibration = _learned(camera)
    for name in PIECE_NAMES:
        image, _ = camera.piece(name)
        found = falling_piece(observe(image, calibration), np.zeros((20, 10), bool), calibration)
        assert found is not None and found.name == name and found.colour_agrees


def test_nothing_is_learned_until_every_piece_has_enough_samples():
    camera = Camera("nes", seed=5)
    learner = PieceColourLearner(min_samples=2)
    for name in "OISZLJ":
        for _ in range(2):
            image, cells = camera.piece(name)
            learner.add(observe(image, camera.calibration), name, cells)
    assert learner.missing == "T" and learner.colours() is None
    assert learner.with_colours(camera.calibration) is camera.calibration


def test_bad_samples_are_refused_or_ignored():
    camera = Camera("nes", seed=6)
    learner = PieceColourLearner()
    image, cells = camera.piece("T")
    observation = observe(image, camera.calibration)
    with pytest.raises(ValueError, match="unknown piece"):
        learner.add(observation, "X", cells)
    with pytest.raises(ValueError, match="inside the 10 x 20 well"):
        learner.add(observation, "T", [(0, 5)])
    black = observe(np.zeros_like(image), camera.calibration)
    learner.add(black, "T", cells)  # no observation: nothing to learn, nothing learned
    assert learner.missing == "".join(PIECE_NAMES)
    with pytest.raises(ValueError, match="at least 1"):
        PieceColourLearner(min_samples=0)
