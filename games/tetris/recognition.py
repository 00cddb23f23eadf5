"""Read a Tetris well from a camera frame, given where the well is: frame + calibration -> observation.

Pure: no I/O and no clocks.  One ``cv2.remap`` samples a small grid of points inside each cell
of the well, and of a one-cell ring around it, through the well's perspective (points away
from the cell edges, so grid lines stay out); ``cv2.resize`` with INTER_AREA averages them.
A cell is filled when its colour is far from what that same cell looked like on an empty
board (learned per cell, which cancels vignetting and fixed moire).  The ring around the well
never changes during play: it gives a per-frame gain (the camera's exposure drifting) and tells
a garbage frame or a bumped camera from a board.

Each cell is read whole (its sample points from 15% to 85% of it) or, when the calibration says
the game fills its cells (``read_middles``, learned in play by ``cell_look``), by its middle
(29% to 71%): a ghost piece's outline and the colour a blurred camera bleeds from a neighbour
stay out of the middle, the rim of a game that draws its cells as outlines does not.

Frames are uint8 H x W x 3 BGR.  Cell arrays are ``[y, x]`` with the bottom row first, like
``Board.cells``.
"""

from __future__ import annotations

from collections.abc import Sequence
import dataclasses
from dataclasses import dataclass, field

import cv2
import numpy as np

from .pieces import ORIENTATIONS, PIECE_NAMES

#: Sample points per cell side, from 15% to 85% of the cell: grid lines and most of the blur
#: from neighbouring cells stay out, the rim of outlined cells stays in.
SAMPLES_PER_SIDE = 6
_SAMPLE_AT = np.linspace(0.15, 0.85, SAMPLES_PER_SIDE)
#: A cell's middle: the inner 4 x 4 of its sample points, 29% to 71% of the cell.
_MIDDLE = slice(1, SAMPLES_PER_SIDE - 1)
#: Brightness added to the empty colour's norm before dividing: keeps dark wells from turning
#: sensor noise into large relative differences.
_DARK_FLOOR = 150.0
#: Relative colour distance above which a cell is filled; confidence is 1 at half or twice it.
FILL_THRESHOLD = 0.062
#: Confidence under which a cell counts as ambiguous (within 19% of the threshold).
AMBIGUOUS_CONFIDENCE = 0.25
#: A frame with more than this fraction of ambiguous cells is not a board.
MAX_AMBIGUOUS_FRACTION = 0.08
#: A frame whose ring around the well moved this far (relative, after gain) on more than
#: RING_CHANGED_FRACTION of its cells shows another screen, or the camera moved: a shift of
#: a tenth of a cell already does this where the well has a border.
RING_CHANGE = 0.035
RING_CHANGED_FRACTION = 0.1
#: What an observation's reason says when that happens (the calibration monitor counts these).
SURROUNDINGS_CHANGED = "surroundings of the well changed"
#: A frame whose cells and ring vary less than this fraction of what the empty board varied
#: has no picture in it (black, blank, frozen on a flat field).
MIN_CONTRAST_FRACTION = 0.25
#: A cell whose middle differs from its empty look at least this share of what the whole cell
#: does is solid.  Measured on filled cells of filmed synthetic play: flat, bevelled and glossy
#: cells 0.96-1.39, outlined and bracketed ones 0.02-0.39.
SOLID_MIDDLE = 0.7
#: More full rows than a line clear can show at once.
MAX_FULL_ROWS = 4


