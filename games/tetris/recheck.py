"""Notice, during play, that the camera was bumped: the calibrated well is no longer where it was.

Pure: no I/O and no clocks.  The check looks at the well's surroundings (a band two cells wide
around the well, the well's own cells masked out), which play never changes, and finds where
that band of the calibration-time reference frame sits in the current frame: a masked
normalised cross-correlation (``cv2.matchTemplate``, TM_CCOEFF_NORMED, so exposure drift does
not matter) over shifts up to ``SEARCH_PX``, refined to a fraction of a pixel by a parabola.

Why not the lattice or plain phase correlation: measured on filmed synthetic play (one random
camera per skin, 12 boards each), ``calibration.refine_corners`` from the calibrated corners
moved its corners by 2 to 4 px (up to 15 px on a gridless well) on an unmoved camera and took
80-100 ms; ``cv2.phaseCorrelate`` over the well region was thrown off by the changing stack
(errors up to 95 px).

A well whose surroundings have no texture (a smooth gradient showing through a borderless
well, skin ``gradient_open``) gives nothing to match: the monitor reports "blind" instead of
an "ok" it cannot know.

One odd frame (a line-clear flash, a frame torn by the capture) must not raise an alarm: the
reported status changes only after ``confirm`` consecutive checks agree.

Measured on filmed synthetic play (11 skins x 2 random cameras, a check on every one of 60
frames of random stacks each, then a 4 px bump in a random direction): 0 false alarms and no
single odd reading over 1,140 checks; every bump reported "moved" at the 3rd check; shift error
median 0.07 px, worst 0.64 px on tuning skins and 2.98 px on held-out ``pastel`` (a light
well in faint surroundings: the vertical shift is poorly determined); 3 of 22 scenes were
"blind" (``gradient_open`` twice, held-out ``handheld`` once, wrongly: its match worked); 6.4 ms
p50, 11.4 ms p99 per check on one thread.  With the next piece and score and line counters
changing beside the well (30 frames per scene): 0 false alarms, 1 odd single reading in 570,
bumps still noticed at the 3rd check, shift error median 0.13 px, worst 1.09 px on tuning
skins.  (Masking the preview box out as well made it worse: its border helps the match.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np

from .recognition import SURROUNDINGS_CHANGED, GridCalibration, Observation

#: Largest camera shift, in pixels, that is measured; a larger jump reads as "lost".
SEARCH_PX = 16
#: Width of the band of surroundings, in cells of the well.
BAND_CELLS = 2.0
#: Pixels beyond the well's cell area also masked out: a shifted well must not bring its cells
#: into the band at once.
WELL_MARGIN_PX = 2
#: A shift larger than this (pixels) is a moved camera: about a tenth of a cell at 640 x 480,
#: where ``observe`` starts to doubt the ring around the well.
MOVED_PX = 1.0
#: Consecutive checks whose shifts agree within this many pixels count as one reading.
AGREE_PX = 1.0
#: Below this match correlation the reference is not in view: another screen, no picture.
MIN_MATCH = 0.5
#: The reference band must match itself this much worse two pixels off along each axis, or it
#: has no texture to locate it by (measured: 0.009-0.012 across the gradient of
#: ``gradient_open``, at least 0.018 on the skins where the match works).
MIN_SELF_CONTRAST = 0.015

State = Literal["ok", "moved", "lost", "blind"]


@dataclass(frozen=True)
class CalibrationStatus:
    """Whether the calibration still holds, as the monitor last confirmed it."""

    state: State
    #: Measured camera shift (dx, dy) in pixels, frame minus calibration; (0, 0) when lost or blind.
    shift_px: tuple[float, float]
    #: The calibrated corners moved by the shift, when moved: a start for recalibrating.
    proposed_corners: np.ndarray | None
    #: Invalid observations whose surroundings changed, reported by ``note`` since the last check.
    surroundings_changed: int
    message: str

    @property
    def distance_px(self) -> float:
        """How far the camera moved, in pixels."""
        return float(np.hypot(*self.shift_px))


@dataclass(frozen=True)
class _Reading:
    """What one check saw."""

    state: State
    shift: tuple[float, float] = (0.0, 0.0)
    match: float = 0.0


def _grey(frame: np.ndarray) -> np.ndarray:
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"a frame must be uint8 H x W x 3, got {frame.dtype} {frame.shape}")
    # a light blur: sensor noise and the Bayer pattern must not decide the sub-pixel peak
    return cv2.GaussianBlur(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY).astype(np.float32), (0, 0), 1.0)


def _subpixel(before: float, peak: float, after: float) -> float:
    """Offset of a parabola's vertex through three samples, in (-0.5, 0.5)."""
    curvature = before - 2.0 * peak + after
    return 0.0 if curvature >= 0 else float(np.clip(0.5 * (before - after) / curvature, -0.5, 0.5))


