"""The synthetic camera degrades frames as configured and reports where the screen landed."""

from __future__ import annotations

import dataclasses

import cv2
import numpy as np
import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import skin
from gamerig.hardware.sim.synthetic_camera import (
    CameraSettings,
    SettingsRanges,
    contact_sheet,
    film,
    map_points,
)

GEOMETRY_ONLY = dict(
    noise_sigma=0.0, blur_sigma=0.0, motion_length_px=0.0, gamma=1.0, white_balance=(1.0, 1.0, 1.0),
    exposure=1.0, vignetting=0.0, moire_amplitude=0.0, bayer=False, jpeg_quality=None, flicker_amplitude=0.0,
)
EFFECTS = {
    "perspective": dict(corner_offsets=(6.0, -4.0, -5.0, 3.0, 2.0, 5.0, -3.0, -6.0)),
    "rotation": dict(rotation_deg=2.0),
    "scale": dict(scale=0.9),
    "shift": dict(shift_px=(5.0, -3.0)),
    "defocus": dict(blur_sigma=1.2),
    "motion": dict(motion_length_px=3.0, motion_angle_deg=30.0),
    "noise": dict(noise_sigma=4.0),
    "gamma": dict(gamma=1.3),
    "white_balance": dict(white_balance=(1.1, 1.0, 0.9)),
    "exposure": dict(exposure=0.8),
    "vignetting": dict(vignetting=0.3),
    "moire": dict(moire_amplitude=0.1, moire_period_px=3.0),
    "bayer": dict(bayer=True),
    "jpeg": dict(jpeg_quality=60),
    "flicker": dict(flicker_amplitude=0.08, flicker_period_rows=60.0),
}


@pytest.fixture(scope="module")
def screen():
    cells = np.zeros((20, 10), dtype=np.uint8)
    cells[:5, ::2] = 1
    return render(Board(cells=cells), skin("flat_modern"), falling=[(4, 18), (5, 18), (6, 18), (5, 17)],
                  falling_piece="T", next_piece="L", score=100, lines=2)


def test_a_camera_with_every_effect_off_returns_the_image_unchanged(screen):
    frame, h = film(screen.image, np.random.default_rng(0), CameraSettings())
    assert np.array_equal(frame, screen.image)
    assert np.allclose(h, np.eye(3))


@pytest.mark.parametrize("name", EFFECTS)
def test_each_effect_alone_changes_the_image(screen, name):
    frame, _ = film(screen.image, np.random.default_rng(0), CameraSettings(**EFFECTS[name]))
    assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8
    assert not np.array_equal(frame, screen.image)


def test_switching_one_effect_off_removes_only_that_effect(screen):
    everything = {k: v for kw in EFFECTS.values() for k, v in kw.items()}
    rng_seed = 3
    with_all, _ = film(screen.image, np.random.default_rng(rng_seed), CameraSettings(**everything))
    without_jpeg, _ = film(screen.image, np.random.default_rng(rng_seed), CameraSettings(**{**everything, "jpeg_quality": None}))
    assert not np.array_equal(with_all, without_jpeg)
    assert np.abs(with_all.astype(int) - without_jpeg).mean() < 6  # JPEG changes detail, not the picture


def test_filming_is_deterministic_for_a_seed(screen):
    settings = CameraSettings.random(np.random.default_rng(11))
    a, _ = film(screen.image, np.random.default_rng(5), settings)
    b, _ = film(screen.image, np.random.default_rng(5), settings)
    c, _ = film(screen.image, np.random.default_rng(6), dataclasses.replace(settings, noise_sigma=5.0))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.parametrize("seed", range(5))
def test_the_homography_maps_screen_pixels_onto_the_frame(screen, seed):
    rng = np.random.default_rng(seed)
    settings = dataclasses.replace(CameraSettings.random(rng), **GEOMETRY_ONLY)
    frame, h = film(screen.image, rng, settings)
    back = cv2.warpPerspective(frame, np.linalg.inv(h), (640, 480))
    seen = cv2.warpPerspective(np.full((480, 640), 255, np.uint8), h, (640, 480))
    seen_back = cv2.warpPerspective(cv2.erode(seen, np.ones((5, 5), np.uint8)), np.linalg.inv(h), (640, 480)) == 255
    error = np.abs(back.astype(int) - screen.image.astype(int)).mean(axis=2)[seen_back]
    assert error.mean() < 6.0
    # and a wrong map would not pass: shift the map by two pixels
    shifted = np.array([[1, 0, 2], [0, 1, 0], [0, 0, 1]], dtype=float) @ h
    wrong = cv2.warpPerspective(frame, np.linalg.inv(shifted), (640, 480))
    assert np.abs(wrong.astype(int) - screen.image.astype(int)).mean(axis=2)[seen_back].mean() > 2 * error.mean()


def test_a_bright_marker_lands_where_the_homography_predicts():
    image = np.zeros((480, 640, 3), dtype=np.uint8)
    image[199:202, 299:302] = 255  # centred on (300, 200)
    settings = CameraSettings(corner_offsets=(9.0, -7.0, -8.0, 5.0, 4.0, 9.0, -6.0, -9.0), rotation_deg=2.5, scale=0.9,
                              shift_px=(7.0, -4.0), blur_sigma=1.0, noise_sigma=2.0, jpeg_quality=80)
    frame, h = film(image, np.random.default_rng(0), settings)
    gray = cv2.GaussianBlur(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY), (5, 5), 0)
    y, x = np.unravel_index(np.argmax(gray), gray.shape)
    (px, py), = map_points(h, np.array([[300.0, 200.0]]))
    assert abs(x - px) <= 1.0 and abs(y - py) <= 1.0