@dataclass(frozen=True)
class GridCalibration:
    """Where the well is in the frame and what each of its cells looks like when empty."""

    #: Outer corners of the well's cell area in frame pixels (4 x 2, TL TR BR BL), in OpenCV's
    #: pixel-centre convention.
    corners: np.ndarray
    cols: int
    rows: int
    #: Mean BGR colour of each cell of the well and of the one-cell ring around it when the
    #: board is empty: (rows + 2) x (cols + 2) x 3 float32, top row first (image order).
    empty: np.ndarray
    #: Mean BGR colour of each piece O I S Z L J T (7 x 3), when known.
    piece_colours: np.ndarray | None = None
    #: The same as ``empty`` for each cell's middle (None: not learned, cells are read whole).
    empty_middle: np.ndarray | None = None
    #: Whether cells are read by their middles (the game fills its cells) instead of whole.
    read_middles: bool = False
    #: Where each cell is sampled in the frame (derived from the corners).
    maps: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if np.asarray(self.corners).shape != (4, 2):
            raise ValueError(f"corners must be 4 x 2 (TL TR BR BL), got shape {np.asarray(self.corners).shape}")
        if self.empty.shape != (self.rows + 2, self.cols + 2, 3):
            raise ValueError(f"empty must be {(self.rows + 2, self.cols + 2, 3)}, got {self.empty.shape}")
        if self.piece_colours is not None and self.piece_colours.shape != (7, 3):
            raise ValueError(f"piece_colours must be 7 x 3 (O I S Z L J T), got {self.piece_colours.shape}")
        if self.empty_middle is not None and self.empty_middle.shape != self.empty.shape:
            raise ValueError(f"empty_middle must be {self.empty.shape} like empty, got {self.empty_middle.shape}")
        if self.read_middles and self.empty_middle is None:
            raise ValueError("read_middles needs empty_middle, the empty look of the cells' middles")
        object.__setattr__(self, "maps", _sampling_maps(self.corners, self.cols, self.rows))


@dataclass(frozen=True)
class Observation:
    """What one frame shows.  When ``valid`` is False the frame is no observation at all:
    ``reason`` says why and the cell arrays must not be used."""

    valid: bool
    reason: str
    #: Filled cells, rows x cols bool, bottom row first.
    filled: np.ndarray
    #: How sure each cell's reading is, 0..1.
    confidence: np.ndarray
    #: Mean BGR colour of each cell (whole) after gain correction, rows x cols x 3.
    colours: np.ndarray
    #: Cells whose middle differs from its empty look at least SOLID_MIDDLE as much as the whole
    #: cell does, rows x cols bool, whichever way the cells were read (None when the calibration
    #: has no middle look): what ``cell_look`` learns from.
    solid: np.ndarray | None = None


@dataclass(frozen=True)
class FallingPiece:
    """The piece in the air: its type by shape, Fahey orientation (1-based) and origin (1-based
    board x, y), and what the colour says when the calibration knows piece colours."""

    name: str
    orientation: int
    origin: tuple[int, int]
    #: Pieces whose learned colour matches the cells' colour; None without piece colours.
    colour_candidates: str | None = None

    @property
    def colour_agrees(self) -> bool | None:
        """Whether colour, the second vote, agrees with the shape (None when there is no vote)."""
        return None if self.colour_candidates is None else self.name in self.colour_candidates


