"""Recognition reads filmed boards cell for cell, names the falling piece and refuses garbage frames."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.pieces import PIECE_NAMES, cells as piece_cells, orientation_count, piece_index
from gamerig.games.tetris.recognition import (
    GridCalibration,
    falling_piece,
    learn_empty,
    learn_piece_colours,
    observe,
)
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import Skin, skin
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

#: Tuning skins of different kinds plus a held-out one, never used to tune recognition.
SKIN_NAMES = ("nes", "gradient_open", "paper", "outline", "neon")


@dataclass
class Setup:
    skin: Skin
    camera: CameraSettings
    rng: np.random.Generator
    calibration: GridCalibration

    def film(self, board: Board, **kwargs) -> tuple[np.ndarray, np.ndarray]:
        """A frame of ``board`` through this camera, and the true colour ids."""
        screen = render(board, self.skin, **kwargs)
        return film(screen.image, self.rng, self.camera)[0], screen.colour_ids


def _setup(skin_name: str, seed: int) -> Setup:
    """One skin (without its ghost piece: a whole-cell reading shows it, see test_cell_look)
    filmed by one random camera, calibrated on three frames of its empty board."""
    rng = np.random.default_rng(seed)
    camera = CameraSettings.random(rng)
    look = dataclasses.replace(skin(skin_name), ghost=False)
    empty = render(Board(), look)
    frames, homographies = zip(*(film(empty.image, rng, camera) for _ in range(3)))
    corners = map_points(homographies[0], empty.well_corners)
    return Setup(look, camera, rng, learn_empty(list(frames), corners))


def _random_stack(rng: np.random.Generator) -> tuple[Board, np.ndarray]:
    """A stack up to 14 rows high with no full row, and colour ids for its cells."""
    cells = np.zeros((20, 10), dtype=np.uint8)
    height = int(rng.integers(0, 15))
    cells[:height] = rng.random((height, 10)) < 0.7
    cells[np.arange(height), rng.integers(0, 10, size=height)] = 0
    return Board(cells=cells), cells * rng.integers(1, 8, size=cells.shape)


@pytest.fixture(scope="module", params=SKIN_NAMES)
def setup(request) -> Setup:
    return _setup(request.param, seed=SKIN_NAMES.index(request.param))


def test_cells_of_filmed_random_boards_are_read_correctly(setup):
    wrong, exact, frames = 0, 0, 6
    for _ in range(frames):
        board, ids = _random_stack(setup.rng)
        frame, truth = setup.film(board, stack_ids=ids)
        observation = observe(frame, setup.calibration)
        assert observation.valid, observation.reason
        errors = int((observation.filled != (truth > 0)).sum())
        wrong, exact = wrong + errors, exact + (errors == 0)
    assert 1 - wrong / (frames * 200) >= 0.995
    assert exact >= frames - 1


def test_an_empty_board_reads_empty_with_confidence(setup):
    frame, _ = setup.film(Board())
    observation = observe(frame, setup.calibration)
    assert observation.valid and not observation.filled.any()
    assert np.median(observation.confidence) > 0.9


@pytest.mark.parametrize("name", PIECE_NAMES)
def test_the_falling_piece_is_named_by_its_shape_with_orientation_and_origin(name):
    setup = _setup("flat_modern", seed=11)
    stack, ids = _random_stack(np.random.default_rng(piece_index(name)))
    stack.cells[8:] = 0
    ids[8:] = 0
    orientation = orientation_count(name)  # the last one: not the spawn orientation for most
    origin = (5, 15)
    falling = [(origin[0] + dx, origin[1] + dy) for dx, dy in piece_cells(name, orientation)]
    frame, _ = setup.film(stack, falling=falling, falling_piece=name, stack_ids=ids)
    piece = falling_piece(observe(frame, setup.calibration), stack.cells, setup.calibration)
    assert piece is not None
    assert (piece.name, piece.orientation, piece.origin) == (name, orientation, origin)
    assert piece.colour_agrees is None  # no piece colours learned: no second vote


def test_learned_piece_colours_vote_for_the_shape():
    setup = _setup("flat_modern", seed=12)
    samples = []
    for k, name in enumerate(PIECE_NAMES):
        cells = np.zeros((20, 10), dtype=np.uint8)
        cells[k, :9] = 1
        samples.append(setup.film(Board(cells=cells), stack_ids=cells * piece_index(name)))
    calibration = learn_piece_colours(setup.calibration, samples)
    falling = [(x, 10) for x in (3, 4, 5, 6)]
    frame, _ = setup.film(Board(), falling=falling, falling_piece="I")
    piece = falling_piece(observe(frame, calibration), np.zeros((20, 10), dtype=bool), calibration)
    assert piece is not None and piece.name == "I"
    assert piece.colour_candidates == "I" and piece.colour_agrees


def test_new_cells_that_are_not_one_tetromino_are_no_falling_piece():
    setup = _setup("nes", seed=13)
    frame, _ = setup.film(Board(), falling=[(2, 10), (3, 10), (7, 10), (8, 10)], falling_piece="I")
    assert falling_piece(observe(frame, setup.calibration), np.zeros((20, 10), dtype=bool), setup.calibration) is None


def test_black_noise_and_flat_frames_are_no_observation(setup):
    rng = np.random.default_rng(0)
    garbage = {
        "black": np.zeros((480, 640, 3), dtype=np.uint8),
        "noise": rng.integers(0, 256, size=(480, 640, 3), dtype=np.uint8),
        "flat grey": np.full((480, 640, 3), 128, dtype=np.uint8),
    }
    for what, frame in garbage.items():
        observation = observe(frame, setup.calibration)
        assert not observation.valid, f"{what} frame read as a board"
        assert observation.reason


def test_a_frame_that_is_not_a_picture_is_a_clear_error():
    setup = _setup("nes", seed=14)
    with pytest.raises(ValueError, match="uint8 H x W x 3"):
        observe(np.zeros((480, 640), dtype=np.uint8), setup.calibration)


def test_calibration_arrays_of_the_wrong_shape_are_a_clear_error():
    with pytest.raises(ValueError, match="corners must be 4 x 2"):
        GridCalibration(np.zeros((3, 2)), 10, 20, np.zeros((22, 12, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="empty must be"):
        GridCalibration(np.zeros((4, 2)), 10, 20, np.zeros((20, 10, 3), dtype=np.float32))


@pytest.mark.parametrize("skin_name", ["nes", "outline"])
def test_a_camera_bumped_by_a_quarter_cell_is_noticed_not_misread(skin_name):
    setup = _setup(skin_name, seed=15)
    setup.camera = dataclasses.replace(setup.camera, shift_px=(setup.camera.shift_px[0] + 5.0, setup.camera.shift_px[1]))
    stack, ids = _random_stack(np.random.default_rng(15))
    frame, _ = setup.film(stack, stack_ids=ids)
    observation = observe(frame, setup.calibration)
    assert not observation.valid and "surroundings" in observation.reason
