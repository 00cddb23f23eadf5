"""`gamerigctl calibrate`: find the well in the camera's frames, learn its empty look, save it.

Grabs ``--frames`` frames from the source (a frame-source URL, or the path of a video or an
image file) and finds the well in all of them (each pixel's strongest edge over the frames,
so whatever the play filled at some moment outlines the well): automatically
(``calibration.find_well``), or by refining the operator's ``--corners`` / ``--rect``
(``calibration.refine_corners``).  A fit under ``calibration.MIN_SCORE`` is refused.

The operator shows an empty board (a new game); ``empty_look.learn_empty_well`` learns each
cell's empty look even when a piece falls through or lands during the capture, and the
calibration is refused, naming the cells, when the board was not empty.

Piece colours are not learned here: a short capture does not show all seven pieces with known
identities (the file keeps ``piece_colours: null``); play learns them
(``piece_colours.PieceColourLearner``, from the pieces the tracker names by shape).  The preview box is found
(``preview.find_preview``) only when the frames show different next pieces, as a video of a
game's first pieces does; a still image gives ``preview: null``.

Writes the YAML calibration (default ``calibration.yaml`` in the config folder), the raw median
frame beside it (``<name>-frame.png``, the reference for ``recheck.CalibrationMonitor``; the
summary says when its surroundings are too plain for that) and an annotated PNG
(``<name>.png``).  Exit codes: 0 calibrated, 1 calibration failed, 2 bad usage or configuration.

Without ``--source`` the running daemon's camera service calibrates on its live frames
(daemon/calibrate_live.py; exit code 3 when no daemon runs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from gamerig.games.tetris.annotate import annotate
from gamerig.games.tetris.calibration import MIN_SCORE, WellFit, find_well, refine_corners
from gamerig.games.tetris.preview import PreviewCalibration, find_preview, learn_preview
from gamerig.games.tetris.recheck import CalibrationMonitor
from gamerig.games.tetris.empty_look import BoardNotEmpty, learn_empty_well
from gamerig.games.tetris.recognition import GridCalibration, observe
from gamerig.hardware.frames.opencv_sources import Pace, VideoFile
from gamerig.hardware.frames.source import FrameTimeout, SourceEnded, SourceLost
from gamerig.hardware.frames.urls import open_source

from . import calibrate_live, calibration_store
from .calibration_store import CalibrationRecord
from .rig_config import default_config_path

PROG = "gamerigctl calibrate"
USAGE_ERROR = 2
FAILED = 1
#: --frames and --every when grabbing from --source (the live camera has its own defaults).
FRAMES = 10
EVERY_S = 0.0
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm", ".tif", ".tiff", ".webp")
#: Seconds to wait for each frame from the source.
READ_TIMEOUT_S = 5.0


class CalibrationFailed(Exception):
    """The frames do not give a calibration; the message tells the operator what to do."""


class UsageError(ValueError):
    """An option that does not fit the frames (e.g. corners outside them)."""


@dataclass(frozen=True)
class Result:
    """What a calibration run produced."""

    record: CalibrationRecord
    frames: int
    #: How far refinement moved the operator's corners (px), None for auto.
    refined_by_px: float | None
    yaml_path: Path
    png_path: Path
    frame_path: Path
    #: Whether play can re-check the camera against the reference frame (not "blind").
    recheckable: bool
    #: The reference frame (the frames' per-pixel median), as written to ``frame_path``.
    reference: np.ndarray


def _numbers(text: str, count: int, what: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {count} comma-separated numbers {what}, got {text!r}") from None
    if len(values) != count or not all(np.isfinite(values)):
        raise argparse.ArgumentTypeError(f"expected {count} comma-separated numbers {what}, got {text!r}")
    return values


def parse_corners(text: str) -> np.ndarray:
    """``x1,y1,...,x4,y4`` (TL TR BR BL) -> 4 x 2; a quad that is not convex in that order is refused."""
    corners = np.array(_numbers(text, 8, "x1,y1,x2,y2,x3,y3,x4,y4 (top-left, top-right, bottom-right, bottom-left)"))
    corners = corners.reshape(4, 2)
    edges = np.roll(corners, -1, axis=0) - corners
    turns = edges[:, 0] * np.roll(edges, -1, axis=0)[:, 1] - edges[:, 1] * np.roll(edges, -1, axis=0)[:, 0]
    if not np.all(turns > 0):  # clockwise on screen (y down) at every corner
        raise argparse.ArgumentTypeError(
            f"the corners {text!r} are not a convex quadrilateral in the order top-left, top-right, bottom-right, bottom-left"
        )
    return corners


def parse_rect(text: str) -> np.ndarray:
    """``x,y,w,h`` (the well's cell area in pixels) -> its 4 x 2 corners."""
    x, y, w, h = _numbers(text, 4, "x,y,width,height")
    if w <= 0 or h <= 0:
        raise argparse.ArgumentTypeError(f"width and height must be positive, got {text!r}")
    return np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], dtype=np.float64)


