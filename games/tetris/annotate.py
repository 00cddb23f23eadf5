"""Draw a calibration over the frame it was made from, for the operator to check by eye.

Pure: returns a new image, writes nothing.  The lattice is drawn through the well's
perspective (cyan, the outline in yellow), each filled cell of an observation as a dot coloured
by its confidence (green sure, red unsure) and each empty cell read without confidence as a
ring, the preview box in magenta, and a legend above the frame.
"""

from __future__ import annotations

import cv2
import numpy as np

from .recognition import AMBIGUOUS_CONFIDENCE, GridCalibration, Observation

GRID = (255, 255, 0)  # BGR cyan
OUTLINE = (0, 255, 255)  # yellow
PREVIEW = (255, 0, 255)  # magenta
TEXT = (255, 255, 255)
_SHIFT = 4  # cv2 drawing with 4 fractional bits: lines land within 1/16 px of the corners
_FONT = cv2.FONT_HERSHEY_SIMPLEX
_FONT_SCALE = 0.42
_LINE_PX = 16  # legend line height


def _fixed(points: np.ndarray) -> np.ndarray:
    return np.round(np.asarray(points, dtype=np.float64) * (1 << _SHIFT)).astype(np.int32)


def _confidence_colour(confidence: float) -> tuple[int, int, int]:
    """Red at 0, yellow at 0.5, green at 1 (BGR)."""
    c = float(np.clip(confidence, 0.0, 1.0))
    return (0, int(round(255 * min(1.0, 2 * c))), int(round(255 * min(1.0, 2 * (1 - c)))))


def _draw_lattice(image: np.ndarray, to_frame: np.ndarray, cols: int, rows: int) -> None:
    """Every cell line as a straight segment (a perspective keeps lines straight)."""
    ends = [((i, 0), (i, rows)) for i in range(1, cols)] + [((0, j), (cols, j)) for j in range(1, rows)]
    mapped = cv2.perspectiveTransform(np.array(ends, dtype=np.float64).reshape(-1, 1, 2), to_frame).reshape(-1, 2, 2)
    for a, b in _fixed(mapped):
        cv2.line(image, tuple(a), tuple(b), GRID, 1, cv2.LINE_AA, _SHIFT)


def _draw_cells(image: np.ndarray, to_frame: np.ndarray, observation: Observation, radius: float) -> int:
    """Dots on filled cells, rings on unsure empty ones; returns the number of filled cells."""
    rows, cols = observation.filled.shape
    ys, xs = np.mgrid[0:rows, 0:cols]
    # observation rows are bottom first; the well's cell units are top first
    centres = np.stack([xs + 0.5, rows - 1 - ys + 0.5], axis=-1).reshape(-1, 1, 2).astype(np.float64)
    centres = cv2.perspectiveTransform(centres, to_frame).reshape(rows, cols, 2)
    r = max(1, int(round(radius * (1 << _SHIFT))))
    for y, x in zip(*np.nonzero(observation.filled | (observation.confidence < AMBIGUOUS_CONFIDENCE))):
        centre = tuple(_fixed(centres[y, x]))
        colour = _confidence_colour(float(observation.confidence[y, x]))
        thickness = cv2.FILLED if observation.filled[y, x] else 1
        cv2.circle(image, centre, r, colour, thickness, cv2.LINE_AA, _SHIFT)
    return int(observation.filled.sum())


def annotate(
    frame: np.ndarray,
    calibration: GridCalibration,
    observation: Observation | None = None,
    preview_corners: np.ndarray | None = None,
    note: str = "",
) -> np.ndarray:
    """The frame (uint8 H x W x 3 BGR) with the calibration drawn on it and a legend strip of
    two lines above it (the second is ``note``, e.g. the fit score); the result is taller than
    the frame by the strip, its pixels below the strip are the frame's."""
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"a frame must be uint8 H x W x 3, got {frame.dtype} {frame.shape}")
    cols, rows = calibration.cols, calibration.rows
    corners = np.asarray(calibration.corners, dtype=np.float64)
    image = frame.copy()
    square = np.array([[0, 0], [cols, 0], [cols, rows], [0, rows]], dtype=np.float32)
    to_frame = cv2.getPerspectiveTransform(square, corners.astype(np.float32)).astype(np.float64)
    _draw_lattice(image, to_frame, cols, rows)
    cv2.polylines(image, [_fixed(corners)], True, OUTLINE, 1, cv2.LINE_AA, _SHIFT)
    legend = f"well {cols} x {rows} (cyan)"
    if observation is not None and observation.valid:
        radius = 0.22 * float(np.linalg.norm(corners[3] - corners[0])) / rows
        filled = _draw_cells(image, to_frame, observation, radius)
        legend += f", {filled} filled cells (dots: green sure, red unsure; rings: unsure empty)"
    elif observation is not None:
        legend += f", no observation: {observation.reason}"
    if preview_corners is not None:
        cv2.polylines(image, [_fixed(np.asarray(preview_corners).reshape(4, 2))], True, PREVIEW, 1, cv2.LINE_AA, _SHIFT)
        legend += ", preview (magenta)"
    else:
        legend += ", no preview box"
    strip = np.zeros((2 * _LINE_PX + 6, frame.shape[1], 3), dtype=np.uint8)
    for k, text in enumerate((legend, note)):
        cv2.putText(strip, text, (4, (k + 1) * _LINE_PX), _FONT, _FONT_SCALE, TEXT, 1, cv2.LINE_AA)
    return np.vstack([strip, image])
