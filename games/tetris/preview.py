"""Find the next-piece preview box beside a calibrated well and read the piece shown in it.

Pure: numpy and OpenCV, no I/O, no clocks.  Frames are uint8 H x W x 3 BGR; corners are 4 x 2
(TL TR BR BL) in OpenCV's pixel-centre convention, like ``recognition.GridCalibration``.

Reading (``read_preview``, every frame).  One ``cv2.remap`` samples the box at twice a small
canonical size (40 pixels across) through its perspective and ``cv2.resize`` (INTER_AREA)
averages that down.  Per-row gains read off the box's left and right edges, where no piece is
ever drawn, cancel exposure drift and a rolling shutter's flicker bands; then each pixel's
colour distance from the box's empty look says ink or fill.  The piece is named by its shape
alone: the ink's bounding box must measure a whole tetromino at the piece cell pitch learned
at calibration (the preview may draw smaller cells than the well, or centre pieces at
half-cell offsets, so neither the well's pitch nor a grid is assumed), and cutting that box
into the tetromino's cells must give clearly inked cells exactly where the tetromino has them
and clearly blank cells elsewhere.  Every orientation of every piece is a template, so a game
that shows the next piece in another orientation is read too.  Anything else, an empty box,
a box whose edge changed (another screen, a bumped camera), two matches, ink that does not
measure a piece (a half-drawn box), gives no piece and a reason: the reader never guesses.

Learning (``learn_preview``).  The preview is almost never empty, so its empty look is the
mean of frames on the box's edge ring, and inside it a smooth (bilinear) fit of that ring:
the fill of every known game is one colour up to vignetting and gradients.  The ink threshold
sits between the fill's noise and the pieces' contrast; the pitch is the median of the pieces
read.  A textured or picture fill would show as ink and read as no piece (not a wrong one).

Finding (``find_preview``).  The box is what changes between frames of play outside the well.
It takes a dozen frames with different next pieces, rectifies the screen around the well
through the well's own perspective (the screen is a plane), evens out each pixel row's gain
(flicker, exposure), and takes each blob of change of roughly 1-7 x 1-6 well cells as a
candidate.  The pieces are drawn centred in the box, so the blob's centre is the box's centre
and its height is two piece cells.  Where colour steps frame the pieces in symmetric pairs
across and down (a border, or a fill unlike the background), their inner edges are the box;
where nothing does, the box is 5 x 3 piece cells around the centre, the smallest box holding
every spawn shape with half a cell to spare.  A candidate is the preview only if
``learn_preview`` on it reads a piece in most frames and at least two different pieces;
counters (score, lines) change too but do not read as several tetrominoes.

Measured state (filmed synthetic play, each scene one skin and one ``CameraSettings.random``
camera: 12 frames with random next pieces, random stacks, a falling piece and changing
counters for ``find_preview`` and ``learn_preview`` on the corners found, then 40 fresh frames
read; two seeds, 20 scenes per skin):

* ``find_preview``: 159 of 160 boxes within 3 px of the truth (median under 0.5 px, worst of
  the rest 1.1 px); the miss is a box the camera cut at the frame's top edge (4.6 px off,
  still read right).  Held-out skins alone: handheld 20/20, pastel 20/20.  All 60 scenes of
  skins without a preview (green_screen, gradient_open, held-out neon) give None.  Given
  well corners each off by up to 3 px (as ``find_well`` may leave them): 40 of 40 boxes
  within 3 px (worst 2.4 px, the borderless one).
* ``read_preview``: 6400 of 6400 frames named right, 0 wrong, 0 unread (held out: handheld
  800/800, pastel 800/800).  Under a rolling shutter's flicker (new phase every frame) and
  +-10% exposure drift: 32 of 32 boxes found, 896/896 read right.  A black, grey, noise,
  empty or half-drawn box gives None; a camera moved by 2-9 px gives None or the right piece.
* Corners off by up to 3 px (random per corner): 0 wrong of 960 reads, 8 unread; at 5 px
  ``learn_preview`` refuses some boxes (ValueError) and reads stay right or None.
* Speed: ``read_preview`` about 0.09 ms per 640 x 480 frame on one core (timeit); thread CPU
  time p50 0.13 ms, p99 0.37 ms while the machine's two cores were shared with other jobs.
  ``find_preview`` takes about 0.3 s for 12 frames, ``learn_preview`` a few ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from .pieces import ORIENTATIONS
from .recognition import relative_distance

#: Canonical image width in pixels; the height follows the box's aspect.  A 5-cell box gets
#: 8 pixels per cell: enough for a cell's shape, few enough to read in well under 0.2 ms.
CANONICAL_WIDTH = 40
#: Remap samples per canonical pixel side, averaged by INTER_AREA (thin strokes survive).
_SUPERSAMPLE = 2
#: Canonical pixels along the box's edge that no piece reaches (pieces keep half a cell away).
RING_PX = 2
#: Added to both sides of a gain ratio so a black box gives a gain near 1, not noise over noise.
_GAIN_FLOOR = 30.0
#: Canonical rows over which the gain is averaged: flicker bands are wider, sensor noise is not.
_GAIN_ROWS = 5
#: A box whose edge moved this far (mean relative distance, after gain) is not the calibrated one.
RING_CHANGE = 0.08
#: Gains beyond these bounds mean the picture is not the calibrated screen (black, blown out).
GAIN_RANGE = (0.5, 2.0)
#: Ink ends where its distance falls below this fraction of the ink's mean distance: the
#: middle of a blurred edge.
_EDGE_LEVEL = 0.5
#: A row or column of the ink mask counts when it holds at least this fraction of a piece cell.
_LINE_FRACTION = 0.15
#: Bounding box sides may miss a whole number of learned piece cells by this fraction of a cell.
PITCH_TOLERANCE = 0.25
#: Fraction of a cell's size left out on each side when measuring how much of it is inked.
_CELL_TRIM = 0.125
#: Inked fraction of a cell above which the cell is filled, and below which it is blank.
#: (Glyph-like cells, "[]" or outlines, ink 25-60% of a cell; solid ones all of it.)
FILLED_OCCUPANCY = 0.2
BLANK_OCCUPANCY = 0.1


@dataclass(frozen=True)
class PreviewCalibration:
    """Where the preview box is and what it looks like with no piece in it."""

    #: Box interior corners in frame pixels (4 x 2 float32, TL TR BR BL).
    corners: np.ndarray
    #: The empty box as the canonical image (h x CANONICAL_WIDTH x 3 float32 BGR): the learned
    #: edge ring per pixel and a smooth fit of it inside.
    empty: np.ndarray
    #: Size of one piece cell in canonical pixels, as the pieces in the box measured.
    pitch: float
    #: Relative colour distance from the empty look above which a canonical pixel is ink.
    threshold: float
    #: ``cv2.remap`` maps of the canonical samples (derived from the corners and empty's shape).
    maps: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False, compare=False)
    #: Derived: the ring as a uint8 mask, 0.5 / ``_sides`` of the empty box (for the gains),
    #: and per canonical pixel the factor that turns a colour distance into
    #: ``recognition.relative_distance``.
    ring: np.ndarray = field(init=False, repr=False, compare=False)
    halved_inverse_sides: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False, compare=False)
    inverse_norm: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        corners = np.asarray(self.corners)
        if corners.shape != (4, 2) or not np.all(np.isfinite(corners)):
            raise ValueError(f"corners must be 4 x 2 finite numbers (TL TR BR BL), got shape {corners.shape}")
        empty = np.asarray(self.empty)
        if empty.ndim != 3 or empty.shape[1] != CANONICAL_WIDTH or empty.shape[2] != 3 or empty.shape[0] < _MIN_HEIGHT:
            raise ValueError(f"empty must be h x {CANONICAL_WIDTH} x 3 with h >= {_MIN_HEIGHT}, got {empty.shape}")
        if not (np.isfinite(self.pitch) and self.pitch > 0 and np.isfinite(self.threshold) and self.threshold > 0):
            raise ValueError(f"pitch and threshold must be positive, got {self.pitch} and {self.threshold}")
        object.__setattr__(self, "corners", corners.astype(np.float32))
        object.__setattr__(self, "empty", np.ascontiguousarray(empty, dtype=np.float32))
        object.__setattr__(self, "maps", _sampling_maps(self.corners, empty.shape[0]))
        ring = _ring_mask(empty.shape[0])
        object.__setattr__(self, "ring", ring)
        object.__setattr__(self, "halved_inverse_sides", tuple(0.5 / side for side in _sides(self.empty)))
        # recognition's relative distance of a unit step from the empty colour: the factor
        # that turns a colour distance into that measure
        unit_step = self.empty + np.array([1.0, 0.0, 0.0], dtype=np.float32)
        object.__setattr__(self, "inverse_norm", relative_distance(unit_step, self.empty).astype(np.float32))


@dataclass(frozen=True)
class PreviewReading:
    """The next piece shown in the box, or None with the reason it could not be named."""

    #: A piece letter (one of ``pieces.PIECE_NAMES``), or None: no reading.
    piece: str | None
    #: 0..1: how clearly the inked and blank cells separate (0 when ``piece`` is None).
    confidence: float
    reason: str = ""


#: The smallest canonical height: a ring on both sides and room for a piece between.
_MIN_HEIGHT = 2 * RING_PX + 4


def _canonical_height(corners: np.ndarray) -> int:
    c = np.asarray(corners, dtype=np.float64)
    width = np.linalg.norm(c[1] - c[0]) + np.linalg.norm(c[2] - c[3])
    height = np.linalg.norm(c[3] - c[0]) + np.linalg.norm(c[2] - c[1])
    return max(_MIN_HEIGHT, int(round(CANONICAL_WIDTH * height / max(width, 1e-6))))


def _sampling_maps(corners: np.ndarray, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Fixed-point remap maps to the sample grid (_SUPERSAMPLE^2 per canonical pixel) of the box."""
    w, h = _SUPERSAMPLE * CANONICAL_WIDTH, _SUPERSAMPLE * height
    grid_edges = np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32)
    to_frame = cv2.getPerspectiveTransform(grid_edges, np.asarray(corners, dtype=np.float32))
    xs, ys = np.meshgrid(np.arange(w, dtype=np.float32) + 0.5, np.arange(h, dtype=np.float32) + 0.5)
    points = cv2.perspectiveTransform(np.stack([xs, ys], axis=-1).reshape(-1, 1, 2), to_frame)
    return cv2.convertMaps(points.reshape(h, w, 2).astype(np.float32), None, cv2.CV_16SC2)