def test_ground_truth_corners_follow_the_well_into_the_frame():
    empty = render(Board(), skin("flat_modern"))
    settings = CameraSettings(corner_offsets=(10.0, 5.0, -8.0, 6.0, -5.0, -9.0, 7.0, -4.0), rotation_deg=-2.0, scale=0.92)
    frame, h = film(empty.image, np.random.default_rng(0), settings)
    corners = map_points(h, empty.well_corners)
    # just inside each mapped corner is the well's dark fill, just outside it is not
    centre = corners.mean(axis=0)
    fill = np.array((0x18, 0x10, 0x10))
    for corner in corners:
        inward = np.round(corner + 3 * (centre - corner) / np.linalg.norm(centre - corner)).astype(int)
        outward = np.round(corner - 4 * (centre - corner) / np.linalg.norm(centre - corner)).astype(int)
        assert np.abs(frame[inward[1], inward[0]].astype(int) - fill).max() <= 20
        assert np.abs(frame[outward[1], outward[0]].astype(int) - fill).max() > 20


def test_jpeg_output_is_a_decoded_frame_close_to_the_input(screen):
    frame, _ = film(screen.image, np.random.default_rng(0), CameraSettings(jpeg_quality=50))
    assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8
    assert 0 < np.abs(frame.astype(int) - screen.image).mean() < 4


def test_bayer_mosaic_keeps_colours_in_bgr_order():
    image = np.zeros((480, 640, 3), dtype=np.uint8)
    image[:] = (200, 100, 30)
    frame, _ = film(image, np.random.default_rng(0), CameraSettings(bayer=True))
    assert np.abs(frame[10:-10, 10:-10].astype(int) - (200, 100, 30)).max() <= 1


def test_random_settings_stay_inside_their_ranges():
    ranges = SettingsRanges()
    rng = np.random.default_rng(0)
    drawn = [CameraSettings.random(rng, ranges) for _ in range(300)]
    for st in drawn:
        assert max(abs(v) for v in st.corner_offsets) <= ranges.corner_jitter_px
        for name in ("rotation_deg", "scale", "blur_sigma", "motion_length_px", "noise_sigma", "gamma", "exposure",
                     "vignetting", "moire_amplitude", "moire_period_px", "flicker_amplitude", "flicker_period_rows"):
            lo, hi = getattr(ranges, name)
            assert lo <= getattr(st, name) <= hi, name
        assert all(ranges.shift_px[0] <= v <= ranges.shift_px[1] for v in st.shift_px)
        assert all(ranges.white_balance[0] <= v <= ranges.white_balance[1] for v in st.white_balance)
        assert ranges.jpeg_quality[0] <= st.jpeg_quality <= ranges.jpeg_quality[1]
    assert 0.55 < np.mean([st.bayer for st in drawn]) < 0.85  # bayer_probability 0.7
    fixed = CameraSettings.random(rng, SettingsRanges(gamma=(1.2, 1.2), jpeg_quality=(77, 77), bayer_probability=0.0))
    assert fixed.gamma == 1.2 and fixed.jpeg_quality == 77 and not fixed.bayer


def test_bad_input_gets_a_specific_error(screen):
    with pytest.raises(ValueError, match="range gamma has low 2.0 above high 1.0"):
        SettingsRanges(gamma=(2.0, 1.0))
    with pytest.raises(ValueError, match="needs a uint8 H x W x 3 image"):
        film(screen.image[..., 0], np.random.default_rng(0), CameraSettings())
    with pytest.raises(ValueError, match="one label per frame"):
        contact_sheet([screen.image], [])


def test_contact_sheet_tiles_frames_in_a_grid(screen):
    sheet = contact_sheet([screen.image] * 5, [str(k) for k in range(5)], columns=3)
    assert sheet.shape == (960, 1920, 3)
    assert not sheet[480:, 1280:].any()  # the sixth tile is empty


def test_fixed_gains_combine_as_their_formulas_say_and_noise_is_fresh_every_frame():
    grey = np.full((480, 640, 3), 100, dtype=np.uint8)
    settings = CameraSettings(vignetting=0.3, exposure=1.2, white_balance=(1.1, 1.0, 0.9),
                              flicker_amplitude=0.05, flicker_period_rows=80.0, flicker_phase=0.5)
    frame, _ = film(grey, np.random.default_rng(0), settings)
    for x, y in ((0, 0), (320, 240), (600, 50), (17, 470)):
        r2 = ((x - 319.5) ** 2 + (y - 239.5) ** 2) / (320 ** 2 + 240 ** 2)
        light = 100 * (1 - 0.3 * r2) * 1.2 * (1 + 0.05 * np.sin(2 * np.pi * y / 80 + 0.5))
        expected = np.clip(np.round(light * np.array((1.1, 1.0, 0.9))), 0, 255)
        assert np.abs(frame[y, x].astype(int) - expected).max() <= 1, (x, y)
    noisy = dataclasses.replace(settings, noise_sigma=4.0)
    rng = np.random.default_rng(1)
    a, _ = film(grey, rng, noisy)
    b, _ = film(grey, rng, noisy)
    difference = a.astype(int) - b
    assert 4.0 < difference.std() < 8.0  # two independent draws of sigma 4: sigma 4 * sqrt(2)
    assert abs(difference.mean()) < 0.2  # the fixed gains are the same in both frames
