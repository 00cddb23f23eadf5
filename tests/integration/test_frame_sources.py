"""Frame sources against real parts: an MJPEG HTTP server (in process and as a killable subprocess),
video files written by cv2.VideoWriter, and an Xvfb screen when one is installed."""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from gamerig.hardware.frames import (
    Backoff,
    FrameSource,
    FrameTimeout,
    SourceClosed,
    SourceEnded,
    SourceState,
    open_source,
)
from gamerig.hardware.frames.x11_source import LSB_FIRST, MSB_FIRST, _bgr_from_ximage, _XImage
from support.mjpeg_server import MjpegServer, read_stamp

SERVER_SCRIPT = Path(__file__).resolve().parents[1] / "support" / "mjpeg_server.py"
FAST_RETRY = Backoff(initial=0.05, cap=0.4)


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    """Poll `condition` until it holds or `timeout` seconds pass; return whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.fixture
def server() -> Iterator[MjpegServer]:
    with MjpegServer(fps=30) as running:
        yield running


@pytest.fixture
def stream(server: MjpegServer) -> Iterator[FrameSource]:
    with open_source(server.url, backoff=FAST_RETRY) as source:
        yield source


def test_stream_frames_arrive_in_order_with_capture_times(stream: FrameSource) -> None:
    frames = [stream.read(timeout=3.0) for _ in range(5)]
    sequences = [frame.sequence for frame in frames]
    timestamps = [frame.timestamp for frame in frames]
    assert sequences == sorted(set(sequences))
    assert timestamps == sorted(set(timestamps))
    assert all(frame.image.shape == (240, 320, 3) and frame.image.dtype == np.uint8 for frame in frames)
    assert frames[-1].timestamp <= time.monotonic()
    status = stream.status()
    assert status.state is SourceState.STREAMING
    assert status.delivered == 5 and status.reconnects == 0


def test_slow_consumer_gets_the_newest_frame_not_a_backlog(stream: FrameSource) -> None:
    previous = stream.read(timeout=3.0)
    for _ in range(3):
        time.sleep(0.3)  # a consumer much slower than the 30 fps stream
        frame = stream.read(timeout=1.0)
        now = time.monotonic()
        assert now - read_stamp(frame.image, now) < 0.15, "frame was sent long ago: a backlog"
        assert frame.sequence - previous.sequence > 3, "frames in between were not skipped"
        previous = frame
    status = stream.status()
    assert status.dropped == status.captured - status.delivered > 0


def test_read_times_out_when_no_frame_comes_and_the_stall_is_reported(
    server: MjpegServer, stream: FrameSource
) -> None:
    stream.read(timeout=3.0)
    server.paused.set()
    with contextlib.suppress(FrameTimeout):
        stream.read(timeout=0.2)  # a frame that was already on its way
    started = time.monotonic()
    with pytest.raises(FrameTimeout, match="no new frame within 0.3 s"):
        stream.read(timeout=0.3)
    assert time.monotonic() - started < 1.0
    # FFmpeg's read timeout (1 s) turns the stall into a lost source.
    assert wait_until(lambda: stream.status().state is SourceState.DISCONNECTED, timeout=4.0)
    assert "no frame" in (stream.status().last_error or "")
    server.paused.clear()
    assert stream.read(timeout=4.0).sequence > 0
    assert stream.status().state is SourceState.STREAMING


class ServerProcess:
    """tests/support/mjpeg_server.py run as a subprocess that can be killed like a crashed camera server."""

    def __init__(self, port: int = 0) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER_SCRIPT), "--port", str(port)],
            stdout=subprocess.PIPE,
            text=True,
        )
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=15.0)
        if not ready:
            self.kill()
            raise AssertionError("MJPEG server subprocess did not start within 15 s")
        self.port = int(self.process.stdout.readline().split()[1])
        self.url = f"http://127.0.0.1:{self.port}/stream.mjpg"

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=5.0)
        self.process.stdout.close()


def test_source_reports_a_killed_server_and_reconnects_when_it_returns() -> None:
    first = ServerProcess()
    try:
        source = open_source(first.url, backoff=FAST_RETRY)
        with source:
            before = source.read(timeout=5.0)
            first.kill()
            assert wait_until(lambda: source.status().state is SourceState.DISCONNECTED, timeout=4.0)
            assert source.status().last_error
            with pytest.raises(FrameTimeout, match="state disconnected"):
                source.read(timeout=0.2)
            second = ServerProcess(port=first.port)
            try:
                restarted = time.monotonic()
                after = source.read(timeout=5.0)
                assert after.sequence > before.sequence
                assert read_stamp(after.image, time.monotonic()) > restarted, "a frame from the old server"
                status = source.status()
                assert status.state is SourceState.STREAMING and status.reconnects >= 1
            finally:
                second.kill()
    finally:
        if first.process.poll() is None:
            first.kill()


def test_close_stops_the_reader_promptly(server: MjpegServer) -> None:
    source = open_source(server.url, backoff=FAST_RETRY)
    source.read(timeout=3.0)
    started = time.monotonic()
    source.close()
    assert time.monotonic() - started < 1.5
    assert not [thread for thread in threading.enumerate() if thread.name == f"frames:{server.url}"]
    assert source.status().state is SourceState.CLOSED
    with pytest.raises(SourceClosed):
        source.read(timeout=0.1)


def write_video(path: Path, frames: int, fps: float) -> None:
    """An MJPG AVI whose frame i is uniformly grey at level 10 * i (i < 26), so order survives decoding."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, (64, 48))
    assert writer.isOpened()
    for index in range(frames):
        writer.write(np.full((48, 64, 3), 10 * index, np.uint8))
    writer.release()