def _still_image(source: str) -> Path | None:
    """The image file a source names (a path or file:// URL ending in an image suffix), else None."""
    parts = urllib.parse.urlsplit(source)
    path = Path(urllib.parse.unquote(parts.path)) if parts.scheme == "file" else Path(source)
    return path if path.suffix.lower() in IMAGE_SUFFIXES and (parts.scheme in ("", "file")) else None


def grab_frames(source: str, count: int, every_s: float = 0.0) -> list[np.ndarray]:
    """Up to ``count`` frames, ``every_s`` seconds apart (0: consecutive): one from an image
    file, else from the frame source (a plain path to a video is read as fast as it decodes, and
    with ``every_s`` 0 frame by frame)."""
    image_path = _still_image(source)
    if image_path is not None:
        if not image_path.is_file():
            raise UsageError(f"no image file {str(image_path)!r}")
        image = cv2.imread(str(image_path), cv2.IMREAD_COLOR)
        if image is None:
            raise UsageError(f"cannot read the image {str(image_path)!r}")
        return [image]
    url = source
    if not urllib.parse.urlsplit(source).scheme:
        if not Path(source).is_file():
            raise UsageError(f"{source!r} is neither a frame source URL (v4l2://, file://, http://, x11://, ...) nor a file")
        if every_s == 0:
            return _checked(_every_frame_of(Path(source), count), source)
        url = Path(source).resolve().as_uri() + "?pace=fast"
    frames: list[np.ndarray] = []
    with open_source(url) as frame_source:
        for index in range(count):
            if index and every_s > 0:
                time.sleep(every_s)  # the source keeps only the newest frame: this spaces them out
            try:
                frames.append(frame_source.read(READ_TIMEOUT_S).image)
            except SourceEnded:
                break
            except FrameTimeout as exc:
                if not frames:
                    raise CalibrationFailed(f"no frame from the source: {exc}") from None
                break
    return _checked(frames, source)


def _every_frame_of(video: Path, count: int) -> list[np.ndarray]:
    """The first ``count`` frames of a video file, every one of them: read here, as fast as they
    decode, not through a frame source, whose reader thread keeps only the newest frame and so
    skipped frames whenever this thread fell behind it (10 of 12 read on a busy machine)."""
    try:
        capture = VideoFile(str(video), pace=Pace.FAST).open()
    except SourceLost as exc:
        raise CalibrationFailed(str(exc)) from None
    frames: list[np.ndarray] = []
    try:
        for _ in range(count):
            try:
                frames.append(capture.read()[0])
            except SourceEnded:
                break  # a file shorter than ``count`` frames: all of it
    finally:
        capture.close()
    return frames


def _checked(frames: list[np.ndarray], source: str) -> list[np.ndarray]:
    """``frames``, if there are any and all of one size."""
    if not frames:
        raise CalibrationFailed(f"the source {source!r} gave no frame")
    if len({f.shape for f in frames}) > 1:
        raise CalibrationFailed(f"the source changed its frame size during the capture: {sorted({f.shape for f in frames})}")
    return frames


def fit_well(frames: Sequence[np.ndarray], rough: np.ndarray | None, cols: int, rows: int) -> WellFit:
    """The well found (rough None) or refined from the operator's corners, on all the frames
    (the play they show outlines the well); refused under MIN_SCORE."""
    height, width = frames[0].shape[:2]
    if rough is None:
        fit = find_well(frames, cols, rows)
        if fit is None:
            raise CalibrationFailed(f"no {cols} x {rows} well found; give --corners or --rect")
        return fit
    if np.any(rough < -0.5) or np.any(rough[:, 0] > width - 0.5) or np.any(rough[:, 1] > height - 0.5):
        raise UsageError(f"the corners {np.round(rough, 1).tolist()} lie outside the {width} x {height} frame")
    fit = refine_corners(frames, rough, cols, rows)
    if fit.score < MIN_SCORE:
        raise CalibrationFailed(
            f"the corners given do not fit a {cols} x {rows} well (lattice score {fit.score:.2f} < {MIN_SCORE}):"
            " check them against the frame, and --cols/--rows"
        )
    return fit


