"""Devices read through cv2.VideoCapture: a V4L2 camera, a video file, a network stream (FFmpeg)."""

from __future__ import annotations

import enum
import os
import time
from dataclasses import dataclass

import cv2
import numpy as np

from gamerig.hardware.frames.source import Pacer, SourceEnded, SourceLost


class OpenCvCapture:
    """An open cv2.VideoCapture: grab, timestamp, then decode, so the time is as close to capture as possible."""

    def __init__(self, capture: cv2.VideoCapture, name: str) -> None:
        self._capture = capture
        self._name = name

    def read(self) -> tuple[np.ndarray, float]:
        """The next frame and its monotonic capture time; SourceLost when the backend gives none."""
        if not self._capture.grab():
            raise SourceLost(f"{self._name}: no frame (device lost, stream ended or read timed out)")
        timestamp = time.monotonic()
        ok, image = self._capture.retrieve()
        if not ok or image is None:
            raise SourceLost(f"{self._name}: frame could not be decoded")
        return _as_bgr(image), timestamp

    def rewind(self) -> None:
        """Go back to the first frame (files only)."""
        self._capture.set(cv2.CAP_PROP_POS_FRAMES, 0)

    def close(self) -> None:
        """Release the device."""
        self._capture.release()


def _as_bgr(image: np.ndarray) -> np.ndarray:
    """OpenCV already gives BGR for colour input; grey devices get three equal channels."""
    if image.ndim == 2:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    return image


def _opened(capture: cv2.VideoCapture, name: str) -> cv2.VideoCapture:
    if not capture.isOpened():
        capture.release()
        raise SourceLost(f"{name}: could not be opened")
    return capture


# OpenCV's V4L2 backend ignores CAP_PROP_READ_TIMEOUT_MSEC and waits up to this many whole seconds
# (default 10) for a frame from a stalled camera. It reads the variable once, on the process's first
# V4L2 capture, so it is set (unless the operator already did) just before the first camera opens.
V4L2_SELECT_TIMEOUT_ENV = "OPENCV_VIDEOIO_V4L_SELECT_TIMEOUT"
V4L2_SELECT_TIMEOUT_S = "2"


@dataclass(frozen=True, slots=True)
class V4L2Camera:
    """A V4L2 camera such as /dev/video0, asked for MJPG and a one-frame driver buffer.

    width, height and fps are requests: the driver picks the nearest mode it supports. V4L2 honours
    CAP_PROP_BUFFERSIZE=1, so a lagging consumer cannot find stale frames queued in the driver.
    """

    path: str
    width: int | None = None
    height: int | None = None
    fps: float | None = None
    fourcc: str = "MJPG"

    def open(self) -> OpenCvCapture:
        """Open the camera and request its format; SourceLost if the device cannot be opened."""
        os.environ.setdefault(V4L2_SELECT_TIMEOUT_ENV, V4L2_SELECT_TIMEOUT_S)
        capture = _opened(cv2.VideoCapture(self.path, cv2.CAP_V4L2), self.path)
        # Best effort, in this order: the pixel format decides which sizes and rates exist.
        capture.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter_fourcc(*self.fourcc))
        if self.width is not None:
            capture.set(cv2.CAP_PROP_FRAME_WIDTH, self.width)
        if self.height is not None:
            capture.set(cv2.CAP_PROP_FRAME_HEIGHT, self.height)
        if self.fps is not None:
            capture.set(cv2.CAP_PROP_FPS, self.fps)
        capture.set(cv2.CAP_PROP_BUFFERSIZE, 1)
        return OpenCvCapture(capture, self.path)


class Pace(str, enum.Enum):
    """How fast a video file is played."""

    NATIVE = "native"  # at the file's own frame rate, like a camera
    FAST = "fast"  # as fast as it decodes, for benchmarks


@dataclass(frozen=True, slots=True)
class VideoFile:
    """A video file played like a camera (pace native) or as fast as possible, once or in a loop."""

    path: str
    pace: Pace = Pace.NATIVE
    loop: bool = False

    def open(self) -> VideoFileCapture:
        """Open the file; SourceLost if it is missing or not a video OpenCV can decode."""
        capture = _opened(cv2.VideoCapture(self.path, cv2.CAP_FFMPEG), self.path)
        fps = capture.get(cv2.CAP_PROP_FPS)
        pacer = Pacer(1.0 / fps) if self.pace is Pace.NATIVE and fps > 0 else None
        return VideoFileCapture(OpenCvCapture(capture, self.path), pacer, self.loop, self.path)


class VideoFileCapture:
    """Reads a file frame by frame, sleeping to the file's frame rate when paced, rewinding when looping."""

    def __init__(self, frames: OpenCvCapture, pacer: Pacer | None, loop: bool, name: str) -> None:
        self._frames = frames
        self._pacer = pacer
        self._loop = loop
        self._name = name

    def read(self) -> tuple[np.ndarray, float]:
        """The next frame; SourceEnded after the last one unless looping."""
        if self._pacer is not None:
            self._pacer.wait()
        try:
            return self._frames.read()
        except SourceLost:
            if not self._loop:
                raise SourceEnded(f"{self._name}: end of file") from None
        self._frames.rewind()
        try:
            return self._frames.read()
        except SourceLost:
            raise SourceEnded(f"{self._name}: no frame after rewinding (empty file?)") from None

    def close(self) -> None:
        """Release the file."""
        self._frames.close()


@dataclass(frozen=True, slots=True)
class NetworkStream:
    """An MJPEG-over-HTTP or RTSP stream read through FFmpeg with short open and read timeouts.

    FFmpeg's own default for both is 30 s; these timeouts only take effect as open-time parameters.
    A stream that stalls longer than read_timeout_ms is reported lost and reopened.
    """

    url: str
    open_timeout_ms: int = 2000
    read_timeout_ms: int = 1000

    def open(self) -> OpenCvCapture:
        """Connect to the stream; SourceLost if the server refuses, times out or sends no video."""
        params = [
            cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, self.open_timeout_ms,
            cv2.CAP_PROP_READ_TIMEOUT_MSEC, self.read_timeout_ms,
        ]  # fmt: skip
        return OpenCvCapture(_opened(cv2.VideoCapture(self.url, cv2.CAP_FFMPEG, params), self.url), self.url)