def grey_level_index(image: np.ndarray) -> int:
    return round(float(image.mean()) / 10)


def test_paced_video_file_plays_at_its_own_rate_and_ends(tmp_path: Path) -> None:
    video = tmp_path / "clip.avi"
    write_video(video, frames=12, fps=20.0)
    with open_source(f"file://{video}?pace=native") as source:
        frames = []
        with pytest.raises(SourceEnded):
            while True:
                frames.append(source.read(timeout=2.0))
    assert [frame.sequence for frame in frames] == list(range(1, 13)), "a prompt reader misses no frame"
    assert [grey_level_index(frame.image) for frame in frames] == list(range(12))
    duration = frames[-1].timestamp - frames[0].timestamp
    assert duration >= 0.8 * 11 / 20.0, f"12 frames at 20 fps took only {duration:.3f} s"
    assert source.status().state is SourceState.CLOSED


def test_fast_video_file_reads_as_fast_as_it_decodes(tmp_path: Path) -> None:
    video = tmp_path / "clip.avi"
    write_video(video, frames=24, fps=20.0)
    started = time.monotonic()
    with open_source(f"file://{video}?pace=fast") as source:
        assert wait_until(lambda: source.status().state is SourceState.ENDED, timeout=2.0)
        elapsed = time.monotonic() - started
        assert elapsed < 0.5 * 23 / 20.0, f"fast pace took {elapsed:.3f} s, paced would take 1.15 s"
        assert source.status().captured == 24
        last = source.read(timeout=0.5)
        assert last.sequence == 24 and grey_level_index(last.image) == 23
        with pytest.raises(SourceEnded):
            source.read(timeout=0.5)


def test_looping_video_file_starts_again(tmp_path: Path) -> None:
    video = tmp_path / "clip.avi"
    write_video(video, frames=5, fps=20.0)
    with open_source(f"file://{video}?pace=fast&loop=1") as source:
        assert wait_until(lambda: source.status().captured > 12, timeout=2.0)
        assert source.status().state is SourceState.STREAMING


