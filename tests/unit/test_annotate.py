"""The annotated picture shows the lattice where the calibration puts it, the filled cells and the preview box."""

from __future__ import annotations

import numpy as np
import pytest

from gamerig.games.tetris.annotate import GRID, OUTLINE, PREVIEW, annotate
from gamerig.games.tetris.recognition import GridCalibration, Observation

# a flat grey frame with an axis-aligned 10 x 20 well of 16 px cells at (200, 60)
FRAME = np.full((480, 640, 3), 60, dtype=np.uint8)
LEFT, TOP, CELL = 200.0, 60.0, 16.0
CALIBRATION = GridCalibration(
    corners=np.array([[LEFT, TOP], [LEFT + 160, TOP], [LEFT + 160, TOP + 320], [LEFT, TOP + 320]], dtype=np.float32),
    cols=10,
    rows=20,
    empty=np.full((22, 12, 3), 60, dtype=np.float32),
)
PREVIEW_BOX = np.array([[420.0, 60.0], [500.0, 60.0], [500.0, 124.0], [420.0, 124.0]])


def _observation(filled: np.ndarray, confidence: np.ndarray | None = None) -> Observation:
    confidence = np.ones(filled.shape, np.float32) if confidence is None else confidence
    return Observation(True, "", filled, confidence, np.zeros((*filled.shape, 3), np.float32))


def _near(pixel: np.ndarray, colour: tuple[int, int, int]) -> bool:
    """Drawn in ``colour`` (anti-aliased lines through a pixel centre keep most of it)."""
    return int(np.abs(pixel.astype(int) - colour).max()) <= 30


def _frame_part(image: np.ndarray) -> np.ndarray:
    """The annotated frame without the legend strip above it."""
    return image[image.shape[0] - FRAME.shape[0] :]


def _cell_centre(x: int, y: int) -> tuple[int, int]:
    """Pixel (row, column) at the centre of 0-based cell x, y counted from the bottom."""
    return int(TOP + (19 - y + 0.5) * CELL), int(LEFT + (x + 0.5) * CELL)


def test_the_lattice_and_outline_are_drawn_through_the_corners_and_nothing_else_changes():
    image = _frame_part(annotate(FRAME, CALIBRATION))
    assert image.shape == FRAME.shape
    assert _near(image[int(TOP + 150), int(LEFT + 3 * CELL)], GRID)  # on the 3rd vertical line
    assert _near(image[int(TOP + 5 * CELL), int(LEFT + 100)], GRID)  # on the 5th horizontal line
    assert _near(image[int(TOP + 150), int(LEFT)], OUTLINE)
    assert tuple(image[_cell_centre(4, 10)]) == (60, 60, 60)  # the middle of a cell is the frame's
    untouched = np.ones(FRAME.shape[:2], bool)
    untouched[int(TOP) - 2 : int(TOP + 320) + 3, int(LEFT) - 2 : int(LEFT + 160) + 3] = False
    assert np.array_equal(image[untouched], FRAME[untouched])


def test_filled_cells_get_a_dot_green_when_sure_red_when_not_and_unsure_empty_cells_a_ring():
    filled = np.zeros((20, 10), bool)
    filled[0, 0] = filled[0, 9] = True
    confidence = np.ones((20, 10), np.float32)
    confidence[0, 9] = 0.0
    confidence[5, 5] = 0.1  # empty but unsure
    image = _frame_part(annotate(FRAME, CALIBRATION, _observation(filled, confidence)))
    assert tuple(image[_cell_centre(0, 0)]) == (0, 255, 0)
    assert tuple(image[_cell_centre(9, 0)]) == (0, 0, 255)
    assert tuple(image[_cell_centre(4, 0)]) == (60, 60, 60)
    row, col = _cell_centre(5, 5)
    assert tuple(image[row, col]) == (60, 60, 60)  # a ring: the centre stays, the rim is drawn
    assert np.any(image[row - 5 : row + 6, col - 5 : col + 6] != 60)


def test_the_preview_box_is_outlined_and_an_invalid_observation_marks_no_cells():
    invalid = Observation(False, "no contrast", np.ones((20, 10), bool), np.ones((20, 10), np.float32), np.zeros((20, 10, 3), np.float32))
    image = _frame_part(annotate(FRAME, CALIBRATION, invalid, PREVIEW_BOX))
    assert _near(image[90, 420], PREVIEW)
    assert tuple(image[_cell_centre(0, 0)]) == (60, 60, 60)


def test_the_legend_is_a_strip_above_the_frame_and_the_input_is_not_changed():
    before = FRAME.copy()
    image = annotate(FRAME, CALIBRATION, note="score 0.62")
    assert image.shape[1:] == FRAME.shape[1:] and image.shape[0] > FRAME.shape[0]
    strip = image[: image.shape[0] - FRAME.shape[0]]
    assert strip.max() == 255  # text was written
    assert np.array_equal(FRAME, before)


def test_a_frame_that_is_not_colour_uint8_is_refused():
    with pytest.raises(ValueError, match="uint8 H x W x 3"):
        annotate(FRAME[:, :, 0], CALIBRATION)
