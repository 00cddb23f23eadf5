"""Long straight edges of a frame, and the ones that run along a well's rows or columns.

Everything drawn on a flat screen is seen through one perspective: the monitor's edge, a
preview box, a wall, a row of text all meet the well's columns (or rows) at the same vanishing
point.  ``calibration._fit_lines`` uses such edges to hold the well's perspective where its
own lattice shows only a part of the well (an open well with a small stack and no grid): a
homography fitted to a few rows of cells extrapolates the empty part badly, and those edges
are often long and straight far from it.

Measured on the tuning skins' failing bench scenes, fitted from the true corners: with the
true vanishing points the worst corner went from 2.2-5.9 px to 0.7-3.3 px (gradient_open
mostly under 3); with the ones of these edges to 1.1-3.3 px (``tests/calibration_eval.py``,
see ``calibration``'s module docstring for the whole effect).  Pure: numpy and OpenCV.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

# Canny thresholds on the blurred grey frame (0-255): an edge of about 30 levels or more
_CANNY_LOW, _CANNY_HIGH = 30, 90
_MIN_LENGTH = 0.25  # of the frame's smaller side: shorter edges give too loose a direction
_MAX_GAP_PX = 12  # holes a segment may have (noise and JPEG break a faint edge)
_HOUGH_VOTES = 0.2  # of the frame's smaller side
_NEAR_PX = 1.5  # edge pixels this close to a segment refine its line
#: An edge runs towards a vanishing point of the well when it is within this angle of the
#: direction from its middle to that point (the fit it corrects is off by less).
ALONG_LATTICE_DEG = 2.0
#: More edges than this along one axis are a texture, whose direction is not the perspective's:
#: a camera's moire bands (each band an edge as long as the frame, a degree or two off the
#: rows) or a page's stripes.  A screen's edges, boxes and walls give 2-7 (145 of 158 bench
#: scenes looked at, the true wells' axes); four scenes of seeds 5, 8 and 9 with 26-125 such
#: bands were fitted 3.2-5.8 px off with them, 0.5-1.1 px without.
_MAX_ALONG_AXIS = 10


@dataclass(frozen=True)
class StraightEdge:
    """A straight edge in the frame: the line a x + b y + c = 0 (a^2 + b^2 = 1) through it."""

    line: np.ndarray
    middle: np.ndarray  # (x, y) of the segment's middle, frame pixels
    length: float  # pixels


def edge_pixels(gray: np.ndarray) -> np.ndarray:
    """Canny's edge pixels (uint8, 255 on an edge) of a grey frame (float or uint8, H x W, 0-255)."""
    return cv2.Canny(np.clip(gray, 0, 255).astype(np.uint8), _CANNY_LOW, _CANNY_HIGH)


def straight_edges(gray: np.ndarray) -> list[StraightEdge]:
    """The long straight edges of a grey frame (float or uint8, H x W, 0-255): segments found
    by a probabilistic Hough transform on Canny edges, each refitted (least squares, Huber)
    to the edge pixels along it."""
    edges = edge_pixels(gray)
    size = min(gray.shape)
    segments = cv2.HoughLinesP(edges, 1, np.pi / 720, threshold=int(_HOUGH_VOTES * size),
                               minLineLength=_MIN_LENGTH * size, maxLineGap=_MAX_GAP_PX)
    if segments is None:
        return []
    ys, xs = np.nonzero(edges)
    pixels = np.stack([xs, ys], axis=1).astype(np.float64)
    found = []
    for x1, y1, x2, y2 in segments.reshape(-1, 4).astype(np.float64):
        direction = np.array([x2 - x1, y2 - y1])
        length = float(np.linalg.norm(direction))
        direction /= length
        relative = pixels - (x1, y1)
        along, across = relative @ direction, relative @ (-direction[1], direction[0])
        near = (np.abs(across) <= _NEAR_PX) & (along >= 0) & (along <= length)
        if near.sum() < 0.5 * length:  # a Hough segment strung through scattered pixels
            continue
        vx, vy, x0, y0 = cv2.fitLine(pixels[near].astype(np.float32), cv2.DIST_HUBER, 0, 0.01, 0.01).ravel()
        found.append(StraightEdge(np.array([-vy, vx, vy * x0 - vx * y0], dtype=np.float64), np.array([x0, y0], dtype=np.float64), length))
    return found


def along_lattice(homography: np.ndarray, edges: Sequence[StraightEdge]) -> list[tuple[np.ndarray, int, float]]:
    """The edges that run towards a vanishing point of the lattice ``homography`` maps (from
    cell units to the frame): (line, axis (0: along the rows, 1: along the columns), length);
    none for an axis that more than ``_MAX_ALONG_AXIS`` run along (a texture)."""
    found = []
    for axis in (0, 1):
        vanishing = homography[:, axis]  # the image of the direction (1, 0, 0) or (0, 1, 0)
        along = []
        for edge in edges:
            towards = vanishing[:2] - edge.middle * vanishing[2]
            norm = float(np.linalg.norm(towards))
            # the line's normal is perpendicular to the direction towards the vanishing point
            if norm > 0 and abs(edge.line[:2] @ towards) / norm < np.sin(np.radians(ALONG_LATTICE_DEG)):
                along.append((edge.line, axis, edge.length))
        found += along if len(along) <= _MAX_ALONG_AXIS else []
    return found