def test_missing_file_is_reported_and_retried(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.avi"
    with open_source(f"file://{missing}", backoff=FAST_RETRY) as source:
        with pytest.raises(FrameTimeout, match="could not be opened"):
            source.read(timeout=0.3)
        assert source.status().state is SourceState.DISCONNECTED
        write_video(missing, frames=3, fps=20.0)
        assert source.read(timeout=2.0).sequence == 1


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed, so there is no X server to capture")
def test_x11_region_of_an_xvfb_screen(tmp_path: Path) -> None:
    # -displayfd: Xvfb takes a free display and writes its number, so tests running beside ours on
    # a shared machine cannot hand us their server (a display number of our own choosing did once)
    read_end, write_end = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_end), "-screen", "0", "320x240x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(write_end,),
    )
    os.close(write_end)
    try:
        with os.fdopen(read_end) as numbers:
            display = f":{numbers.readline().strip()}"
        assert display != ":", "Xvfb did not start"
        with open_source(f"x11://{display}/10,20,100,50?fps=20", backoff=FAST_RETRY) as source:
            first = source.read(timeout=3.0)
            second = source.read(timeout=3.0)
            assert first.image.shape == (50, 100, 3) and first.image.dtype == np.uint8
            assert second.sequence > first.sequence and second.timestamp > first.timestamp
        with open_source(f"x11://{display}/300,200,100,100", backoff=FAST_RETRY) as off_screen:
            with pytest.raises(FrameTimeout, match="does not fit the 320x240 screen"):
                off_screen.read(timeout=0.5)
    finally:
        xvfb.terminate()
        xvfb.wait(timeout=5.0)


def test_x11_display_that_does_not_exist_is_reported_and_retried() -> None:
    display = ":" + str(next(n for n in range(150, 250) if not Path(f"/tmp/.X11-unix/X{n}").exists()))
    with open_source(f"x11://{display}", backoff=FAST_RETRY) as source:
        with pytest.raises(FrameTimeout, match=f"X display {display} could not be opened"):
            source.read(timeout=0.3)
        assert source.status().state is SourceState.DISCONNECTED


@pytest.mark.parametrize("byte_order", [LSB_FIRST, MSB_FIRST])
def test_x11_pixels_become_bgr_without_row_padding(byte_order: int) -> None:
    height, width, bytes_per_line = 2, 3, 16  # 12 bytes of pixels and 4 of padding per row
    bgr = np.arange(height * width * 3, dtype=np.uint8).reshape(height, width, 3) + 1
    buffer = np.zeros((height, bytes_per_line), np.uint8)
    pixels = buffer[:, : width * 4].reshape(height, width, 4)
    if byte_order == LSB_FIRST:
        pixels[:, :, :3] = bgr  # B, G, R, pad
    else:
        pixels[:, :, 1:] = bgr[:, :, ::-1]  # pad, R, G, B
    image = _XImage(width=width, height=height, byte_order=byte_order, bytes_per_line=bytes_per_line, bits_per_pixel=32)
    image.data = buffer.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))
    np.testing.assert_array_equal(_bgr_from_ximage(image, ":0"), bgr)


def test_reopen_delays_double_up_to_the_cap() -> None:
    backoff = Backoff(initial=0.1, cap=1.0)
    assert [backoff.delay(failures) for failures in range(1, 7)] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0])
    assert backoff.delay(10_000) == 1.0
    with pytest.raises(ValueError, match="0 < initial <= cap"):
        Backoff(initial=2.0, cap=1.0)


def test_missing_camera_is_reported_and_retried(tmp_path: Path) -> None:
    camera = tmp_path / "video9"
    with open_source(f"v4l2://{camera}?width=640&height=480&fps=30", backoff=FAST_RETRY) as source:
        with pytest.raises(FrameTimeout, match=f"{camera}: could not be opened"):
            source.read(timeout=0.3)
        assert source.status().state is SourceState.DISCONNECTED
