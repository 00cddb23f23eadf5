"""``ctl.calibrate`` in the camera service: `gamerigctl calibrate`'s calibration on the live frames.

The camera service owns the frame source (a V4L2 camera opens once), so it cannot hand the
source to daemon/calibrate.py; instead ``LiveCalibration`` collects frames as the service's loop
receives them, ``every_s`` apart, and then runs the same steps with the same functions as
``daemon.calibrate.calibrate``: ``fit_well`` on all the frames (found, or refined from
the request's corners), ``learn_empty_well``, ``find_preview_box``, the annotated PNG, the
per-pixel median frame as the re-check's reference, and ``calibration_store.save``.

The defaults spread ``FRAMES`` frames over ``FRAMES * EVERY_S`` = 3 s: a piece falling through
an otherwise empty well at level 1 (0.5 s a row) covers any cell in at most a third of them, so
``learn_empty_well``'s median outvotes it (10 consecutive frames, the CLI's default, would show
the piece in the same cells in all of them).

Measured (the simulator's ``nes`` skin, 12 frames of 640 x 480, a loaded 2-core machine): 1.7-1.8 s
wall, 1.4-1.7 s CPU, about half in ``find_preview`` and half in ``refine_corners`` / ``find_well``;
so it runs on a thread of its own.  Tested in tests/integration/test_camera_service.py on the
simulator's live stream.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gamerig.daemon.calibrate import CalibrationFailed, UsageError, calibrate_frames
from gamerig.daemon.calibration_store import CalibrationRecord

FRAMES = 12
EVERY_S = 0.25


@dataclass(frozen=True)
class CalibrationRequest:
    """A ``ctl.calibrate`` request: where to write, and optionally the operator's corners to refine."""

    request_id: Any
    out: Path
    png: Path
    corners: np.ndarray | None = None
    frames: int = FRAMES
    every_s: float = EVERY_S
    cols: int = 10
    rows: int = 20

    @classmethod
    def from_body(cls, body: dict[str, Any], default_out: Path) -> CalibrationRequest:
        """The request in a ``ctl.calibrate`` body: {request_id, out, png} and, beyond the
        contract, optional corners [[x, y] x 4] (TL TR BR BL), frames and every_s; ValueError
        names a bad field."""
        for key in ("out", "png"):
            if body.get(key) is not None and not isinstance(body[key], str):
                raise ValueError(f"{key} must be a file path or null, got {body[key]!r}")
        out = Path(body["out"]) if body.get("out") else default_out
        png = Path(body["png"]) if body.get("png") else out.with_suffix(".png")
        corners = body.get("corners")
        if corners is not None:
            try:
                corners = np.asarray(corners, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"corners must be four [x, y] pairs, got {body['corners']!r}") from None
            if corners.shape != (4, 2) or not np.all(np.isfinite(corners)):
                raise ValueError(f"corners must be four [x, y] pairs (TL TR BR BL), got {body['corners']!r}")
        frames, every_s = body.get("frames", FRAMES), body.get("every_s", EVERY_S)
        if isinstance(frames, bool) or not isinstance(frames, int) or not 1 <= frames <= 100:
            raise ValueError(f"frames must be a whole number from 1 to 100, got {frames!r}")
        if isinstance(every_s, bool) or not isinstance(every_s, (int, float)) or not 0 <= every_s <= 10:
            raise ValueError(f"every_s must be a number of seconds from 0 to 10, got {every_s!r}")
        return cls(body.get("request_id"), out, png, corners, frames, float(every_s))


@dataclass(frozen=True)
class CalibrationOutcome:
    """What a live calibration gave: the cam.calibrated fields, and the new calibration when it worked."""

    ok: bool
    message: str
    corners: list[list[float]] | None = None
    record: CalibrationRecord | None = None
    reference: np.ndarray | None = None


class LiveCalibration:
    """Collects the request's frames from the live source, then calibrates; see the module docstring."""

    def __init__(self, request: CalibrationRequest, source: str) -> None:
        self.request = request
        self.source = source
        self._frames: list[np.ndarray] = []
        self._last_t: float | None = None
        self.outcome: CalibrationOutcome | None = None  # set by finish_in_background

    @property
    def complete(self) -> bool:
        """True once every frame is collected."""
        return len(self._frames) >= self.request.frames

    def offer(self, image: np.ndarray, t_capture: float) -> None:
        """A frame from the source; kept when ``every_s`` has passed since the last one kept."""
        if self.complete or (self._last_t is not None and t_capture - self._last_t < self.request.every_s):
            return
        if self._frames and image.shape != self._frames[0].shape:
            self._frames.clear()  # the source changed its frame size: start again
        self._frames.append(image)
        self._last_t = t_capture

    def finish_in_background(self) -> None:
        """Run ``finish`` on a thread of its own (it takes 1.5-2 s of CPU: the service's loop, its
        frames and heartbeats go on meanwhile); ``outcome`` is set when it is done."""
        threading.Thread(target=self._finish, name="camera-calibration", daemon=True).start()

    def _finish(self) -> None:
        self.outcome = self.finish()

    def finish(self) -> CalibrationOutcome:
        """Fit, learn and write the files; a failure is an outcome with its reason, never raised."""
        try:
            return self._calibrate()
        except (CalibrationFailed, UsageError) as exc:
            return CalibrationOutcome(False, f"calibration failed: {exc}")
        except OSError as exc:
            return CalibrationOutcome(False, f"cannot write {exc.filename}: {exc.strerror}")

    def _calibrate(self) -> CalibrationOutcome:
        request = self.request
        method = "auto" if request.corners is None else "corners"
        result = calibrate_frames(
            self._frames, self.source, request.corners, method, request.cols, request.rows, request.out, request.png
        )
        corners = np.round(result.record.well.corners.astype(np.float64), 2).tolist()
        preview_note = "with" if result.record.preview is not None else "without"
        message = (
            f"calibrated ({method}, lattice score {result.record.score:.2f}, {preview_note} a preview box):"
            f" wrote {request.out} and {request.png}"
        )
        return CalibrationOutcome(True, message, corners, result.record, result.reference)
