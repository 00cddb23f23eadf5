"""The simulator's camera: the feed's latency, drops and faults, and the real MJPEG-over-HTTP stream
read by cv2.VideoCapture (FFmpeg) and by the project's frame source, through a camera disconnect."""

from __future__ import annotations

import time
from collections.abc import Callable

import cv2
import numpy as np
import pytest

from gamerig.hardware.frames import open_source
from gamerig.hardware.frames.source import SourceState
from gamerig.hardware.sim.camera_feed import CameraFeed
from gamerig.hardware.sim.synthetic_camera import CameraSettings
from gamerig.hardware.sim.target import Target, TargetOptions, measure_performance

OPEN_PARAMS = [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, 1500, cv2.CAP_PROP_READ_TIMEOUT_MSEC, 1000]


def screens(n: int) -> list[np.ndarray]:
    return [np.full((480, 640, 3), 20 * k, dtype=np.uint8) for k in range(n)]


# ---- the feed ---------------------------------------------------------------------------------------


def test_the_camera_shows_the_screen_a_few_frames_late_and_films_only_changes() -> None:
    feed = CameraFeed(CameraSettings(jpeg_quality=90), latency_frames=3, exposure_drift=0.0)
    images = screens(4)
    shots = [feed.capture(i, images[min(i // 5, 3)], t=i / 60) for i in range(20)]
    assert [s.shows for s in shots] == [0, 0, 0, 0] + list(range(1, 17))
    assert feed.films == 4  # four distinct screens, each filmed once
    level = [int(cv2.imdecode(np.frombuffer(s.jpeg, np.uint8), cv2.IMREAD_COLOR).mean()) for s in shots]
    assert level[7] == 0 and level[8] == pytest.approx(20, abs=2)  # screen 1 appears 3 frames after frame 5


def test_noise_and_exposure_change_every_frame_of_a_still_screen() -> None:
    feed = CameraFeed(CameraSettings(noise_sigma=4.0, jpeg_quality=90), latency_frames=0, exposure_drift=0.1)
    still = np.full((480, 640, 3), 120, dtype=np.uint8)
    frames = [cv2.imdecode(np.frombuffer(feed.capture(i, still, t=i * 2.0).jpeg, np.uint8), cv2.IMREAD_COLOR) for i in range(3)]
    assert feed.films == 1
    assert not np.array_equal(frames[0], frames[1])
    assert abs(float(frames[0].mean()) - float(frames[1].mean())) > 1.0  # exposure drifted in 2 s
    assert 2.0 < float(np.std(frames[0].astype(np.float32) - frames[0].mean())) < 8.0


def test_freeze_black_and_dropped_frames() -> None:
    feed = CameraFeed(CameraSettings(noise_sigma=3.0), latency_frames=0)
    image = screens(8)[7]
    first = feed.capture(0, image, t=0.0)
    feed.freeze(until=0.5)
    assert feed.capture(1, image, t=0.1) == first  # the same bytes: a frozen camera
    later = feed.capture(2, image, t=0.6)
    assert later.jpeg != first.jpeg and later.shows == 2
    feed.black(until=1.0)
    dark = feed.capture(3, image, t=0.7)
    assert dark.shows is None
    assert cv2.imdecode(np.frombuffer(dark.jpeg, np.uint8), cv2.IMREAD_COLOR).mean() < 30
    dropping = CameraFeed(CameraSettings(), drop_probability=0.5, seed=1)
    dropped = sum(dropping.capture(i, image, t=i / 60).jpeg is None for i in range(400))
    assert 150 < dropped < 250


# ---- the real stream ------------------------------------------------------------------------------


def read_frames(capture: cv2.VideoCapture, n: int) -> list[np.ndarray]:
    frames = []
    for _ in range(n):
        ok, frame = capture.read()
        assert ok, "the stream ended"
        frames.append(frame.copy())  # the FFmpeg backend may hand out its own buffer again
    return frames


def read_until(capture: cv2.VideoCapture, seen: Callable[[list[np.ndarray]], bool], timeout: float = 2.0) -> list[np.ndarray]:
    """Read without pause (so no backlog builds up) until ``seen(frames so far)`` holds."""
    frames: list[np.ndarray] = []
    deadline = time.monotonic() + timeout
    while not seen(frames):
        assert time.monotonic() < deadline, f"not seen in {timeout} s of stream ({len(frames)} frames)"
        frames += read_frames(capture, 1)
    return frames


def test_video_capture_reads_the_game_screen_and_sees_camera_faults() -> None:
    with Target(TargetOptions(skin="flat_modern", camera_drop_probability=0.0)) as target:
        capture = cv2.VideoCapture(target.url, cv2.CAP_FFMPEG, OPEN_PARAMS)
        try:
            assert capture.isOpened()
            frames = read_frames(capture, 30)
            assert frames[-1].shape == (480, 640, 3)
            assert not np.array_equal(frames[-1], frames[-2])  # live: fresh noise every frame
            lit = frames[-1].mean()
            assert lit > 30  # a lit screen (this camera films flat_modern's dark screen at 36-42): a well, text
            target.freeze_camera(0.5)
            read_until(capture, lambda f: len(f) > 6 and all(np.array_equal(f[-1], g) for g in f[-6:]))
            read_until(capture, lambda f: len(f) > 1 and not np.array_equal(f[-1], f[-2]))  # live again
            target.black_frames(0.5)
            read_until(capture, lambda f: bool(f) and f[-1].mean() < 25)
            read_until(capture, lambda f: bool(f) and f[-1].mean() > 0.8 * lit)  # lit again
        finally:
            capture.release()


def test_camera_disconnect_is_seen_by_the_client_and_a_reopen_works_after() -> None:
    with Target(TargetOptions(camera_drop_probability=0.0)) as target:
        capture = cv2.VideoCapture(target.url, cv2.CAP_FFMPEG, OPEN_PARAMS)
        assert capture.isOpened()
        read_frames(capture, 5)
        target.disconnect_camera(2.0)
        t0 = time.monotonic()
        failed = False
        while time.monotonic() - t0 < 1.5 and not failed:  # frames buffered before the cut may still come
            failed = not capture.read()[0]
        capture.release()
        assert failed, "the client never noticed the camera going away"
        assert not target.stream.online
        refused = cv2.VideoCapture(target.url, cv2.CAP_FFMPEG, OPEN_PARAMS)
        assert not refused.isOpened() or not refused.read()[0]
        refused.release()
        while not target.stream.online:
            assert time.monotonic() - t0 < 4.0, "the camera never came back"
            time.sleep(0.05)
        again = cv2.VideoCapture(target.url, cv2.CAP_FFMPEG, OPEN_PARAMS)
        try:
            assert again.isOpened()
            assert read_frames(again, 5)[-1].shape == (480, 640, 3)
        finally:
            again.release()


def test_the_frame_source_reconnects_by_itself_after_a_camera_disconnect() -> None:
    with Target(TargetOptions(camera_drop_probability=0.0)) as target, open_source(target.url) as source:
        first = source.read(timeout=3.0)
        assert first.image.shape == (480, 640, 3)
        target.disconnect_camera(0.5)
        deadline = time.monotonic() + 6.0
        while source.status().reconnects == 0:
            assert time.monotonic() < deadline, f"no reconnect: {source.status()}"
            time.sleep(0.05)
        frame = source.read(timeout=2.0)
        assert frame.sequence > first.sequence and source.status().state == SourceState.STREAMING


def test_every_client_gets_the_stream() -> None:
    with Target(TargetOptions(camera_drop_probability=0.0)) as target:
        captures = [cv2.VideoCapture(target.url, cv2.CAP_FFMPEG, OPEN_PARAMS) for _ in range(3)]
        try:
            for capture in captures:
                assert read_frames(capture, 3)[-1].shape == (480, 640, 3)
            assert target.stream.client_count == 3
        finally:
            for capture in captures:
                capture.release()


def test_measure_performance_counts_streamed_frames_and_cpu() -> None:
    result = measure_performance(1.0, keys_per_second=2.0)
    assert 0.9 < result.wall_s < 3.0
    assert 20 < result.streamed <= result.frames  # real-time frames; the figures are a benchmark's job
    assert 0.0 < result.cpu_fraction < 1.0 and result.fps == result.streamed / result.wall_s
