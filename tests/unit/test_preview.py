"""The preview box is found beside the well on filmed frames of play, and the next piece in it is
named by its shape, or not at all: never a wrong piece."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import cv2
import numpy as np
import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.pieces import PIECE_NAMES, cells as piece_cells
from gamerig.games.tetris.preview import PreviewCalibration, find_preview, learn_preview, read_preview
from gamerig.games.tetris.render import Screen, render
from gamerig.games.tetris.skins import Skin, skin
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

SUCCESS_PX = 3.0
#: Frames find_preview and learn_preview get: every piece once, then five more at random.
LEARNING_FRAMES = 12


@dataclass
class Scene:
    """One skin filmed by one random webcam during play."""

    skin: Skin
    camera: CameraSettings
    rng: np.random.Generator
    #: Each frame its own flicker phase and an exposure drifting by up to 10%, as under mains
    #: light with a rolling shutter and auto-exposure.
    rolling: bool = False

    def screen(self, next_piece: str | None) -> Screen:
        """A random stack, a falling piece, changing counters and ``next_piece`` in the preview."""
        rng = self.rng
        cells = np.zeros((20, 10), dtype=np.uint8)
        height = int(rng.integers(0, 10))
        cells[:height] = rng.random((height, 10)) < 0.6
        falling = PIECE_NAMES[int(rng.integers(7))]
        return render(
            Board(cells=cells),
            self.skin,
            [(5 + dx, 18 + dy) for dx, dy in piece_cells(falling, 1)],
            falling,
            next_piece=next_piece,
            stack_ids=cells * rng.integers(1, 8, size=cells.shape),
            score=int(rng.integers(0, 100_000)),
            lines=int(rng.integers(0, 300)),
        )

    def film(self, image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        camera = self.camera
        if self.rolling:
            phase, drift = float(self.rng.uniform(0, 2 * np.pi)), float(self.rng.uniform(0.9, 1.1))
            camera = dataclasses.replace(camera, flicker_amplitude=0.08, flicker_phase=phase, exposure=camera.exposure * drift)
        return film(image, self.rng, camera)

    def frames(self, pieces: str) -> tuple[list[np.ndarray], np.ndarray, np.ndarray | None]:
        """Filmed frames showing ``pieces`` next, the true well and preview corners in them."""
        shots = []
        for piece in pieces:
            screen = self.screen(piece)
            frame, h = self.film(screen.image)
            shots.append(frame)
        truth = None if screen.preview_corners is None else map_points(h, screen.preview_corners)
        return shots, map_points(h, screen.well_corners), truth


def _scene(name: str, seed: int, rolling: bool = False) -> Scene:
    rng = np.random.default_rng(seed)
    return Scene(skin(name), CameraSettings.random(rng), rng, rolling)


def _learning_pieces(rng: np.random.Generator) -> str:
    return PIECE_NAMES + "".join(rng.choice(list(PIECE_NAMES), LEARNING_FRAMES - len(PIECE_NAMES)))


@dataclass
class Calibrated:
    scene: Scene
    found: np.ndarray | None
    truth: np.ndarray
    calibration: PreviewCalibration | None


# a borderless text-mode box left of the well, a bordered one right of it, and two held-out
# skins (never tuned on): a box on the background's colour, and a pastel box left of the well
@pytest.fixture(scope="module", params=["elektronika1986", "nes", "handheld", "pastel"])
def calibrated(request) -> Calibrated:
    scene = _scene(request.param, 31)
    shots, well, truth = scene.frames(_learning_pieces(scene.rng))
    found = find_preview(shots, well)
    return Calibrated(scene, found, truth, None if found is None else learn_preview(shots, found))


def test_find_preview_locates_the_box_beside_the_well(calibrated):
    assert calibrated.found is not None
    error = np.linalg.norm(calibrated.found - calibrated.truth, axis=1).max()
    assert error <= SUCCESS_PX, f"{calibrated.scene.skin.name}: worst corner {error:.2f} px off"


def test_read_preview_names_every_piece_on_fresh_frames(calibrated):
    shots, _, _ = calibrated.scene.frames(PIECE_NAMES * 2)
    readings = [read_preview(frame, calibrated.calibration) for frame in shots]
    assert [r.piece for r in readings] == list(PIECE_NAMES * 2), [r.reason for r in readings if r.piece is None]
    assert all(0.5 < r.confidence <= 1.0 for r in readings)


@pytest.mark.parametrize("seen", ["JTZ", "LST"])
def test_a_borderless_box_seen_with_pieces_that_share_a_cell_still_holds_the_i(seen):
    """J, T and Z all fill one cell, which never changes while only they are shown: a box placed
    by the change alone sat half a cell aside, and an I, never seen there, was never read."""
    scene = _scene("elektronika1986", 37)
    shots, well, truth = scene.frames(seen * 4)
    found = find_preview(shots, well)
    assert found is not None and np.linalg.norm(found - truth, axis=1).max() <= SUCCESS_PX
    fresh, _, _ = scene.frames("IIII")
    assert [read_preview(frame, learn_preview(shots, found)).piece for frame in fresh] == ["I"] * 4


@pytest.mark.parametrize("name", ["paper", "pastel"])
def test_rolling_flicker_and_exposure_drift_are_not_taken_for_pieces(name):
    scene = _scene(name, 36, rolling=True)
    shots, well, truth = scene.frames(_learning_pieces(scene.rng))
    found = find_preview(shots, well)
    assert found is not None and np.linalg.norm(found - truth, axis=1).max() <= SUCCESS_PX
    calibration = learn_preview(shots, found)
    fresh, _, _ = scene.frames(PIECE_NAMES)
    assert [read_preview(frame, calibration).piece for frame in fresh] == list(PIECE_NAMES)


@pytest.mark.parametrize("name", ["neon", "green_screen"])
def test_find_preview_finds_nothing_on_a_screen_without_a_preview(name):
    scene = _scene(name, 32)
    shots, well, _ = scene.frames(_learning_pieces(scene.rng))
    assert find_preview(shots, well) is None


def test_find_preview_needs_the_next_piece_to_change():
    scene = _scene("flat_modern", 33)
    shots, well, _ = scene.frames("T" * 8)  # only the counters and the well change
    assert find_preview(shots, well) is None
    with pytest.raises(ValueError, match="two frames"):
        find_preview(shots[:1], well)


def test_read_preview_does_not_assume_the_well_cell_size():
    """A game that draws the next piece at 0.65 of the well's cells."""
    scene = _scene("nes", 34)

    def small_piece(piece: str) -> np.ndarray:
        screen, blank = scene.screen(piece), scene.screen(None).image
        (x0, y0), (x1, y1) = np.round(screen.preview_corners[[0, 2]] + 0.5).astype(int)
        box = cv2.resize(screen.image[y0:y1, x0:x1], None, fx=0.65, fy=0.65, interpolation=cv2.INTER_AREA)
        image = screen.image.copy()
        image[y0:y1, x0:x1] = blank[y0:y1, x0:x1]
        top, left = y0 + (y1 - y0 - box.shape[0]) // 2, x0 + (x1 - x0 - box.shape[1]) // 2
        inked = np.abs(box.astype(int) - blank[y0 + 2, x0 + 2]).sum(axis=2) > 40
        image[top : top + box.shape[0], left : left + box.shape[1]][inked] = box[inked]
        return image

    learning = [scene.film(small_piece(p)) for p in _learning_pieces(scene.rng)]
    well = map_points(learning[-1][1], scene.screen(None).well_corners)
    found = find_preview([frame for frame, _ in learning], well)
    assert found is not None
    calibration = learn_preview([frame for frame, _ in learning], found)
    assert [read_preview(scene.film(small_piece(p))[0], calibration).piece for p in PIECE_NAMES] == list(PIECE_NAMES)