def find_preview_box(frames: Sequence[np.ndarray], well: GridCalibration) -> PreviewCalibration | None:
    """The preview box and its empty look, when the frames show one with two different next
    pieces (``preview.find_preview`` needs that); None otherwise."""
    if len(frames) < 2:
        return None
    try:
        corners = find_preview(frames, well.corners, well.cols, well.rows)
        return None if corners is None else learn_preview(frames, corners)
    except ValueError:  # the box was seen but its pieces could not be learned: no preview
        return None


def calibrate(args: argparse.Namespace) -> Result:
    """Grab, fit, learn and write the files; raises CalibrationFailed or UsageError."""
    frames = grab_frames(args.source, args.frames, args.every)
    rough = args.corners if args.corners is not None else args.rect
    method = "auto" if rough is None else ("corners" if args.corners is not None else "rect")
    yaml_path = Path(args.out) if args.out else calibration_store.default_path()
    png_path = Path(args.png) if args.png else yaml_path.with_suffix(".png")
    return calibrate_frames(frames, args.source, rough, method, args.cols, args.rows, yaml_path, png_path)


def calibrate_frames(
    frames: Sequence[np.ndarray], source: str, rough: np.ndarray | None, method: str,
    cols: int, rows: int, yaml_path: Path, png_path: Path,
) -> Result:
    """Fit the well in ``frames`` (found, or refined from ``rough``), learn its empty look and
    the preview box, and write the YAML, the reference frame and the annotated PNG: the one
    calibration both this command and the camera service's live calibration run.  Raises
    CalibrationFailed or UsageError."""
    median = np.median(np.stack(frames), axis=0).astype(np.uint8)
    fit = fit_well(frames, rough, cols, rows)
    try:
        well = learn_empty_well(frames, fit.corners, cols, rows)
    except BoardNotEmpty as exc:
        raise CalibrationFailed(str(exc)) from None
    preview = find_preview_box(frames, well)
    frame_path = yaml_path.with_name(f"{yaml_path.stem}-frame.png")
    height, width = median.shape[:2]
    record = CalibrationRecord(
        well=well,
        source=source,
        frame_size=(width, height),
        method=method,
        score=fit.score,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        gamerig_version=version("gamerig"),
        reference_frame=frame_path.name,
        preview=preview,
    )
    note = f"method {method}, lattice score {fit.score:.2f} (floor {MIN_SCORE}), {len(frames)} frames from {source}"
    box = None if preview is None else preview.corners
    picture = annotate(frames[-1], well, observe(frames[-1], well), box, note)
    yaml_path.parent.mkdir(parents=True, exist_ok=True)
    png_path.parent.mkdir(parents=True, exist_ok=True)
    for path, image in ((frame_path, median), (png_path, picture)):
        if not cv2.imwrite(str(path), image):
            raise UsageError(f"cannot write {path}")
    calibration_store.save(record, yaml_path)
    refined_by = None if rough is None else float(np.linalg.norm(fit.corners - rough, axis=1).max())
    return Result(record, len(frames), refined_by, yaml_path, png_path, frame_path, _recheckable(well, median), median)


def _recheckable(well: GridCalibration, reference: np.ndarray) -> bool:
    """Whether ``recheck.CalibrationMonitor`` can watch this well (not blind, room around it)."""
    try:
        return not CalibrationMonitor(well, reference).blind
    except ValueError:  # the well fills the frame: no surroundings to watch
        return False


def summary(result: Result) -> dict[str, Any]:
    """The --json object."""
    record = result.record
    return {
        "source": record.source,
        "frame_size": list(record.frame_size),
        "frames": result.frames,
        "method": record.method,
        "score": round(record.score, 4),
        "min_score": MIN_SCORE,
        "corners": np.round(record.well.corners.astype(np.float64), 2).tolist(),
        "refined_by_px": None if result.refined_by_px is None else round(result.refined_by_px, 2),
        "cols": record.well.cols,
        "rows": record.well.rows,
        "preview": record.preview is not None,
        "piece_colours": record.well.piece_colours is not None,
        "yaml": str(result.yaml_path),
        "png": str(result.png_path),
        "reference_frame": str(result.frame_path),
        "recheckable": result.recheckable,
    }


