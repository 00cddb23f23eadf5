"""Outlines of the well's shape in a frame, as candidate lattices for
``calibration.find_well`` where the lattice search finds none: an empty well.

The coarse search (``calibration._comb_search``) looks for the lattice's lines, and an empty
well without grid lines shows only its outline: four lines against the many of any pattern of
about the cells' pitch beside it (a checker background, a text-mode screen's dots).  The well's
outline is nonetheless plain to see, a quadrilateral whose sides stand as the well's rows to
its columns: closed, or walls and a floor with the top open (a well filled with the colour
around it), whose contour's convex hull is that quadrilateral.  Each such outline among the
contours of the frame's edges (``calibration_lines``' Canny edges; a wall gives two, its inner
and its outer edge, or one around it) is offered as a candidate and scored, refined and fitted
like the lattices the search found.  Thick walls and a floor (a text-mode game's, drawn in
characters) make one contour around them all, whose hull runs along their outer edges, half a
cell off the well: the room the contour leaves open inside its hull is the well itself, within
a pixel or two (``well_rooms``), and is fitted as it is (``calibration`` refines the other
candidates by a local search on its coarse evidence, which the dots in a text-mode well's
empty cells draw off the well).

On empty boards (``tests/calibration_empty_eval.py --cameras 6``: 11 skins, 6 cameras each)
find_well found 19 of 66 within 3 px before these candidates, 21 with them, and 25 once an empty
well's blank inside was no longer taken for a lattice of half its pitch
(``calibration._INNER_LINES_SHOWN``); no scene of play of the bench's 440 moved by more than
0.3 px.  With the hulls (and an open-topped well taken as a well, its top placed where its
walls end: ``calibration._wall_ends``) 36 of 66, and 21 of the 24 tuning wells redrawn open at
the top, 0 before; the 440 the same 436.  With the rooms fitted (and the score's tests of a
text-mode well's dots) 43 of 66, elektronika1986's 5 of 6 (0 before); ``calibration``'s
docstring has the later figures.

Pure: numpy and OpenCV.
"""

from __future__ import annotations

import cv2
import numpy as np

from .calibration_lines import edge_pixels

#: A contour is a quadrilateral when its polygon, simplified to this share of its perimeter, has four corners.
_SIMPLIFY = 0.02
#: Its sides' ratio (the mean of the two long ones over the mean of the two short ones) within
#: this share of the well's rows over its columns: a camera's perspective and a wall's width bend it.
_RATIO_SLACK = 0.2
#: Outlines kept, the largest first (the inner and outer edges of a wall, a box around the well).
_MOST = 4
#: Rooms kept, the largest first: a room is fitted as it is, which costs what a candidate's fit costs.
_ROOMS = 2


def well_outlines(gray: np.ndarray, cols: int, rows: int, min_height: float) -> list[np.ndarray]:
    """Quadrilaterals (4 x 2 float, TL TR BR BL, frame pixels) that are the convex hulls of
    contours in the grey frame ``gray`` (H x W, 0-255), whose sides stand as ``rows`` to
    ``cols`` and that are at least ``min_height`` of the frame's height tall: the largest ``_MOST``."""
    return _largest([_quadrilateral(hull, cols, rows, min_height * gray.shape[0]) for _, hull in _tall_hulls(gray, min_height)])


def well_rooms(gray: np.ndarray, cols: int, rows: int, min_height: float) -> list[np.ndarray]:
    """Like ``well_outlines``, the quadrilaterals of the room each hull leaves open inside it
    (``_room``): the inside of thick walls and a floor, where their hull is their outside."""
    rooms = [_room(contour, hull, gray.shape) for contour, hull in _tall_hulls(gray, min_height)]
    return _largest([_quadrilateral(room, cols, rows, min_height * gray.shape[0]) for room in rooms if room is not None])[:_ROOMS]


def _tall_hulls(gray: np.ndarray, min_height: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """The contours of the frame's edges whose convex hulls are at least ``min_height`` of the
    frame tall, each with its hull."""
    edges = cv2.dilate(edge_pixels(gray), np.ones((3, 3), np.uint8))  # close the breaks noise makes in an edge
    contours, _ = cv2.findContours(edges, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
    hulls = [(contour, cv2.convexHull(contour)) for contour in contours]
    return [(contour, hull) for contour, hull in hulls if cv2.boundingRect(hull)[3] >= min_height * gray.shape[0]]


def _largest(quadrilaterals: list[np.ndarray | None]) -> list[np.ndarray]:
    """The ``_MOST`` largest of the quadrilaterals given (None for none)."""
    found = sorted((q for q in quadrilaterals if q is not None), key=lambda c: -cv2.contourArea(c.astype(np.float32)))
    return found[:_MOST]


def _room(contour: np.ndarray, hull: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """The convex hull of the largest region inside ``hull`` that ``contour`` leaves open, or
    None: for thick walls and a floor (one contour around them all) the well itself, between
    the walls' inner edges, where the hull runs along their outer ones."""
    open_inside = np.zeros(shape[:2], np.uint8)
    cv2.fillPoly(open_inside, [hull], 1)
    cv2.drawContours(open_inside, [contour], -1, 0, cv2.FILLED)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(open_inside)
    if count < 2:
        return None
    largest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    region, _ = cv2.findContours((labels == largest).astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    return cv2.convexHull(region[0])


def _quadrilateral(hull: np.ndarray, cols: int, rows: int, min_height_px: float) -> np.ndarray | None:
    """The convex polygon ``hull`` as four ordered corners, if it simplifies to a quadrilateral
    at least ``min_height_px`` tall whose sides stand as ``rows`` to ``cols`` (``_RATIO_SLACK``)."""
    polygon = cv2.approxPolyDP(hull, _SIMPLIFY * cv2.arcLength(hull, True), True)
    if len(polygon) != 4:
        return None
    corners = _ordered(polygon.reshape(4, 2).astype(np.float64))
    width = 0.5 * (np.linalg.norm(corners[1] - corners[0]) + np.linalg.norm(corners[2] - corners[3]))
    height = 0.5 * (np.linalg.norm(corners[3] - corners[0]) + np.linalg.norm(corners[2] - corners[1]))
    if height < min_height_px or width <= 0 or abs((height / width) / (rows / cols) - 1.0) > _RATIO_SLACK:
        return None
    return corners


def _ordered(corners: np.ndarray) -> np.ndarray:
    """Four corners as top-left, top-right, bottom-right, bottom-left."""
    by_y = corners[np.argsort(corners[:, 1])]
    top, bottom = by_y[:2], by_y[2:]
    top = top[np.argsort(top[:, 0])]
    bottom = bottom[np.argsort(bottom[:, 0])]
    return np.array([top[0], top[1], bottom[1], bottom[0]])