def _canonical(frame: np.ndarray, maps: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"a frame must be uint8 H x W x 3, got {frame.dtype} {frame.shape}")
    samples = cv2.remap(frame, maps[0], maps[1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    h, w = samples.shape[:2]
    small = cv2.resize(samples, (w // _SUPERSAMPLE, h // _SUPERSAMPLE), interpolation=cv2.INTER_AREA)
    return small.astype(np.float32)


def _ring_mask(height: int) -> np.ndarray:
    """The canonical pixels within RING_PX of the box's edge, as a uint8 mask for OpenCV."""
    ring = np.ones((height, CANONICAL_WIDTH), dtype=np.uint8)
    ring[RING_PX:-RING_PX, RING_PX:-RING_PX] = 0
    return ring


def _smooth_fill(mean: np.ndarray) -> np.ndarray:
    """The empty box from the mean of frames: the ring as it is, inside it a bilinear fit of the
    ring's innermost pixels (vignetting and gradients shade a fill smoothly; the outer pixels
    carry the border's blur, and pieces cover the inside)."""
    height = mean.shape[0]
    ys, xs = np.mgrid[0:height, 0:CANONICAL_WIDTH].astype(np.float64)
    xs, ys = xs / CANONICAL_WIDTH - 0.5, ys / height - 0.5
    design = np.stack([np.ones_like(xs), xs, ys, xs * ys], axis=-1)
    inner = np.zeros((height, CANONICAL_WIDTH), dtype=bool)
    k = RING_PX - 1
    inner[k, k:-k], inner[-k - 1, k:-k], inner[k:-k, k], inner[k:-k, -k - 1] = True, True, True, True
    points, colours = design[inner], mean[inner].astype(np.float64)
    coefficients, *_ = np.linalg.lstsq(points, colours, rcond=None)
    # refit without the pixels the fit misses most: where corners a few pixels off put the
    # box's border on that line
    residual = np.linalg.norm(points @ coefficients - colours, axis=1)
    kept = residual <= 3 * np.median(residual) + 2.0
    coefficients, *_ = np.linalg.lstsq(points[kept], colours[kept], rcond=None)
    empty = (design @ coefficients).astype(np.float32)
    ring = _ring_mask(height).astype(bool)
    empty[ring] = mean[ring]
    return empty


def _as_frames(frames: Sequence[np.ndarray] | np.ndarray) -> list[np.ndarray]:
    if isinstance(frames, np.ndarray) and frames.ndim == 3:
        return [frames]
    frames = list(frames)
    if not frames:
        raise ValueError("need at least one frame")
    return frames


_CHANNEL_SUM = np.ones((1, 3), dtype=np.float32)


def _sides(canonical: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean colour of each row's left and right ring pixels plus _GAIN_FLOOR (rows x 1 x 3 each)."""
    left = cv2.reduce(canonical[:, :RING_PX], 1, cv2.REDUCE_AVG)
    right = cv2.reduce(canonical[:, -RING_PX:], 1, cv2.REDUCE_AVG)
    return left.reshape(-1, 1, 3) + _GAIN_FLOOR, right.reshape(-1, 1, 3) + _GAIN_FLOOR


def _row_gains(canonical: np.ndarray, halved_inverse_sides: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per-row, per-channel gain (rows x 1 x 3) of ``canonical`` over the empty box, given
    0.5 / ``_sides`` of the empty box: exposure drift, white balance and a rolling shutter's
    flicker bands, read off the box's left and right edges where no piece is ever drawn."""
    left, right = _sides(canonical)
    gains = left * halved_inverse_sides[0] + right * halved_inverse_sides[1]
    return cv2.blur(gains, (1, _GAIN_ROWS), borderType=cv2.BORDER_REPLICATE).reshape(-1, 1, 3)


def _ink(canonical: np.ndarray, cal: PreviewCalibration) -> tuple[np.ndarray | None, str]:
    """The ink mask inside the ring after the gains the box's edges show, or None and why."""
    gains = _row_gains(canonical, cal.halved_inverse_sides)
    if float(gains.min()) < GAIN_RANGE[0] or float(gains.max()) > GAIN_RANGE[1]:
        return None, f"the box is far darker or brighter than calibrated (gains {gains.min():.2f} to {gains.max():.2f})"
    difference = cv2.subtract(canonical / gains, cal.empty)
    distance = cv2.sqrt(cv2.transform(cv2.multiply(difference, difference), _CHANNEL_SUM)) * cal.inverse_norm
    if cv2.mean(distance, mask=cal.ring)[0] > RING_CHANGE:
        return None, "the box's edge changed: not the calibrated screen, or the camera moved"
    inside = distance[RING_PX:-RING_PX, RING_PX:-RING_PX]
    ink = inside > cal.threshold
    if not ink.any():
        return ink, ""
    # cut the blur's ramps at half the piece's own contrast, so the ink ends where the piece does
    return inside > max(cal.threshold, _EDGE_LEVEL * cv2.mean(inside, mask=ink.view(np.uint8))[0]), ""


@dataclass(frozen=True)
class _Template:
    """One orientation of a piece on its columns x rows grid: flat indices (row-major, top row
    first) of the cells it fills and of those it leaves blank."""

    piece: str
    filled: tuple[int, ...]
    blank: tuple[int, ...]


def _templates() -> dict[tuple[int, int], list[_Template]]:
    """Every distinct shape of every piece, grouped by its grid (columns, rows)."""
    grids: dict[tuple[int, int], list[_Template]] = {}
    for name, table in ORIENTATIONS.items():
        for offsets in table:
            xs, ys = [x for x, _ in offsets], [y for _, y in offsets]
            columns, rows = max(xs) - min(xs) + 1, max(ys) - min(ys) + 1
            filled = {(max(ys) - y) * columns + x - min(xs) for x, y in offsets}  # y points up
            blank = set(range(columns * rows)) - filled
            grids.setdefault((columns, rows), []).append(_Template(name, tuple(sorted(filled)), tuple(sorted(blank))))
    return grids


_TEMPLATES = _templates()


@dataclass(frozen=True)
class _Match:
    piece: str | None
    confidence: float
    reason: str
    #: Piece cell size this bounding box implies (canonical pixels).
    pitch: float = 0.0


def _occupancy(integral: np.ndarray, x0: int, y0: int, width: int, height: int, columns: int, rows: int) -> list[float]:
    """Inked fraction of each of the columns x rows equal cells of the bounding box, row-major,
    from the mask's integral image.  Each cell is trimmed by _CELL_TRIM of its size on every
    side: the pixel row a cell boundary falls in belongs to neither cell."""
    cell_w, cell_h = width / columns, height / rows
    xs = [(x0 + round((c + _CELL_TRIM) * cell_w), x0 + round((c + 1 - _CELL_TRIM) * cell_w)) for c in range(columns)]
    ys = [(y0 + round((r + _CELL_TRIM) * cell_h), y0 + round((r + 1 - _CELL_TRIM) * cell_h)) for r in range(rows)]
    table = integral.item
    return [
        (table(b, r) - table(t, r) - table(b, l) + table(t, l)) / max(1, (b - t) * (r - l))
        for t, b in ys
        for l, r in xs
    ]


def _match(mask: np.ndarray, pitch: float | None) -> _Match:
    """Name the tetromino the ink shows (``pitch`` None: any size, for learning the pitch)."""
    integral = cv2.integral(mask.view(np.uint8))
    line = max(1, round(_LINE_FRACTION * (pitch if pitch is not None else mask.shape[0] / 3)))
    cols_hit = np.flatnonzero(integral[-1, 1:] - integral[-1, :-1] >= line)
    rows_hit = np.flatnonzero(integral[1:, -1] - integral[:-1, -1] >= line)
    if len(cols_hit) == 0 or len(rows_hit) == 0:
        return _Match(None, 0.0, "the box is empty")
    x0, y0 = int(cols_hit[0]), int(rows_hit[0])
    width, height = int(cols_hit[-1]) - x0 + 1, int(rows_hit[-1]) - y0 + 1
    found: list[_Match] = []
    for (columns, rows), templates in _TEMPLATES.items():
        if pitch is not None:
            tolerance = PITCH_TOLERANCE * pitch + 1.0
            if abs(width - columns * pitch) > tolerance or abs(height - rows * pitch) > tolerance:
                continue
        elif not 0.75 < (width / columns) / (height / rows) < 1.33:
            continue
        occupancy = _occupancy(integral, x0, y0, width, height, columns, rows)
        for t in templates:
            lowest_filled = min(occupancy[k] for k in t.filled)
            highest_blank = max((occupancy[k] for k in t.blank), default=0.0)
            if lowest_filled >= FILLED_OCCUPANCY and highest_blank <= BLANK_OCCUPANCY:
                confidence = min(1.0, (lowest_filled - highest_blank) / (2 * FILLED_OCCUPANCY))
                found.append(_Match(t.piece, confidence, "", (width / columns + height / rows) / 2))
    if not found:
        return _Match(None, 0.0, f"the ink ({width} x {height} px) is no tetromino at the calibrated pitch")
    if len(found) > 1:
        return _Match(None, 0.0, f"the ink matches several pieces ({''.join(m.piece or '' for m in found)})")
    return found[0]


def read_preview(frame: np.ndarray, calibration: PreviewCalibration) -> PreviewReading:
    """The next piece shown in ``frame``'s preview box, or None with a reason (never a guess)."""
    mask, reason = _ink(_canonical(frame, calibration.maps), calibration)
    if mask is None:
        return PreviewReading(None, 0.0, reason)
    match = _match(mask, calibration.pitch)
    return PreviewReading(match.piece, match.confidence, match.reason)


def learn_preview(frames: Sequence[np.ndarray] | np.ndarray, corners: np.ndarray) -> PreviewCalibration:
    """Learn the empty look, the ink threshold and the piece pitch of the box at ``corners``
    from one or more frames of play (each showing some next piece; different pieces help).

    Raises ValueError when the pieces do not stand out from the box or no frame shows a
    readable piece.
    """
    shots = _as_frames(frames)
    corners = np.asarray(corners, dtype=np.float32)
    if corners.shape != (4, 2):
        raise ValueError(f"corners must be 4 x 2 (TL TR BR BL), got shape {corners.shape}")
    maps = _sampling_maps(corners, _canonical_height(corners))
    canonical = np.stack([_canonical(f, maps) for f in shots])
    halved_inverse_sides = tuple(0.5 / side for side in _sides(canonical.mean(axis=0)))
    canonical = np.stack([c / _row_gains(c, halved_inverse_sides) for c in canonical])
    empty = _smooth_fill(canonical.mean(axis=0))
    distances = np.stack([relative_distance(c, empty) for c in canonical])
    inside = distances[:, RING_PX:-RING_PX, RING_PX:-RING_PX]
    # the fill's noise: the ring's tail, and inside, where pieces cover about a third at most, the
    # fill's upper part (moire and shading the smooth empty look leaves, show there)
    noise = max(float(np.percentile(distances[:, _ring_mask(empty.shape[0]).astype(bool)], 99)), float(np.percentile(inside, 60)))
    contrast = float(np.percentile(inside, 98))
    if contrast < 4 * noise:
        raise ValueError(f"nothing stands out in the box (contrast {contrast:.3f}, noise {noise:.3f}): no piece shown, or wrong corners")
    # half way (geometrically) between noise and ink, clear of both
    threshold = max(2 * noise, float(np.sqrt(noise * contrast)))
    unsized = PreviewCalibration(corners=corners, empty=empty, pitch=1.0, threshold=threshold)
    pitches = []
    for c in canonical:
        mask, _ = _ink(c, unsized)
        match = _match(mask, None) if mask is not None else None
        if match is not None and match.piece is not None:
            pitches.append(match.pitch)
    if not pitches:
        raise ValueError("no frame shows a readable piece in the box")
    return PreviewCalibration(corners=corners, empty=empty, pitch=float(np.median(pitches)), threshold=threshold)


#: Well cells searched beside the well (each side), above it and below it for the box.
_SEARCH_CELLS = (12, 6, 2)
#: Temporal change (levels) a pixel needs to count as changing, at least, and in multiples of
#: the typical pixel's (sensor noise, compression).
_MIN_CHANGE = 24.0
_CHANGE_OVER_NOISE = 5.0
#: Extra change needed per level of the mean image's gradient (levels per pixel) there.
_CHANGE_PER_SLOPE = 0.25
#: Size range (well cells) of the area the pieces in a preview sweep over.
_BLOB_CELLS = ((1.0, 7.0), (0.7, 6.0))
#: Rows and columns of a change blob with less than this fraction of its busiest one's
#: changing pixels are strays, not part of the pieces' sweep.
_STRAY_FRACTION = 0.15
#: Candidates tried, most change first.
_CANDIDATES = 4
#: Box edges are looked for up to this many piece cells beyond the pieces, in pairs either
#: side of them.  A pair's weaker step (summed over B, G, R) must reach _MIN_EDGE_STEP and
#: _EDGE_OVER_NOISE times the lower quartile of the steps there (the profile's noise and
#: moire: a washed-out thin border still stands clear of it), and half the best pair's.
_BORDER_REACH = 3.0
_MIN_EDGE_STEP = 8.0
_EDGE_OVER_NOISE = 4.0
#: Pixels averaged on each side of a step, in piece cells (borders are a fifth of a cell or more).
_EDGE_SPAN = 0.12
#: Without a border, the box is this many piece cells around the pieces' centre.
_BORDERLESS_CELLS = (5.0, 3.0)
#: Preview cells within this fraction of the well's pitch are taken to be the well's size.
_SAME_PITCH = 0.2
#: The preview reads a piece in at least this fraction of the frames.
_MIN_READ_FRACTION = 0.6


@dataclass(frozen=True)
class _Canvas:
    """The screen around the well rectified through the well's perspective: ``scale`` canvas
    pixels per well cell, canvas pixel (0, 0) centred at cell coordinates ``origin`` + 0.5 / scale."""

    to_frame: np.ndarray  # 3 x 3, canvas pixel -> frame pixel
    size: tuple[int, int]  # width, height
    scale: int
    origin: tuple[float, float]

    def frame_points(self, canvas_points: np.ndarray) -> np.ndarray:
        pts = np.asarray(canvas_points, dtype=np.float64).reshape(-1, 1, 2)
        return cv2.perspectiveTransform(pts, self.to_frame).reshape(-1, 2)


def _canvas(well_corners: np.ndarray, cols: int, rows: int) -> _Canvas:
    c = well_corners.astype(np.float64)
    pitch = (np.linalg.norm(c[1] - c[0]) + np.linalg.norm(c[2] - c[3])) / (2 * cols)
    pitch = (pitch + (np.linalg.norm(c[3] - c[0]) + np.linalg.norm(c[2] - c[1])) / (2 * rows)) / 2
    scale = max(4, int(round(pitch)))
    side, above, below = _SEARCH_CELLS
    cells = np.array([[0, 0], [cols, 0], [cols, rows], [0, rows]], dtype=np.float32)
    cells_to_frame = cv2.getPerspectiveTransform(cells, well_corners.astype(np.float32)).astype(np.float64)
    canvas_to_cells = np.array([[1 / scale, 0, 0.5 / scale - side], [0, 1 / scale, 0.5 / scale - above], [0, 0, 1]])
    size = ((cols + 2 * side) * scale, (rows + above + below) * scale)
    return _Canvas(cells_to_frame @ canvas_to_cells, size, scale, (-float(side), -float(above)))


def _steps(profile: np.ndarray, span: int) -> np.ndarray:
    """Colour step (summed over B, G, R) between each pixel of ``profile`` (n x 3) and the
    next, as the difference of the means of ``span`` pixels on either side: fine moire along
    the profile averages out, a border as thick as ``span`` does not.  Entry i lies at i + 0.5."""
    sums = np.vstack([np.zeros((1, 3)), np.cumsum(profile, axis=0)])
    at = np.arange(span - 1, len(profile) - span)
    steps = np.zeros(len(profile) - 1)
    steps[at] = np.abs(sums[at + 1 + span] - 2 * sums[at + 1] + sums[at + 1 - span]).sum(axis=1) / span
    return steps


def _peak(steps: np.ndarray, near: int) -> float:
    """Sub-pixel position of the step peak reached by climbing from index ``near``."""
    i = near
    while True:
        higher = max((j for j in (i - 1, i + 1) if 0 <= j < len(steps)), key=lambda j: steps[j])
        if steps[higher] <= steps[i]:
            break
        i = higher
    a, b = steps[max(i - 1, 0)], steps[min(i + 1, len(steps) - 1)]
    curvature = a - 2 * steps[i] + b
    return i + 0.5 + (float(np.clip(0.5 * (a - b) / curvature, -0.5, 0.5)) if curvature < 0 else 0.0)


def _edge_pair(profile: np.ndarray, centre: float, inner: float, reach: float, span: int) -> tuple[float, float] | None:
    """The innermost pair of strong colour steps at the same distance (within a pixel) either
    side of ``centre``, between ``inner`` and ``inner + reach`` pixels from it: the box's
    edges, which frame the centred pieces.  A wall, a screen edge or moire on one side only
    makes no pair.  Returns their sub-pixel positions, or None."""
    steps = _steps(profile, span)
    distances = np.arange(int(np.ceil(inner)), int(inner + reach) + 1)
    lefts = np.round(centre - distances - 0.5).astype(int)
    rights = np.round(centre + distances - 0.5).astype(int)
    if lefts[-1] < 2 or rights[-1] > len(steps) - 3:
        keep = (lefts >= 2) & (rights <= len(steps) - 3)
        lefts, rights = lefts[keep], rights[keep]
        if len(lefts) < 3:
            return None
    padded = np.maximum(np.maximum(steps[:-2], steps[1:-1]), steps[2:])  # padded[i - 1]: max near i
    pair = np.minimum(padded[lefts - 1], padded[rights - 1])
    window = np.concatenate([steps[lefts[-1] : lefts[0] + 1], steps[rights[0] : rights[-1] + 1]])
    strong = pair >= max(_MIN_EDGE_STEP, _EDGE_OVER_NOISE * float(np.percentile(window, 25)))
    if not strong.any():
        return None
    # the inner edge of a border comes before its outer edge, which pairs up as well
    first = int(np.flatnonzero(strong & (pair >= 0.5 * pair[strong].max()))[0])
    return _peak(steps, int(lefts[first])), _peak(steps, int(rights[first]))


def _box_around(mean: np.ndarray, blob: tuple[int, int, int, int], well_scale: int) -> tuple[np.ndarray, bool]:
    """The box (left, top, right, bottom canvas coordinates of its inner edges) around the area
    ``blob`` (x0, y0, x1, y1 inclusive) the pieces sweep: pairs of edges framing the pieces
    across and down (True: bordered), else the borderless box (False)."""
    x0, y0, x1, y1 = blob
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    width, height = x1 - x0 + 1, y1 - y0 + 1
    pitch = height if width >= 3 * height else height / 2  # only I pieces seen: one cell high
    if abs(pitch - well_scale) <= _SAME_PITCH * well_scale:
        pitch = float(well_scale)
    gap, reach, span = 0.2 * pitch, _BORDER_REACH * pitch, max(1, round(_EDGE_SPAN * pitch))
    # profiles averaged across the whole sweep: noise and slanted moire average out
    across = _edge_pair(mean[y0 : y1 + 1].mean(axis=0), cx, width / 2 + gap, reach, span)
    down = _edge_pair(mean[:, x0 : x1 + 1].mean(axis=1), cy, height / 2 + gap, reach, span)
    if across is not None and down is not None:
        return np.array([across[0], down[0], across[1], down[1]]), True
    half_w, half_h = _BORDERLESS_CELLS[0] * pitch / 2, _BORDERLESS_CELLS[1] * pitch / 2
    return np.array([cx - half_w, cy - half_h, cx + half_w, cy + half_h]), False


def _pieces_offset(shots: list[np.ndarray], calibration: PreviewCalibration) -> tuple[float, float] | None:
    """How far (canonical pixels, x and y) the centre of the pieces read in ``shots`` lies from
    the box's centre: the median over the frames read of their ink's bounding box centre.  None
    if no frame reads a piece."""
    offsets = []
    for shot in shots:
        mask, _ = _ink(_canonical(shot, calibration.maps), calibration)
        if mask is None or _match(mask, calibration.pitch).piece is None:
            continue
        ys, xs = np.nonzero(mask)
        offsets.append(((xs.min() + xs.max() + 1 - mask.shape[1]) / 2, (ys.min() + ys.max() + 1 - mask.shape[0]) / 2))
    return None if not offsets else (float(np.median([x for x, _ in offsets])), float(np.median([y for _, y in offsets])))


def _centred_on_pieces(shots: list[np.ndarray], box: np.ndarray, calibration: PreviewCalibration) -> np.ndarray:
    """A borderless ``box`` (canvas left, top, right, bottom) moved to centre the pieces read in
    it, which the game draws centred.  The box was centred on the change the pieces make, and a
    cell every piece seen fills makes none: J, T and Z share one, and a calibration that saw
    only those put the box half a cell aside, where an I, never seen, did not fit (a level-10
    run read no I in the preview)."""
    offset = _pieces_offset(shots, calibration)
    if offset is None:
        return box
    height = calibration.empty.shape[0]
    left, top, right, bottom = box
    dx = offset[0] * (right - left) / CANONICAL_WIDTH
    dy = offset[1] * (bottom - top) / height
    return box + np.array([dx, dy, dx, dy])


def _steady_rows(frames: list[np.ndarray]) -> list[np.ndarray]:
    """The frames (as float32) with each pixel row scaled to that row's brightness over all
    frames: a rolling shutter's flicker bands and exposure drift change whole rows, which
    would otherwise look like change everywhere.  A row's gain in a frame is the median over
    the row of each pixel's brightness there over its median in all frames: static pixels,
    most of a row, all agree on it."""
    for frame in frames:
        if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3 or frame.shape != frames[0].shape:
            raise ValueError(f"frames must be uint8 H x W x 3 of one size, got {frame.dtype} {frame.shape}")
    # every fourth column is plenty for a median and four times cheaper
    brightness = np.stack([f[:, ::4].sum(axis=2, dtype=np.float32) for f in frames]) + _GAIN_FLOOR
    gains = np.median(brightness / np.median(brightness, axis=0), axis=2)  # frames x rows
    return [f.astype(np.float32) / g[:, None, None] for f, g in zip(frames, gains)]


def _change_blobs(canvases: np.ndarray, mean: np.ndarray, canvas: _Canvas, cols: int, rows: int) -> list[tuple[int, int, int, int]]:
    """Bounding boxes (x0, y0, x1, y1 canvas pixels) of the areas outside the well that change
    between frames and are the size of what a preview's pieces sweep, most change first.  A
    pixel's change is its largest departure from its mean: a piece seen once among a dozen
    frames counts in full (a standard deviation would shrink it to a third).  Static edges
    (a box's border) flicker with noise and compression, so a pixel must change more the
    steeper its mean image is there."""
    change = np.abs(canvases - mean).max(axis=(0, 3))
    s = canvas.scale
    wx0, wy0 = (np.array([-0.5, -0.5]) - canvas.origin) * s
    wx1, wy1 = (np.array([cols + 0.5, rows + 0.5]) - canvas.origin) * s
    outside = np.ones(change.shape, dtype=bool)
    outside[int(wy0) : int(np.ceil(wy1)), int(wx0) : int(np.ceil(wx1))] = False
    # gradient per pixel step (a Sobel kernel sums 4 of them), steepest channel
    slope = (np.abs(cv2.Sobel(mean, cv2.CV_32F, 1, 0)) + np.abs(cv2.Sobel(mean, cv2.CV_32F, 0, 1))).max(axis=2) / 4
    floor = max(_MIN_CHANGE, _CHANGE_OVER_NOISE * float(np.median(change[outside])))
    moving = outside & (change > floor + _CHANGE_PER_SLOPE * slope)
    closed = cv2.morphologyEx(moving.view(np.uint8), cv2.MORPH_CLOSE, np.ones((s // 2 + 1, s // 2 + 1), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(closed, connectivity=8)
    found = []
    for k in range(1, count):
        x, y, w, h, _ = stats[k]
        (lo_w, hi_w), (lo_h, hi_h) = _BLOB_CELLS
        if not (lo_w * s <= w <= hi_w * s and lo_h * s <= h <= hi_h * s):
            continue
        blob = moving[y : y + h, x : x + w] & (labels[y : y + h, x : x + w] == k)
        area = int(blob.sum())
        if area < s * s // 2:
            continue
        # the extent of rows and columns with a real share of the change: a few stray pixels
        # (compression, noise) must not stretch the pieces' sweep
        per_row = blob.sum(axis=1)
        ys = np.flatnonzero(per_row >= _STRAY_FRACTION * per_row.max())
        per_column = blob[ys[0] : ys[-1] + 1].sum(axis=0)
        xs = np.flatnonzero(per_column >= _STRAY_FRACTION * per_column.max())
        per_row = blob[:, xs[0] : xs[-1] + 1].sum(axis=1)
        ys = np.flatnonzero(per_row >= _STRAY_FRACTION * per_row.max())
        found.append((area, (x + int(xs[0]), y + int(ys[0]), x + int(xs[-1]), y + int(ys[-1]))))
    return [blob for _, blob in sorted(found, reverse=True)[:_CANDIDATES]]


def _learned(shots: list[np.ndarray], canvas: _Canvas, box: np.ndarray) -> tuple[np.ndarray, PreviewCalibration]:
    """The frame corners of the canvas ``box`` (left, top, right, bottom) and what
    ``learn_preview`` learns there (ValueError if nothing)."""
    left, top, right, bottom = box
    corners = canvas.frame_points(np.array([[left, top], [right, top], [right, bottom], [left, bottom]])).astype(np.float32)
    return corners, learn_preview(shots, corners)


def find_preview(frames: Sequence[np.ndarray], well_corners: np.ndarray, cols: int = 10, rows: int = 20) -> np.ndarray | None:
    """The preview box's interior corners (4 x 2 float32, TL TR BR BL, frame pixels), found in
    ``frames`` of play from one camera that show at least two different next pieces (a dozen
    frames a piece apart are plenty), given the well's corners; None when the screen shows no
    preview box.  See the module docstring for how, and for what it assumes."""
    shots = _as_frames(frames)
    if len(shots) < 2:
        raise ValueError("find_preview needs at least two frames with different next pieces")
    well = np.asarray(well_corners, dtype=np.float64)
    if well.shape != (4, 2) or not np.all(np.isfinite(well)):
        raise ValueError(f"well corners must be 4 x 2 finite numbers (TL TR BR BL), got shape {well.shape}")
    canvas = _canvas(well, cols, rows)
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    canvases = np.stack([cv2.warpPerspective(f, canvas.to_frame, canvas.size, flags=flags) for f in _steady_rows(shots)])
    mean = canvases.mean(axis=0)
    best: tuple[tuple[int, int], np.ndarray] | None = None
    for blob in _change_blobs(canvases, mean, canvas, cols, rows):
        box, bordered = _box_around(mean, blob, canvas.scale)
        try:
            corners, calibration = _learned(shots, canvas, box)
        except ValueError:
            continue
        if not bordered:
            try:
                corners, calibration = _learned(shots, canvas, _centred_on_pieces(shots, box, calibration))
            except ValueError:
                pass  # keep the box as placed: it was learned
        pieces = [read_preview(f, calibration).piece for f in shots]
        read = [p for p in pieces if p is not None]
        # a counter's digits may pass for a piece now and then; the preview shows many pieces
        rank = (len(set(read)), len(read))
        if len(read) >= _MIN_READ_FRACTION * len(shots) and rank[0] >= 2 and (best is None or rank > best[0]):
            best = (rank, corners)
    return None if best is None else best[1]
