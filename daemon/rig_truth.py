"""What the simulator's ground truth (``gamerigctl sim --truth FILE``, JSON lines) says about a run
of the rig: pieces, lines, the piece sequence, and glass-to-first-key latencies.

- A piece *appears on the glass* in the first frame record whose piece is not None after one
  whose piece was None (Standard Tetris shows no piece between a lock and the next spawn), or was
  of another type or lower (a drop and the gravity step that spawns the next piece can fall in one
  frame), or whose game number changed.
- Its *first key* is the first relay closure the keyboard registered (an ``edge`` with
  ``pressed``, dropped presses included: the relay did close) after that frame and before the
  next piece appeared.  Glass-to-key is the edge's contact time minus the frame's time.  Its key
  is kept too: a first key that is a turn (``rotate``) usually waited for the game, not the rig
  (a piece in its spawn row cannot turn before its first fall, section 2 of the rules).
- Its *first view* is the first frame whose camera picture (``camera_frame``) is of that frame or
  later: the camera's own latency (frames, dropped pictures) lies between glass and view.
  View-to-key is the first key's contact time minus that frame's time: what the rig adds.
- Only pieces that appeared at or after ``since_t`` (the start of play) count.

Pure apart from reading the file.  Tested through tests/integration/test_bench_rig.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import median
from typing import Any


@dataclass
class RunTruth:
    """The run as the simulator saw it."""

    pieces: int = 0  # pieces that appeared since the start of play (the one in play at the end included)
    lines: int = 0  # lines cleared since the start of play, in every game
    games: int = 0  # games played since the start of play (the one at the start included)
    sequence: list[str] = field(default_factory=list)  # the pieces in order, then the next piece shown at the end
    glass_to_key_s: list[float] = field(default_factory=list)
    first_keys: list[str] = field(default_factory=list)  # the key of each glass_to_key_s entry
    view_to_key_s: list[float] = field(default_factory=list)
    frame_period_s: float = 0.0  # median interval between filmed frames
    level_start: int = 0
    level_end: int = 0
    game_over: bool = False


def read_truth(path: Path, since_t: float, max_pieces: int | None = None) -> RunTruth:
    """Read the truth file; only what happened at or after ``since_t`` counts, and with
    ``max_pieces`` only until the piece after them appeared (the lines those pieces made)."""
    return TruthReader(path, since_t, max_pieces).read()


class TruthReader:
    """The truth file read as the simulator writes it: each :meth:`read` takes only the lines
    added since the one before.  Read whole every half second, a 1000-piece run's file (60 frame
    records a second, 17 MB by its end) took the bench most of a core of the rig's two, and a
    long ``make demo`` more than that."""

    def __init__(self, path: Path, since_t: float, max_pieces: int | None = None) -> None:
        self.path, self.since_t, self.max_pieces = path, since_t, max_pieces
        self._offset = 0  # of the first line not read yet
        self._done = False  # the piece after max_pieces appeared: nothing more counts
        self._run = RunTruth()
        self._spawns: list[float] = []  # appearance time of each counted piece
        self._spawn_frames: list[int] = []
        self._views: list[float] = []  # when the camera first sent a picture of each spawn frame
        self._presses: list[tuple[float, str]] = []  # (contact time, key)
        self._filmed: list[float] = []
        self._previous_piece: dict[str, Any] | None = None
        self._previous_game: object = None
        self._counted_game: object = None
        self._lines_at_start: int | None = None  # of the game counted now
        self._lines_before = 0  # in the games counted before it
        self._last_lines = 0
        self._last_next: str | None = None

    def read(self) -> RunTruth:
        """The run so far, with the lines written since the last call."""
        with open(self.path, "rb") as file:
            file.seek(self._offset)
            added = file.read()
        complete = added[: added.rfind(b"\n") + 1]  # a last line still being written waits for the next call
        self._offset += len(complete)
        for line in complete.splitlines():
            if self._done:
                break
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            self._take(record)
        return self._result()

    def _take(self, record: dict[str, Any]) -> None:
        run = self._run
        kind = record.get("type")
        if kind == "edge":
            if record["pressed"] and record["t"] >= self.since_t:
                self._presses.append((record["t"], record["key"]))
            return
        if kind != "frame":
            return
        piece, game, t = record["piece"], record["game"], record["t"]
        previous = self._previous_piece
        appeared = piece is not None and (
            previous is None or game != self._previous_game or piece["kind"] != previous["kind"] or piece["y"] > previous["y"]
        )
        self._previous_piece, self._previous_game = piece, game
        if t < self.since_t:
            return
        if self._lines_at_start is None:
            self._lines_at_start, self._counted_game, run.games = record["lines"], game, 1
            run.level_start = record["level"]
        elif game != self._counted_game:  # a new game, from 0 lines: the last one's are banked
            self._lines_before += self._last_lines - self._lines_at_start
            self._lines_at_start, self._counted_game, run.games = 0, game, run.games + 1
        if appeared and self.max_pieces is not None and len(self._spawns) == self.max_pieces:
            self._last_lines, self._last_next = record["lines"], piece["kind"]
            self._done = True
            return
        if appeared:
            self._spawns.append(t)
            self._spawn_frames.append(record["frame"])
            run.sequence.append(piece["kind"])
        if record["camera_frame"] is not None:
            self._filmed.append(t)
            if len(self._views) < len(self._spawn_frames) and record["camera_frame"] >= self._spawn_frames[len(self._views)]:
                self._views.append(t)
        self._last_lines, self._last_next = record["lines"], record["next_piece"]
        run.level_end, run.game_over = record["level"], record["over"]

    def _result(self) -> RunTruth:
        spawns, filmed = self._spawns, self._filmed
        run = replace(self._run, sequence=list(self._run.sequence))
        run.pieces = len(spawns)
        run.lines = self._lines_before + self._last_lines - (self._lines_at_start or 0)
        if self._last_next is not None:
            run.sequence.append(self._last_next)
        first_keys = _first_keys(spawns, self._presses)
        run.glass_to_key_s = [key_t - t for t, key_t, _ in first_keys]
        run.first_keys = [key for _, _, key in first_keys]
        viewed = dict(zip(spawns, self._views))
        run.view_to_key_s = [key_t - viewed[t] for t, key_t, _ in first_keys if t in viewed]
        run.frame_period_s = median(b - a for a, b in zip(filmed, filmed[1:])) if len(filmed) > 1 else 0.0
        return run


def _first_keys(spawns: list[float], presses: list[tuple[float, str]]) -> list[tuple[float, float, str]]:
    """(spawn time, first press time, its key) for each spawn with a press before the next spawn."""
    delays = []
    j = 0
    for i, t in enumerate(spawns):
        end = spawns[i + 1] if i + 1 < len(spawns) else float("inf")
        while j < len(presses) and presses[j][0] < t:
            j += 1
        if j < len(presses) and presses[j][0] < end:
            delays.append((t, *presses[j]))
    return delays


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) by nearest rank, None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]
