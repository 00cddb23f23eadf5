"""A few frames of synthetic play filmed by one still camera, with the well's true corners."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.calibration import find_well
from gamerig.games.tetris.render import Screen, render
from gamerig.games.tetris.skins import Background, Skin, skin
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points


def filmed(screens: Sequence[Screen], rng: np.random.Generator, settings: CameraSettings) -> tuple[list[np.ndarray], np.ndarray]:
    """Each screen filmed by one still camera with ``settings``, and the well's true corners in the frames."""
    frames, homographies = zip(*(film(screen.image, rng, settings) for screen in screens))
    return list(frames), map_points(homographies[-1], screens[-1].well_corners)


def columns_aside(corners: np.ndarray, columns: int, cols: int = 10) -> np.ndarray:
    """Well corners moved ``columns`` columns to the right (negative: left) along the top edge."""
    return corners + columns * (corners[1] - corners[0]) / cols


def filmed_play(seed: int, sk: Skin, count: int = 8) -> tuple[list[np.ndarray], np.ndarray]:
    """``count`` frames of one still camera while a T falls down the left and the right side of
    the well over a random stack, and the true well corners."""
    rng = np.random.default_rng(seed)
    cells = np.zeros((20, 10), dtype=np.uint8)
    height = int(rng.integers(2, 9))
    cells[:height] = rng.random((height, 10)) < 0.6
    ids = cells * rng.integers(1, 9, size=cells.shape)
    settings = CameraSettings.random(rng)
    screens = []
    for k in range(count):
        left = 1 if k % 2 == 0 else 8  # the T's left column, 1-based
        falling = [(left, 19 - 2 * k), (left + 1, 19 - 2 * k), (left + 2, 19 - 2 * k), (left + 1, 18 - 2 * k)]
        screens.append(render(Board(cells=cells), sk, falling=falling, falling_piece="T", next_piece="I", stack_ids=ids, seed=seed))
    return filmed(screens, rng, settings)


def filmed_empty_well(sk: Skin, seed: int, count: int = 8) -> tuple[list[np.ndarray], np.ndarray]:
    """``count`` frames of an empty board filmed by one random camera (each with its own sensor
    noise), and the true well corners."""
    rng = np.random.default_rng(1000 + seed)
    settings = CameraSettings.random(rng)
    screens = [render(Board(cells=np.zeros((20, 10), np.uint8)), sk, seed=seed) for _ in range(count)]
    return filmed(screens, rng, settings)


#: Tuning skins redrawn as wells open at the top (see ``open_top``), with the colour that fills
#: the frame and the well: one of each look of wall (thin, thick, bright, dim).
OPEN_TOP_COLOURS = {"outline": "#202020", "flat_modern": "#1a1a40", "green_screen": "#041404", "picture": "#4080c0"}


def open_top(name: str) -> Skin:
    """The skin ``name`` redrawn as a well open at the top: walls and a floor on one colour
    (``OPEN_TOP_COLOURS``) that fills the well too, no grid, so its empty top shows nothing."""
    colour = OPEN_TOP_COLOURS[name]
    return dataclasses.replace(skin(name), name=f"{name}_open_top", background=Background("solid", (colour,)),
                               well_fill=colour, grid=None)


def worst_corner(corners: np.ndarray, truth: np.ndarray) -> float:
    """The farthest of four corners from its true place, pixels."""
    return float(np.linalg.norm(np.asarray(corners, dtype=np.float64) - truth, axis=1).max())


def empty_wells_found(sk: Skin, cameras: int, tolerance_px: float) -> int:
    """Of ``cameras`` random cameras filming an empty board of ``sk`` (``filmed_empty_well``),
    on how many find_well places every corner within ``tolerance_px``."""
    found = 0
    for seed in range(cameras):
        frames, truth = filmed_empty_well(sk, seed)
        fit = find_well(frames)
        found += fit is not None and worst_corner(fit.corners, truth) <= tolerance_px
    return found