def format_summary(report: dict[str, Any]) -> str:
    """The human-readable summary."""
    corners = "  ".join(f"{name} ({x:.1f}, {y:.1f})" for name, (x, y) in zip(("TL", "TR", "BR", "BL"), report["corners"]))
    how = "found automatically" if report["method"] == "auto" else f"refined from --{report['method']} (moved up to {report['refined_by_px']:.1f} px)"
    return "\n".join([
        f"calibrated {report['cols']} x {report['rows']} well from {report['source']}"
        f" ({report['frame_size'][0]} x {report['frame_size'][1]}, {report['frames']} frame{'s' * (report['frames'] != 1)})",
        f"  corners  {corners}",
        f"  fit      {how}, lattice score {report['score']:.2f} (floor {report['min_score']})",
        f"  learned  the empty board; piece colours {'yes' if report['piece_colours'] else 'no'};"
        f" preview box {'found' if report['preview'] else 'none'}",
        f"  wrote    {report['yaml']}, {report['png']} (check it), {report['reference_frame']}",
        "  re-check " + (
            "play can notice a bumped camera by the well's surroundings" if report["recheckable"]
            else "not possible: the well's surroundings have no texture, a bumped camera will not be noticed"
        ),
    ])


def run(args: argparse.Namespace) -> int:
    """Calibrate from parsed arguments; returns the exit code."""
    if args.source is None:
        return calibrate_live.run(args)
    args.frames = FRAMES if args.frames is None else args.frames
    args.every = EVERY_S if args.every is None else args.every
    if args.frames < 1 or args.cols < 4 or args.rows < 4 or not args.every >= 0:
        print(f"{PROG}: error: --frames must be >= 1, --every >= 0 and --cols, --rows >= 4", file=sys.stderr)
        return USAGE_ERROR
    try:
        result = calibrate(args)
    except CalibrationFailed as exc:
        print(f"{PROG}: calibration failed: {exc}", file=sys.stderr)
        return FAILED
    except ValueError as exc:  # UsageError, a bad source URL
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except OSError as exc:  # the output folder or file cannot be written
        print(f"{PROG}: error: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
        return USAGE_ERROR
    report = summary(result)
    print(json.dumps(report) if args.json else format_summary(report))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `calibrate` to gamerigctl's subcommands."""
    parser = subparsers.add_parser(
        "calibrate",
        help="find the well in the camera's view and learn its empty look",
        description=(
            "Find the Tetris well in frames from a source (show an empty board: start a new game),"
            " learn each cell's empty look and write the calibration YAML, the raw frame and an"
            " annotated PNG to check. Without --source, the running daemon's camera does it on live frames."
            " Exit 0 calibrated, 1 failed, 2 bad usage, 3 no daemon running."
        ),
    )
    parser.add_argument(
        "--source",
        help="frame source URL (v4l2:///dev/video0, file:///path.mp4, http://..., x11://:0) or the path of a video or image file;"
        " without it the running daemon's camera calibrates on its live frames",
    )
    parser.add_argument("--config", default=default_config_path(), help="without --source: the rig config naming the daemon's bus (default: %(default)s)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--corners", type=parse_corners, help="the well's corners x1,y1,...,x4,y4 (TL TR BR BL) in frame pixels, to refine")
    where.add_argument("--rect", type=parse_rect, help="the well's cell area x,y,width,height in frame pixels, to refine")
    parser.add_argument("--cols", type=int, default=10, help="well width in cells (default 10)")
    parser.add_argument("--rows", type=int, default=20, help="well height in cells (default 20)")
    parser.add_argument("--frames", type=int, help=f"frames to grab (default {FRAMES}, live 12; an image file gives one)")
    parser.add_argument(
        "--every", type=float, metavar="SECONDS",
        help=f"seconds between grabbed frames (default {EVERY_S:g}, live 0.25); spread them over a few pieces so the preview box is found",
    )
    parser.add_argument("--out", help=f"calibration YAML to write (default {calibration_store.default_path()})")
    parser.add_argument("--png", help="annotated PNG to write (default: the YAML's path with .png)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    parser.set_defaults(func=run)