class CalibrationMonitor:
    """Fed a frame now and then (the caller decides how often, about once a second suffices),
    it reports whether the camera still sees the well where the calibration put it."""

    def __init__(self, calibration: GridCalibration, reference: np.ndarray, confirm: int = 3) -> None:
        """``reference``: a frame taken with the calibration (an empty board is best, any frame
        of the calibrated screen will do).  ``confirm``: agreeing checks before the status changes."""
        if confirm < 1:
            raise ValueError(f"confirm must be at least 1, got {confirm}")
        self._calibration = calibration
        self._confirm = confirm
        corners = np.asarray(calibration.corners, dtype=np.float64)
        height, width = reference.shape[:2]
        cell = float(np.linalg.norm(corners[3] - corners[0])) / calibration.rows
        low = np.floor(corners.min(axis=0) - BAND_CELLS * cell).astype(int)
        high = np.ceil(corners.max(axis=0) + BAND_CELLS * cell).astype(int)
        # the band must leave SEARCH_PX of frame on every side for the search
        self._x0, self._y0 = max(int(low[0]), SEARCH_PX), max(int(low[1]), SEARCH_PX)
        self._x1, self._y1 = min(int(high[0]), width - SEARCH_PX), min(int(high[1]), height - SEARCH_PX)
        if self._x1 - self._x0 < 8 or self._y1 - self._y0 < 8:
            raise ValueError(f"the well {corners.tolist()} leaves no room to check in a {width} x {height} frame")
        self._frame_shape = reference.shape
        self._template = _grey(reference)[self._y0 : self._y1, self._x0 : self._x1].copy()
        well = np.zeros(self._template.shape, dtype=np.uint8)
        quad = np.round((corners - [self._x0, self._y0]) * 16).astype(np.int32)
        cv2.fillConvexPoly(well, quad, 1, shift=4)
        well = cv2.dilate(well, np.ones((2 * WELL_MARGIN_PX + 1,) * 2, np.uint8))
        self._mask = (1 - well).astype(np.float32)
        self.blind = not self._has_texture()
        self._recent: list[_Reading] = []
        self._noted = 0
        self._status = CalibrationStatus(
            "blind" if self.blind else "ok",
            (0.0, 0.0),
            None,
            0,
            "the well's surroundings have no texture to check the camera against" if self.blind else "as calibrated",
        )

    @property
    def status(self) -> CalibrationStatus:
        """The last confirmed status."""
        return self._status

    def note(self, observation: Observation) -> None:
        """Count an ``observe`` result: frames whose surroundings changed hint at a bump."""
        if not observation.valid and SURROUNDINGS_CHANGED in observation.reason:
            self._noted += 1

    def check(self, frame: np.ndarray) -> CalibrationStatus:
        """Measure the camera's shift in ``frame``; the status changes after ``confirm``
        consecutive checks agree (a shift within ``AGREE_PX`` counts as agreeing)."""
        if frame.shape != self._frame_shape:
            raise ValueError(f"frame is {frame.shape}, the calibration's reference was {self._frame_shape}")
        noted, self._noted = self._noted, 0
        if self.blind:
            self._status = CalibrationStatus("blind", (0.0, 0.0), None, noted, self._status.message)
            return self._status
        self._recent = [*self._recent, self._read(frame)][-self._confirm :]
        agreed = self._agreed()
        if agreed is not None:
            self._status = self._confirmed(agreed, noted)
        else:
            old = self._status
            self._status = CalibrationStatus(old.state, old.shift_px, old.proposed_corners, noted, old.message)
        return self._status

    def _match(self, frame: np.ndarray) -> np.ndarray:
        window = _grey(frame)[self._y0 - SEARCH_PX : self._y1 + SEARCH_PX, self._x0 - SEARCH_PX : self._x1 + SEARCH_PX]
        return cv2.matchTemplate(window, self._template, cv2.TM_CCOEFF_NORMED, mask=self._mask)

    def _has_texture(self) -> bool:
        """Whether the band matches itself clearly worse two pixels off than in place."""
        grey = self._template
        scores = []
        for dx, dy in ((2, 0), (0, 2)):
            shifted = np.roll(grey, (dy, dx), axis=(0, 1))
            scores.append(float(cv2.matchTemplate(shifted, grey, cv2.TM_CCOEFF_NORMED, mask=self._mask)[0, 0]))
        return 1.0 - max(scores) >= MIN_SELF_CONTRAST

    def _read(self, frame: np.ndarray) -> _Reading:
        scores = np.nan_to_num(self._match(frame), nan=-1.0)  # a flat frame has no correlation at all
        _, best, _, (bx, by) = cv2.minMaxLoc(scores)
        if best < MIN_MATCH or not (0 < bx < scores.shape[1] - 1 and 0 < by < scores.shape[0] - 1):
            return _Reading("lost", match=best)  # not in view, or moved beyond the search
        dx = bx - SEARCH_PX + _subpixel(scores[by, bx - 1], best, scores[by, bx + 1])
        dy = by - SEARCH_PX + _subpixel(scores[by - 1, bx], best, scores[by + 1, bx])
        return _Reading("moved" if np.hypot(dx, dy) > MOVED_PX else "ok", (dx, dy), best)

    def _agreed(self) -> _Reading | None:
        """The common reading of the last ``confirm`` checks, or None when they differ."""
        if len(self._recent) < self._confirm or len({r.state for r in self._recent}) > 1:
            return None
        shifts = np.array([r.shift for r in self._recent])
        median = np.median(shifts, axis=0)
        if np.any(np.hypot(*(shifts - median).T) > AGREE_PX):
            return None
        return _Reading(self._recent[-1].state, (float(median[0]), float(median[1])), self._recent[-1].match)

    def _confirmed(self, reading: _Reading, noted: int) -> CalibrationStatus:
        if reading.state == "lost":
            return CalibrationStatus(
                "lost", (0.0, 0.0), None, noted,
                f"the well's surroundings are not in view (match {reading.match:.2f} < {MIN_MATCH}):"
                f" another screen, no picture, or the camera moved more than {SEARCH_PX} px",
            )
        if reading.state == "moved":
            dx, dy = reading.shift
            corners = (np.asarray(self._calibration.corners, dtype=np.float64) + [dx, dy]).astype(np.float32)
            return CalibrationStatus(
                "moved", (dx, dy), corners, noted,
                f"the camera moved by ({dx:+.1f}, {dy:+.1f}) px since calibration: recalibrate",
            )
        return CalibrationStatus("ok", reading.shift, None, noted, "as calibrated")
