"""gamerig.hardware.frames: where frames come from (V4L2 camera, video file, network stream, X11 screen).

    with open_source("http://127.0.0.1:8081/stream.mjpg") as source:
        frame = source.read(timeout=1.0)  # newest frame: .image (BGR), .timestamp, .sequence
        source.status()  # state, reconnects, last_error, captured, delivered, dropped
"""

from gamerig.hardware.frames.source import (
    Backoff,
    Frame,
    FrameSource,
    FrameTimeout,
    SourceClosed,
    SourceEnded,
    SourceError,
    SourceLost,
    SourceState,
    SourceStatus,
)
from gamerig.hardware.frames.urls import SourceUrlError, device_from_url, open_source

__all__ = [
    "Backoff",
    "Frame",
    "FrameSource",
    "FrameTimeout",
    "SourceClosed",
    "SourceEnded",
    "SourceError",
    "SourceLost",
    "SourceState",
    "SourceStatus",
    "SourceUrlError",
    "device_from_url",
    "open_source",
]
