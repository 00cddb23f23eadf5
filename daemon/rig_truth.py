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
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median


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
    run = RunTruth()
    spawns: list[float] = []  # appearance time of each counted piece
    spawn_frames: list[int] = []
    views: list[float] = []  # when the camera first sent a picture of each spawn frame
    presses: list[tuple[float, str]] = []  # (contact time, key)
    filmed: list[float] = []
    previous_piece = None
    previous_game = None
    counted_game = None
    lines_at_start: int | None = None  # of the game counted now
    lines_before = 0  # in the games counted before it
    last_lines = 0
    last_next = None
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # the last line of a file still being written
                continue
            kind = record.get("type")
            if kind == "edge":
                if record["pressed"] and record["t"] >= since_t:
                    presses.append((record["t"], record["key"]))
                continue
            if kind != "frame":
                continue
            piece, game, t = record["piece"], record["game"], record["t"]
            appeared = piece is not None and (
                previous_piece is None or game != previous_game or piece["kind"] != previous_piece["kind"] or piece["y"] > previous_piece["y"]
            )
            previous_piece, previous_game = piece, game
            if t < since_t:
                continue
            if lines_at_start is None:
                lines_at_start, counted_game, run.games = record["lines"], game, 1
                run.level_start = record["level"]
            elif game != counted_game:  # a new game, from 0 lines: the last one's are banked
                lines_before += last_lines - lines_at_start
                lines_at_start, counted_game, run.games = 0, game, run.games + 1
            if appeared and max_pieces is not None and len(spawns) == max_pieces:
                last_lines, last_next = record["lines"], piece["kind"]
                break
            if appeared:
                spawns.append(t)
                spawn_frames.append(record["frame"])
                run.sequence.append(piece["kind"])
            if record["camera_frame"] is not None:
                filmed.append(t)
                if len(views) < len(spawn_frames) and record["camera_frame"] >= spawn_frames[len(views)]:
                    views.append(t)
            last_lines, last_next = record["lines"], record["next_piece"]
            run.level_end, run.game_over = record["level"], record["over"]
    run.pieces = len(spawns)
    run.lines = lines_before + last_lines - (lines_at_start or 0)
    if last_next is not None:
        run.sequence.append(last_next)
    first_keys = _first_keys(spawns, presses)
    run.glass_to_key_s = [key_t - t for t, key_t, _ in first_keys]
    run.first_keys = [key for _, _, key in first_keys]
    viewed = dict(zip(spawns, views))
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
