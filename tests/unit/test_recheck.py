"""The calibration monitor notices a bumped camera from filmed play, and does not cry wolf."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.pieces import PIECE_NAMES
from gamerig.games.tetris.recheck import CalibrationMonitor
from gamerig.games.tetris.recognition import Observation, learn_empty, observe
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import skin
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

CONFIRM = 3


@dataclasses.dataclass
class Scene:
    """One skin filmed by one random camera, calibrated from an empty board."""

    skin_name: str
    camera: CameraSettings
    rng: np.random.Generator
    corners: np.ndarray
    monitor: CalibrationMonitor

    def frame(self, camera: CameraSettings | None = None, filled_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """A frame of play (a random stack, a falling I, a random next piece and counters) and the
        true well corners in it."""
        rows = int(self.rng.integers(0, 14)) if filled_rows is None else filled_rows
        cells = np.zeros((20, 10), dtype=np.uint8)
        cells[:rows] = self.rng.random((rows, 10)) < 0.7
        cells[np.arange(rows), self.rng.integers(0, 10, size=rows)] = 0
        x = int(self.rng.integers(1, 8))
        screen = render(
            Board(cells=cells), skin(self.skin_name), falling=[(x + i, 17) for i in range(4)], falling_piece="I",
            next_piece=PIECE_NAMES[int(self.rng.integers(7))], stack_ids=cells * self.rng.integers(1, 8, size=cells.shape),
            score=int(self.rng.integers(0, 100_000)), lines=int(self.rng.integers(0, 300)),
        )
        image, h = film(screen.image, self.rng, camera or self.camera)
        return image, map_points(h, screen.well_corners)


def _scene(skin_name: str, seed: int) -> Scene:
    rng = np.random.default_rng(seed)
    camera = CameraSettings.random(rng)
    empty = render(Board(), skin(skin_name))
    reference, h = film(empty.image, rng, camera)
    corners = map_points(h, empty.well_corners)
    monitor = CalibrationMonitor(learn_empty([reference], corners), reference, confirm=CONFIRM)
    return Scene(skin_name, camera, rng, corners, monitor)


@pytest.mark.parametrize("skin_name", ["nes", "flat_modern", "picture"])
def test_an_unmoved_camera_stays_ok_over_frames_of_play(skin_name):
    scene = _scene(skin_name, seed=4)
    states = {scene.monitor.check(scene.frame()[0]).state for _ in range(30)}
    assert states == {"ok"}


@pytest.mark.parametrize("skin_name", ["nes", "flat_modern", "paper"])
def test_a_camera_bumped_by_4_px_is_reported_moved_within_3_checks_with_its_shift(skin_name):
    scene = _scene(skin_name, seed=5)
    for _ in range(3):
        assert scene.monitor.check(scene.frame()[0]).state == "ok"
    dx, dy = scene.camera.shift_px
    bumped = dataclasses.replace(scene.camera, shift_px=(dx + 4.0, dy))
    states = []
    for _ in range(CONFIRM):
        image, corners_now = scene.frame(bumped)
        status = scene.monitor.check(image)
        states.append(status.state)
    assert states == ["ok"] * (CONFIRM - 1) + ["moved"]
    true_shift = (corners_now - scene.corners).mean(axis=0)
    assert np.hypot(*(np.array(status.shift_px) - true_shift)) <= 1.0
    assert np.abs(status.proposed_corners - corners_now).max() <= 1.5
    assert status.distance_px == pytest.approx(np.hypot(*true_shift), abs=1.0)


def test_black_frames_are_lost_not_moved_and_one_odd_frame_changes_nothing():
    scene = _scene("flat_modern", seed=6)
    image, _ = scene.frame()
    black, white = np.zeros_like(image), np.full_like(image, 255)
    for odd in (black, white):  # a single odd frame between good ones: no alarm
        assert scene.monitor.check(odd).state == "ok"
        assert scene.monitor.check(scene.frame()[0]).state == "ok"
    states = [scene.monitor.check(black).state for _ in range(CONFIRM)]
    assert states == ["ok"] * (CONFIRM - 1) + ["lost"]
    assert "not in view" in scene.monitor.status.message
    assert [scene.monitor.check(scene.frame()[0]).state for _ in range(CONFIRM)][-1] == "ok"


def test_observations_whose_surroundings_changed_are_counted_until_the_next_check():
    scene = _scene("nes", seed=7)
    bumped = dataclasses.replace(scene.camera, shift_px=(scene.camera.shift_px[0] + 6.0, scene.camera.shift_px[1]))
    image, _ = scene.frame(bumped, filled_rows=0)
    observation = observe(image, learn_empty([scene.frame(filled_rows=0)[0]], scene.corners))
    assert not observation.valid and "surroundings" in observation.reason
    scene.monitor.note(observation)
    valid = Observation(True, "", np.zeros((20, 10), bool), np.ones((20, 10), np.float32), np.zeros((20, 10, 3), np.float32))
    scene.monitor.note(valid)
    assert scene.monitor.check(image).surroundings_changed == 1
    assert scene.monitor.check(image).surroundings_changed == 0


def test_a_well_with_featureless_surroundings_is_reported_blind_not_ok():
    scene = _scene("gradient_open", seed=1)
    assert scene.monitor.blind
    assert scene.monitor.check(scene.frame()[0]).state == "blind"


def test_frames_of_another_size_and_a_bad_confirm_are_refused():
    scene = _scene("nes", seed=8)
    with pytest.raises(ValueError, match="reference"):
        scene.monitor.check(np.zeros((240, 320, 3), dtype=np.uint8))
    with pytest.raises(ValueError, match="confirm"):
        CalibrationMonitor(learn_empty([scene.frame()[0]], scene.corners), scene.frame()[0], confirm=0)