def _sampling_maps(corners: np.ndarray, cols: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Fixed-point ``cv2.remap`` maps to the sample points of every cell of the well and ring,
    laid out SAMPLES_PER_SIDE pixels per cell, image order (top row first)."""
    well = np.array([[0, 0], [cols, 0], [cols, rows], [0, rows]], dtype=np.float32)  # in cells
    to_frame = cv2.getPerspectiveTransform(well, np.asarray(corners, dtype=np.float32))
    xs = (np.arange(-1, cols + 1)[:, None] + _SAMPLE_AT[None, :]).ravel()
    ys = (np.arange(-1, rows + 1)[:, None] + _SAMPLE_AT[None, :]).ravel()
    grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 1, 2)
    points = cv2.perspectiveTransform(grid, to_frame).reshape(len(ys), len(xs), 2).astype(np.float32)
    return cv2.convertMaps(points, None, cv2.CV_16SC2)


def _cell_means(frame: np.ndarray, maps: tuple[np.ndarray, np.ndarray], cols: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean colour of each cell whole and of its middle: two (rows + 2) x (cols + 2) x 3
    float32 arrays, image order."""
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"a frame must be uint8 H x W x 3, got {frame.dtype} {frame.shape}")
    samples = cv2.remap(frame, maps[0], maps[1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE).astype(np.float32)
    # INTER_AREA at an integer factor is the exact mean of each block; float keeps the fraction
    whole = cv2.resize(samples, (cols + 2, rows + 2), interpolation=cv2.INTER_AREA)
    blocks = samples.reshape(rows + 2, SAMPLES_PER_SIDE, cols + 2, SAMPLES_PER_SIDE, 3)[:, _MIDDLE, :, _MIDDLE]
    side = _MIDDLE.stop - _MIDDLE.start
    middles = np.ascontiguousarray(blocks).reshape((rows + 2) * side, (cols + 2) * side, 3)
    return whole, cv2.resize(middles, (cols + 2, rows + 2), interpolation=cv2.INTER_AREA)  # 7x faster than numpy's mean


def learn_empty(frames: Sequence[np.ndarray], corners: np.ndarray, cols: int = 10, rows: int = 20) -> GridCalibration:
    """A calibration from frames of an empty board (more frames average out sensor noise)."""
    if not frames:
        raise ValueError("learn_empty needs at least one frame of the empty board")
    if cols < 4 or rows < 4:
        raise ValueError(f"a well has at least 4 x 4 cells, got {cols} x {rows}")
    corners = np.asarray(corners, dtype=np.float32)
    looks = cell_looks(frames, corners, cols, rows)
    whole, middle = looks.mean(axis=0).astype(np.float32)
    return GridCalibration(corners=corners, cols=cols, rows=rows, empty=whole, empty_middle=middle)


def cell_looks(frames: Sequence[np.ndarray], corners: np.ndarray, cols: int, rows: int) -> np.ndarray:
    """Each frame's mean colour of every cell of the well and ring, whole and middle: frames x 2
    x (rows + 2) x (cols + 2) x 3 float32, image order."""
    maps = _sampling_maps(np.asarray(corners, dtype=np.float32), cols, rows)
    return np.array([_cell_means(f, maps, cols, rows) for f in frames], dtype=np.float32)


def learn_piece_colours(calibration: GridCalibration, samples: Sequence[tuple[np.ndarray, np.ndarray]]) -> GridCalibration:
    """The calibration with each piece's colour learned from (frame, colour ids) samples, ids
    ``[y, x]`` bottom row first, 1..7 for O I S Z L J T (0 and other ids are ignored)."""
    sums, counts = np.zeros((7, 3), dtype=np.float64), np.zeros(7, dtype=np.int64)
    for frame, ids in samples:
        if ids.shape != (calibration.rows, calibration.cols):
            raise ValueError(f"colour ids must be {calibration.rows} x {calibration.cols}, got {ids.shape}")
        colours = observe(frame, calibration).colours
        for k in range(7):
            chosen = ids == k + 1
            sums[k] += colours[chosen].sum(axis=0)
            counts[k] += int(chosen.sum())
    missing = [PIECE_NAMES[k] for k in range(7) if counts[k] == 0]
    if missing:
        raise ValueError(f"no sample cells for pieces {', '.join(missing)}")
    colours = (sums / counts[:, None]).astype(np.float32)
    return dataclasses.replace(calibration, piece_colours=colours)


def relative_distance(colours: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Colour distance (over the last axis) relative to the reference's brightness, the
    measure every "does this look empty" decision uses."""
    return np.linalg.norm(colours - reference, axis=-1) / (np.linalg.norm(reference, axis=-1) + _DARK_FLOOR)


def _invalid(reason: str, rows: int, cols: int) -> Observation:
    empty = np.zeros((rows, cols), dtype=bool)
    return Observation(False, reason, empty, np.zeros((rows, cols), dtype=np.float32), np.zeros((rows, cols, 3), np.float32))


def _confidence(ratio: np.ndarray) -> np.ndarray:
    """How sure a reading is from its measure's ratio to the threshold it is compared with:
    0 at the threshold, 1 at twice or half of it (the log2 of the ratio)."""
    return np.clip(np.abs(np.log2(np.maximum(ratio, 1e-6))), 0.0, 1.0).astype(np.float32)


def observe(frame: np.ndarray, calibration: GridCalibration) -> Observation:
    """Read every cell of the well in ``frame``; a frame that shows no board gives ``valid=False``."""
    cal = calibration
    means, middles = _cell_means(frame, cal.maps, cal.cols, cal.rows)
    if float(np.ptp(means)) < MIN_CONTRAST_FRACTION * float(np.ptp(cal.empty)):
        return _invalid("no contrast in the frame (black, blank or frozen)", cal.rows, cal.cols)
    ring = np.ones((cal.rows + 2, cal.cols + 2), dtype=bool)
    ring[1:-1, 1:-1] = False
    # per-channel gain from the ring, which play never changes: exposure and white-balance drift
    gain = np.median(means[ring] / np.maximum(cal.empty[ring], 1.0), axis=0)
    means /= np.maximum(gain, 1e-3)
    middles /= np.maximum(gain, 1e-3)
    if np.mean(relative_distance(means[ring], cal.empty[ring]) > RING_CHANGE) > RING_CHANGED_FRACTION:
        return _invalid(f"the {SURROUNDINGS_CHANGED}: not the calibrated screen, or the camera moved", cal.rows, cal.cols)
    well = means[-2:0:-1, 1:-1]  # bottom row first
    distance = relative_distance(well, cal.empty[-2:0:-1, 1:-1])
    solid = None
    if cal.empty_middle is not None:
        middle_distance = relative_distance(middles[-2:0:-1, 1:-1], cal.empty_middle[-2:0:-1, 1:-1])
        share = middle_distance / np.maximum(distance, 1e-6)
        solid = share >= SOLID_MIDDLE
    if cal.read_middles:
        filled = middle_distance > FILL_THRESHOLD
        confidence = _confidence(middle_distance / FILL_THRESHOLD)
        # a ghost piece's outline or a neighbour's colour blurred into a cell can reach its
        # middle, but stays far weaker there than at the rim: only a solid middle is filled
        confidence[filled] = np.minimum(confidence[filled], _confidence(share[filled] / SOLID_MIDDLE))
        filled &= solid
    else:
        filled = distance > FILL_THRESHOLD
        confidence = _confidence(distance / FILL_THRESHOLD)
    if np.mean(confidence < AMBIGUOUS_CONFIDENCE) > MAX_AMBIGUOUS_FRACTION:
        return _invalid("too many cells neither clearly empty nor clearly filled", cal.rows, cal.cols)
    if int(filled.all(axis=1).sum()) > MAX_FULL_ROWS:
        return _invalid(f"more than {MAX_FULL_ROWS} full rows: not a board", cal.rows, cal.cols)
    return Observation(True, "", filled, confidence, np.ascontiguousarray(well), solid)


def _normalised(cells: Sequence[tuple[int, int]]) -> frozenset[tuple[int, int]]:
    mx, my = min(x for x, _ in cells), min(y for _, y in cells)
    return frozenset((x - mx, y - my) for x, y in cells)


#: Every orientation's shape moved to the origin -> (piece, orientation, offset of the origin).
_SHAPES: dict[frozenset[tuple[int, int]], tuple[str, int, tuple[int, int]]] = {
    _normalised(offsets): (name, k + 1, (-min(x for x, _ in offsets), -min(y for _, y in offsets)))
    for name, table in ORIENTATIONS.items()
    for k, offsets in enumerate(table)
}


def _colour_candidates(colour: np.ndarray, piece_colours: np.ndarray) -> str:
    """Pieces whose learned colour is about as near as the nearest one (palettes share colours)."""
    distance = np.linalg.norm(piece_colours - colour, axis=1)
    return "".join(PIECE_NAMES[k] for k in np.flatnonzero(distance <= distance.min() * 1.25 + 8.0))


def falling_piece(observation: Observation, stack: np.ndarray, calibration: GridCalibration | None = None) -> FallingPiece | None:
    """The falling piece: the cells filled now but not in the committed ``stack`` (rows x cols,
    bottom row first), when they are exactly one tetromino and no stack cell vanished; else None.
    Colour votes only when ``calibration`` knows the piece colours; without it, shape alone."""
    if not observation.valid:
        return None
    if stack.shape != observation.filled.shape:
        raise ValueError(f"stack shape {stack.shape} differs from the observation's {observation.filled.shape}")
    stack = stack.astype(bool)
    if np.any(stack & ~observation.filled):
        return None
    ys, xs = np.nonzero(observation.filled & ~stack)
    if len(xs) != 4:
        return None
    match = _SHAPES.get(_normalised(list(zip(xs.tolist(), ys.tolist()))))
    if match is None:
        return None
    name, orientation, (ox, oy) = match
    origin = (int(xs.min()) + ox + 1, int(ys.min()) + oy + 1)
    candidates = None
    if calibration is not None and calibration.piece_colours is not None:
        candidates = _colour_candidates(observation.colours[ys, xs].mean(axis=0), calibration.piece_colours)
    return FallingPiece(name, orientation, origin, candidates)