@pytest.fixture(scope="module")
def nes() -> tuple[Scene, PreviewCalibration, np.ndarray]:
    scene = _scene("nes", 35)
    shots, _, truth = scene.frames(_learning_pieces(scene.rng))
    return scene, learn_preview(shots, truth), truth


def test_read_preview_gives_no_piece_for_garbage_frames(nes):
    scene, calibration, _ = nes
    frame, _ = scene.film(scene.screen("T").image)
    garbage = {
        "black": np.zeros_like(frame),
        "noise": scene.rng.integers(0, 256, frame.shape, dtype=np.uint8),
        "grey": np.full_like(frame, 128),
        "empty box": scene.film(scene.screen(None).image)[0],
    }
    for what, image in garbage.items():
        reading = read_preview(image, calibration)
        assert reading.piece is None and reading.confidence == 0.0 and reading.reason, what


def test_read_preview_gives_no_piece_for_a_half_drawn_box(nes):
    scene, calibration, truth = nes
    middle = int(truth[:, 1].mean())
    for piece in PIECE_NAMES:
        drawn, _ = scene.film(scene.screen(piece).image)
        blank, _ = scene.film(scene.screen(None).image)
        for half in (slice(middle, None), slice(None, middle)):
            torn = drawn.copy()
            torn[half] = blank[half]
            reading = read_preview(torn, calibration)
            assert reading.piece is None, f"half of {piece} read as {reading.piece}"


def test_read_preview_never_names_a_wrong_piece_when_the_camera_moves(nes):
    scene, calibration, _ = nes
    for piece in PIECE_NAMES:
        frame, _ = scene.film(scene.screen(piece).image)
        for shift in (2, 5, 9):
            for axis in (0, 1):
                assert read_preview(np.roll(frame, shift, axis=axis), calibration).piece in (None, piece)


def test_learn_preview_refuses_a_box_with_no_piece_in_it(nes):
    scene, _, truth = nes
    with pytest.raises(ValueError, match="nothing stands out"):
        learn_preview([scene.film(scene.screen(None).image)[0] for _ in range(3)], truth)


def test_preview_calibration_checks_its_fields(nes):
    _, calibration, truth = nes
    with pytest.raises(ValueError, match="corners"):
        PreviewCalibration(corners=truth[:3], empty=calibration.empty, pitch=8.0, threshold=0.1)
    with pytest.raises(ValueError, match="empty"):
        PreviewCalibration(corners=truth, empty=calibration.empty[:, :10], pitch=8.0, threshold=0.1)
    with pytest.raises(ValueError, match="positive"):
        PreviewCalibration(corners=truth, empty=calibration.empty, pitch=0.0, threshold=0.1)
    with pytest.raises(ValueError, match="uint8"):
        read_preview(np.zeros((480, 640), dtype=np.uint8), calibration)
