"""The first frames of play teach recognition whether the game fills its cells; once it reads
their middles, a ghost piece's outline reads as the empty cells it is drawn over."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.cell_look import MIN_FILLED_CELLS, UNDECIDED, LearningObserver
from gamerig.games.tetris.pieces import cells as piece_cells
from gamerig.games.tetris.recognition import GridCalibration, falling_piece, learn_empty
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import Skin, skin
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

STACK = Board.from_rows(["#.##.###.#", "#########."], height=20)
#: A T pointing down in the middle of the well, and its ghost: where it would land, its stem in
#: the stack's gap.
FALLING = tuple((5 + dx, 16 + dy) for dx, dy in piece_cells("T", 1))
GHOST = ((5, 2), (4, 3), (5, 3), (6, 3))


class Camera:
    """One skin filmed by one random camera, calibrated from the true corners."""

    def __init__(self, skin_name: str, seed: int, ghost: bool = False) -> None:
        self.skin: Skin = dataclasses.replace(skin(skin_name), ghost=ghost)
        self.rng = np.random.default_rng(seed)
        self.settings = CameraSettings.random(self.rng)
        empty = render(Board(), self.skin)
        frames, homographies = zip(*(film(empty.image, self.rng, self.settings) for _ in range(3)))
        self.calibration: GridCalibration = learn_empty(list(frames), map_points(homographies[0], empty.well_corners))

    def frame(self, board: Board = STACK, **kwargs) -> np.ndarray:
        screen = render(board, self.skin, falling=FALLING, falling_piece="T", **kwargs)
        return film(screen.image, self.rng, self.settings)[0]


def _visible(board: Board) -> np.ndarray:
    """The board with the falling T, bottom row first."""
    cells = board.cells.astype(bool)
    for x, y in FALLING:
        cells[y - 1, x - 1] = True
    return cells


@pytest.mark.parametrize(("skin_name", "look"), [("nes", "middles"), ("paper", "middles"), ("neon", "middles"),
                                                 ("outline", "whole"), ("elektronika1986", "whole")])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_first_frames_of_play_tell_how_the_game_draws_its_cells(skin_name, look, seed):
    camera = Camera(skin_name, seed)
    reader = LearningObserver(camera.calibration)
    assert reader.look == "undecided"
    frames = 0
    while reader.look == "undecided" and frames < 10:
        observation = reader.observe(camera.frame())
        frames += 1
        assert observation.valid  # one kind of cells: read whole while undecided
    assert reader.look == look
    assert reader.filled_cells >= MIN_FILLED_CELLS and frames <= 3  # a stack of 14 cells and a piece
    assert np.array_equal(observation.filled, _visible(STACK))
    # decided once: later frames are read the same way and teach nothing more
    counted = reader.filled_cells
    reader.observe(camera.frame())
    assert reader.look == look and reader.filled_cells == counted


@pytest.mark.parametrize(("skin_name", "seed"), [("flat_modern", 0), ("nes", 1), ("picture", 2), ("neon", 3)])
def test_a_ghost_piece_reads_filled_until_the_middles_are_read_then_empty(skin_name, seed):
    camera = Camera(skin_name, seed, ghost=True)
    reader = LearningObserver(camera.calibration)
    ghost = np.zeros((20, 10), dtype=bool)
    for x, y in GHOST:
        ghost[y - 1, x - 1] = True
    truth = _visible(STACK)
    # 25 filled cells: too few to decide.  Read whole, the ghost's outline is filled, and the
    # frame is no observation rather than a board with a ghost
    first = reader.observe(camera.frame())
    assert reader.look == "undecided"
    assert not first.valid and first.reason == UNDECIDED
    assert np.array_equal(first.filled, truth | ghost)
    # the stack and the piece fill their middles, the ghost does not: the frame that decides
    # is read by the middles
    for _ in range(4):
        observation = reader.observe(camera.frame())
        assert reader.look == "middles"
        assert observation.valid and np.array_equal(observation.filled, truth)
        piece = falling_piece(observation, STACK.cells.astype(bool))
        assert piece is not None and (piece.name, piece.origin) == ("T", (5, 16))


def test_a_line_clears_flash_teaches_nothing():
    """Whole rows filled, middles too, even in a game of outlined cells: not counted."""
    camera = Camera("outline", 0)
    reader = LearningObserver(camera.calibration)
    for _ in range(3):
        reader.observe(camera.frame(flash_rows=(1, 2, 3, 4), flash_colour=(255, 255, 255)))
    assert (reader.look, reader.filled_cells) == ("undecided", 0)


def test_a_calibration_without_a_middle_look_is_read_whole():
    camera = Camera("nes", 0)
    old = dataclasses.replace(camera.calibration, empty_middle=None)
    reader = LearningObserver(old)
    observation = reader.observe(camera.frame())
    assert reader.look == "whole" and observation.solid is None
    assert np.array_equal(observation.filled, _visible(STACK))
    with pytest.raises(ValueError, match="read_middles needs empty_middle"):
        dataclasses.replace(old, read_middles=True)
