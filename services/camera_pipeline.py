"""One camera frame in, the bodies of ``obs.frame`` and ``obs.event`` out: the recognition of
games/tetris/vision_bench.py, frame by frame, plus the calibration re-check.

Pure: no sockets, no clocks, no files (the caller reads the calibration and its reference frame).
Per frame, exactly as the vision bench does: ``cell_look.LearningObserver`` (``observe``, which
learns in the first frames of play whether to read the cells by their middles) ->
``read_preview`` (when the calibration has a preview box) -> ``BoardFilter(k)`` ->
``PieceTracker(calibration)`` (which learns the piece colours from its first spawns), with the
frame's capture time as the timestamp.  Every ``RECHECK_EVERY_S`` of capture time the
``CalibrationMonitor`` (games/tetris/recheck.py) compares the well's surroundings with the
calibration's reference frame and reports ``ok``, ``moved``, ``lost`` or ``blind`` (also when
there is no reference frame to compare with).

The bodies follow the issue-5 contract.  Conventions it leaves open:

* ``board``: the tracker's settled stack (no falling piece), H strings, top row first.
* ``falling``: ``x``, ``y`` are Fahey's 1-based origin (y from the bottom) and ``orientation`` is
  1-based, as in games/tetris/pieces.py; ``cells`` are ``[row, col]`` indices into ``board``
  (row 0 the top row, col 0 the left column).
* ``status``: ``none`` when recognition refused the frame, ``unsure`` when the filter or the
  tracker is unsure or no board is committed yet (``reason`` says why), else ``ok``.
* ``obs.event`` ``board`` is the stack after all of that frame's events (so a landing's board
  already has its cleared rows removed); ``rows`` are the tracker's 1-based rows counted from
  the bottom, numbered on the board before the clear.
* ``level`` is null: no level reader exists yet.

Tested in tests/integration/test_camera_service.py (through the service, on the simulator's
stream, against its ground truth); the recognition itself is measured by ``gamerigctl bench vision``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gamerig.games.tetris.cell_look import LearningObserver
from gamerig.games.tetris.preview import PreviewCalibration, read_preview
from gamerig.games.tetris.recheck import CalibrationMonitor
from gamerig.games.tetris.recognition import GridCalibration
from gamerig.games.tetris.temporal import BoardFilter
from gamerig.games.tetris.tracker import Event, PieceTracker, piece_cells_of

#: Seconds of capture time between calibration re-checks (each costs 6-11 ms).
RECHECK_EVERY_S = 1.0


def board_rows(stack: np.ndarray) -> list[str]:
    """A rows x cols bool array, bottom row first, as strings top row first ('#' full, '.' empty)."""
    return ["".join("#" if cell else "." for cell in row) for row in stack[::-1]]


@dataclass(frozen=True)
class FrameResult:
    """What one frame gave: the obs.frame body and the obs.event bodies (published before it)."""

    frame: dict[str, Any]
    events: list[dict[str, Any]]


class RecognitionPipeline:
    """The per-frame recognition of one calibration; see the module docstring."""

    def __init__(
        self,
        well: GridCalibration,
        preview: PreviewCalibration | None,
        reference: np.ndarray | None,
        k: int = 2,
    ) -> None:
        self.well = well
        self.reader = LearningObserver(well)
        self.preview = preview
        self.filter = BoardFilter(k)
        self.tracker = PieceTracker(well)
        self.monitor: CalibrationMonitor | None = None
        self.calibration = "blind"
        if reference is not None:
            try:
                self.monitor = CalibrationMonitor(well, reference)
                self.calibration = self.monitor.status.state
            except ValueError:  # the well fills the frame: nothing around it to check against
                self.monitor = None
        self._checked_at: float | None = None

    def process(self, image: np.ndarray, t_capture: float, frame_seq: int) -> FrameResult:
        """Recognize one frame captured at ``t_capture``."""
        observation = self.reader.observe(image)
        next_piece = read_preview(image, self.preview).piece if self.preview is not None else None
        update = self.filter.update(observation, t_capture)
        tracked = self.tracker.update(update, observation, t_capture)
        self._recheck(image, observation, t_capture)
        board = None if tracked.stack is None else board_rows(tracked.stack)
        if not observation.valid:
            status, reason = "none", observation.reason
        elif board is None or update.status == "unsure" or tracked.status == "unsure":
            status, reason = "unsure", tracked.reason or update.reason
        else:
            status, reason = "ok", ""
        falling = None
        if tracked.falling is not None:
            piece = tracked.falling
            rows = self.well.rows
            falling = {
                "piece": piece.name,
                "orientation": piece.orientation,
                "x": piece.origin[0],
                "y": piece.origin[1],
                "cells": sorted([rows - y, x - 1] for x, y in piece_cells_of(piece)),
            }
        frame = {
            "frame_seq": frame_seq,
            "t_capture": t_capture,
            "status": status,
            "reason": reason,
            "board": board,
            "falling": falling,
            "next_piece": next_piece,
            "level": None,
            "calibration": self.calibration,
        }
        events = [_event_body(event, frame_seq, board) for event in tracked.events]
        return FrameResult(frame, events)

    def _recheck(self, image: np.ndarray, observation: Any, t_capture: float) -> None:
        if self.monitor is None:
            return
        self.monitor.note(observation)
        if self._checked_at is None or t_capture - self._checked_at >= RECHECK_EVERY_S:
            self._checked_at = t_capture
            self.calibration = self.monitor.check(image).state


def _event_body(event: Event, frame_seq: int, board: list[str] | None) -> dict[str, Any]:
    return {
        "kind": event.kind,
        "frame_seq": frame_seq,
        "t_capture": event.timestamp,
        "piece": event.piece,
        "rows": list(event.rows),
        "board": board,
    }
