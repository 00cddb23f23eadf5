"""The frame's long straight edges (``calibration_lines``): found where a filmed screen's edges
really run, and told apart by whether they run towards a lattice's vanishing points."""

from __future__ import annotations

import cv2
import numpy as np

from gamerig.games.tetris.calibration_lines import StraightEdge, along_lattice, straight_edges
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

SCREEN_CORNERS = np.array([[0, 0], [639, 0], [639, 479], [0, 479]], dtype=np.float64)


def _distance_to_line(point: np.ndarray, edge: StraightEdge) -> float:
    return abs(float(edge.line[:2] @ point + edge.line[2]))


def test_the_edges_of_a_filmed_screen_are_found_where_they_run() -> None:
    """A plain bright screen filmed at an angle, with noise and blur: each of its four sides
    is found, its line within a pixel of the true side's two ends."""
    rng = np.random.default_rng(3)
    screen = np.full((480, 640, 3), 200, dtype=np.uint8)
    frame, h = film(screen, rng, CameraSettings(corner_offsets=(10, -8, -12, 6, 9, -11, -7, 5), rotation_deg=2.0,
                                                scale=0.85, noise_sigma=4.0, blur_sigma=1.0))
    gray = cv2.GaussianBlur(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY).astype(np.float32), (0, 0), 1.0)
    edges = straight_edges(gray)
    corners = map_points(h, SCREEN_CORNERS)
    for a, b in ((0, 1), (1, 2), (2, 3), (3, 0)):
        ends = corners[[a, b]]
        # the edge lies between the screen's last pixel and the dark room's first
        side = [e for e in edges if max(_distance_to_line(p, e) for p in ends) <= 1.0]
        assert side, f"no edge along the side from {ends[0].round(1)} to {ends[1].round(1)}"


def test_only_edges_running_to_a_vanishing_point_are_along_the_lattice() -> None:
    """Under a perspective, a line through the image of the lattice's column direction runs
    along its columns; the same line turned by 5 degrees does not."""
    square = np.array([[0, 0], [10, 0], [10, 20], [0, 20]], dtype=np.float32)
    quad = np.array([[200, 40], [420, 50], [440, 430], [190, 420]], dtype=np.float32)
    h = cv2.getPerspectiveTransform(square, quad)
    vanishing = h[:, 1]
    middle = np.array([100.0, 240.0])
    towards = vanishing[:2] / vanishing[2] - middle
    direction = towards / np.linalg.norm(towards)

    def edge(d: np.ndarray) -> StraightEdge:
        normal = np.array([-d[1], d[0]])
        return StraightEdge(np.array([*normal, -normal @ middle]), middle, 200.0)

    turned = np.array([[np.cos(0.087), -np.sin(0.087)], [np.sin(0.087), np.cos(0.087)]]) @ direction
    found = along_lattice(h, [edge(direction), edge(turned)])
    assert [(axis, length) for _, axis, length in found] == [(1, 200.0)]


def test_a_family_of_many_edges_along_an_axis_is_a_texture_not_the_perspective() -> None:
    """A camera's moire bands: a dozen long edges along the rows of a lattice seen head on
    (their vanishing point at infinity) tell nothing of its perspective and are all left out;
    the two columns' edges, as few as a screen's sides, are kept."""
    h = cv2.getPerspectiveTransform(np.array([[0, 0], [10, 0], [10, 20], [0, 20]], dtype=np.float32),
                                    np.array([[200, 40], [400, 40], [400, 440], [200, 440]], dtype=np.float32))
    bands = [StraightEdge(np.array([0.0, 1.0, -y]), np.array([320.0, y]), 600.0) for y in range(20, 470, 36)]
    sides = [StraightEdge(np.array([1.0, 0.0, -x]), np.array([x, 240.0]), 400.0) for x in (150.0, 450.0)]
    found = along_lattice(h, bands + sides)
    assert len(bands) > 10
    assert [(axis, length) for _, axis, length in found] == [(1, 400.0), (1, 400.0)]
