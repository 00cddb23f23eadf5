"""The marks of cells (``calibration_marks``): found on a filmed text-mode well, placed in their
cells even by a lattice a little off, not taken where they are no cells' marks, and holding the
fit of a glossy open well that only its play outlines."""

from __future__ import annotations

import cv2
import numpy as np

from gamerig.games.tetris import calibration
from gamerig.games.tetris.board import Board
from gamerig.games.tetris.calibration_marks import CellMarks
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import skin
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points
from support.filmed_play import filmed_play

SQUARE = np.array([[0, 0], [10, 0], [10, 20], [0, 20]], dtype=np.float32)
QUAD = np.array([[200, 40], [420, 50], [440, 430], [190, 420]], dtype=np.float32)  # a well under a perspective


def _to_cells(corners: np.ndarray) -> np.ndarray:
    return cv2.getPerspectiveTransform(np.asarray(corners, dtype=np.float32), SQUARE)


def _marks_at(place: tuple[float, float], cells: list[tuple[int, int]]) -> CellMarks:
    """Marks at ``place`` in each of ``cells`` of the well at QUAD."""
    points = np.array([(i + place[0], j + place[1]) for i, j in cells], dtype=np.float64)
    to_frame = cv2.getPerspectiveTransform(SQUARE, QUAD)
    return CellMarks(cv2.perspectiveTransform(points.reshape(-1, 1, 2), to_frame).reshape(-1, 2))


EVERY_CELL = [(i, j) for i in range(10) for j in range(20)]


def test_the_dots_of_a_filmed_text_mode_well_are_found_in_their_cells() -> None:
    """elektronika1986's " ." cells, filmed: the dots are found and, with the true lattice, sit
    at one place low in their cells, in nearly every empty cell."""
    rng = np.random.default_rng(11)
    cells = np.zeros((20, 10), dtype=np.uint8)
    cells[:2] = 1
    screen = render(Board(cells=cells), skin("elektronika1986"), seed=11)
    frame, h = film(screen.image, rng, CameraSettings.random(rng))
    truth = map_points(h, screen.well_corners)
    gray = cv2.GaussianBlur(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY).astype(np.float32), (0, 0), 1.0)
    found = CellMarks.still(gray).in_cells(_to_cells(truth), 10, 20)
    assert found is not None
    cell_points, _ = found
    assert len({tuple(c) for c in np.floor(cell_points).astype(int)}) >= 160  # of the 180 empty cells
    place = cell_points[0] - np.floor(cell_points[0])
    assert abs(place[0] - 0.5) < 0.1 and 0.6 < place[1] < 0.8  # a full stop sits low


def test_a_lattice_whose_top_is_off_by_more_than_half_a_cell_still_takes_in_every_mark() -> None:
    """The fit to correct has its top edge 0.6 cells too low: the marks drift through their
    cells from the bottom to the top, and each one is still given its own cell."""
    marks = _marks_at((0.55, 0.7), EVERY_CELL)
    short = QUAD.copy()
    short[:2] += 0.6 * (QUAD[3] - QUAD[0]) / 20
    found = marks.in_cells(_to_cells(short), 10, 20)
    assert found is not None
    cell_points, frame_points = found
    assert len(cell_points) == len(EVERY_CELL)
    true_cells = cv2.perspectiveTransform(frame_points.reshape(-1, 1, 2), _to_cells(QUAD)).reshape(-1, 2)
    offset = cell_points - np.floor(true_cells)  # each mark's cell the same as its true one
    assert np.ptp(np.floor(offset), axis=0).max() == 0


def test_marks_on_the_lattice_lines_or_in_few_cells_are_not_used() -> None:
    assert _marks_at((0.0, 0.02), EVERY_CELL).in_cells(_to_cells(QUAD), 10, 20) is None  # a grid's crossings
    assert _marks_at((0.5, 0.7), EVERY_CELL[:20]).in_cells(_to_cells(QUAD), 10, 20) is None
    assert CellMarks(np.zeros((0, 2))).in_cells(_to_cells(QUAD), 10, 20) is None


def test_a_lattice_that_places_a_field_of_marks_nowhere_alike_leaves_them_unplaced() -> None:
    """The score's test against lattices a text-mode well's dots drew the search to (one such
    had its top-right corner a cell and a half high, 31 px off); a hundred blobs in a quarter of
    the cells (sensor noise, a wall's edges in an empty well) are no field of marks."""
    marks = _marks_at((0.55, 0.7), EVERY_CELL)
    warped = QUAD.copy()
    warped[1, 1] -= 1.5 * (QUAD[3, 1] - QUAD[0, 1]) / 20
    assert marks.unplaced(_to_cells(warped), 10, 20)
    assert not marks.unplaced(_to_cells(QUAD), 10, 20)
    quarter = EVERY_CELL[:50]
    two_each = np.vstack([_marks_at((0.3, 0.4), quarter).points, _marks_at((0.7, 0.6), quarter).points])
    assert not CellMarks(two_each).unplaced(_to_cells(warped), 10, 20)


def _median_worst_corner_of_glossy_open_wells() -> float:
    """find_well's median worst corner (px) over gradient_open's filmed plays of seeds 500-505."""
    worst = []
    for seed in range(500, 506):
        frames, truth = filmed_play(seed, skin("gradient_open"))
        fit = calibration.find_well(frames)
        worst.append(np.inf if fit is None else float(np.linalg.norm(fit.corners - truth, axis=1).max()))
    return float(np.median(worst))


def test_the_highlights_a_falling_piece_carries_hold_a_glossy_open_wells_fit(monkeypatch) -> None:
    """gradient_open: no grid, no walls, cells with gaps whose edges lie inside their squares.
    Over frames of play the glossy highlight of every cell the T passes through is a mark;
    with them find_well's median worst corner on these scenes is 0.61 px, with the lines alone
    0.75 px (0.57 and 0.78 before ``_polished`` refitted the chosen fit from itself, which
    helps the lines alone more; 1.70 and 2.40 before the cells' own edges were fitted as such)."""
    with_marks = _median_worst_corner_of_glossy_open_wells()
    monkeypatch.setattr(calibration, "_marks", lambda frames, middle_gray: ())
    lines_alone = _median_worst_corner_of_glossy_open_wells()
    assert with_marks <= 1.0
    assert lines_alone >= 1.15 * with_marks
