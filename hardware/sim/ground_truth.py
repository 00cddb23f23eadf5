"""The simulator's ground truth: what the target machine really did, frame by frame and key by key.

Three kinds of record, queryable in process and, when a path is given, streamed as JSON lines
(one object per line with a ``"type"`` field):

- ``frame``: every game frame: its number and time, the board (text rows, top row first, ``#``
  filled), the piece in play (type, orientation, origin), the next piece when shown, score, lines,
  level, paused / over, and which earlier frame's screen the camera sent at that frame
  (``camera_frame``: the frame number minus the camera latency; a frozen camera repeats an old
  number; None for a black frame or when the camera sent nothing: a dropped frame, or a frame the
  loop ran late and did not film);
- ``edge``: every debounced key edge with its contact time, dropped presses flagged;
- ``received``: every key the game read, with the frame that read it and its contact time.

Memory is bounded: the newest ``max_frames`` frame records stay in process (the file gets all);
edges and received keys are few and are all kept.  Thread-safe.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from .keyboard import KeyEdge


@dataclass(frozen=True)
class PieceTruth:
    """The piece in play: letter, Fahey's 1-based orientation, origin (x, y) 1-based from the bottom."""

    kind: str
    orientation: int
    x: int
    y: int


@dataclass(frozen=True)
class FrameTruth:
    """The target machine's state at the end of one frame."""

    frame: int
    t: float
    game: int  # 1 for the first game after power-on, +1 per new game
    board: tuple[str, ...]  # top row first, '#' filled, '.' empty
    piece: PieceTruth | None
    next_piece: str | None  # None when the preview is off
    score: int
    lines: int
    level: int
    paused: bool
    over: bool
    camera_frame: int | None  # the frame whose screen the camera sent at this frame


@dataclass(frozen=True)
class ReceivedKey:
    """A key the game read: the frame that read it, and the contact time of its press."""

    frame: int
    key: str
    t: float


class GroundTruth:
    """Collects the truth records; see the module docstring."""

    def __init__(self, max_frames: int = 60 * 600, path: str | Path | None = None) -> None:
        self._lock = threading.Lock()
        self._frames: deque[FrameTruth] = deque(maxlen=max_frames)
        self._edges: list[KeyEdge] = []
        self._received: list[ReceivedKey] = []
        self._file: IO[str] | None = None
        if path is not None:
            self.log_to(path)

    def log_to(self, path: str | Path) -> None:
        """From now on also write every record to ``path`` as JSON lines (the file is replaced)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
            self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 (kept open while logging)

    def close(self) -> None:
        """Flush and close the log file, if any (in-process records stay queryable)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def add_frame(self, record: FrameTruth) -> None:
        """Record one frame."""
        with self._lock:
            self._frames.append(record)
            self._write("frame", asdict(record))

    def add_edge(self, edge: KeyEdge) -> None:
        """Record one debounced key edge."""
        with self._lock:
            self._edges.append(edge)
            self._write("edge", asdict(edge))

    def add_received(self, key: ReceivedKey) -> None:
        """Record one key the game read."""
        with self._lock:
            self._received.append(key)
            self._write("received", asdict(key))

    def frames(self) -> list[FrameTruth]:
        """The frame records kept in process, oldest first."""
        with self._lock:
            return list(self._frames)

    def frame(self, number: int) -> FrameTruth | None:
        """The record of frame ``number``, or None if it is not (or no longer) kept."""
        with self._lock:
            if not self._frames:
                return None
            index = number - self._frames[0].frame
            return self._frames[index] if 0 <= index < len(self._frames) else None

    def latest(self) -> FrameTruth | None:
        """The newest frame record."""
        with self._lock:
            return self._frames[-1] if self._frames else None

    def edges(self) -> list[KeyEdge]:
        """Every key edge, dropped ones included."""
        with self._lock:
            return list(self._edges)

    def received(self) -> list[ReceivedKey]:
        """Every key the game read, in order."""
        with self._lock:
            return list(self._received)

    def _write(self, kind: str, fields: dict[str, object]) -> None:
        if self._file is not None:
            self._file.write(json.dumps({"type": kind, **fields}, separators=(",", ":")) + "\n")
