"""The calibration file: where the well is in the camera's frame, what its empty cells look like,
and how the calibration was made, saved as YAML an operator can read.

Layout (``format: 1``; every key is required but ``empty_middle``, unknown keys are errors)::

    format: 1
    source: v4l2:///dev/video0        # the frame source it was made from
    frame_size: [640, 480]             # width, height: the camera must still give this size
    method: auto                       # auto | corners | rect (found, or refined from the operator's)
    score: 0.62                        # lattice fit score (calibration.MIN_SCORE is the floor)
    created: '2026-12-02T14:30:00+00:00'
    gamerig_version: 0.1.0
    reference_frame: calibration-frame.png   # the raw frame, beside this file (or null)
    well:
      cols: 10
      rows: 20
      corners: [[x, y], [x, y], [x, y], [x, y]]   # TL TR BR BL, frame pixels, 2 decimals
      empty:                           # (rows + 2) lines from the top, ring around the well included:
      - [[b, g, r], ...]               # cols + 2 BGR colours each, 1 decimal
      empty_middle: [...]              # the same for each cell's middle (files before it: cells read whole)
      piece_colours: {O: [b, g, r], I: ..., T: ...}   # or null when not learned
    preview: null                      # or the fields of preview.PreviewCalibration

Arrays load as float32.  The preview is stored field by field (numpy arrays as nested lists),
so this file follows ``PreviewCalibration``'s fields as they change.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml

from gamerig.games.tetris.pieces import PIECE_NAMES
from gamerig.games.tetris.preview import PreviewCalibration
from gamerig.games.tetris.recognition import GridCalibration

from .config_errors import ConfigError, load_yaml
from .player_config import config_dir

FORMAT = 1
METHODS = ("auto", "corners", "rect")
Method = Literal["auto", "corners", "rect"]
_KEYS = ("format", "source", "frame_size", "method", "score", "created", "gamerig_version", "reference_frame", "well", "preview")
_COLOUR_DECIMALS = 1  # a tenth of a level is far below a camera's noise
_WELL_KEYS = ("cols", "rows", "corners", "empty", "empty_middle", "piece_colours")
#: Keys a file may lack: ``empty_middle`` came after the first calibration files.
_OPTIONAL_KEYS = ("well.empty_middle",)
_HEADER = (
    "# gamerig calibration, written by `gamerigctl calibrate`: where the well is in the camera's\n"
    "# frame (corners TL TR BR BL) and what each cell looks like on an empty board (BGR, one line\n"
    "# per row from the top, the ring of cells around the well included).  Check it against the\n"
    "# annotated PNG written beside it; calibrate again rather than edit the colours.\n"
)


@dataclass(frozen=True)
class CalibrationRecord:
    """One calibration and how it was made."""

    well: GridCalibration
    source: str
    #: (width, height) of the frames it was made from.
    frame_size: tuple[int, int]
    method: Method
    score: float
    #: ISO 8601 time of the calibration.
    created: str
    gamerig_version: str
    #: File name of the raw calibration frame, relative to the YAML file (the reference of
    #: ``recheck.CalibrationMonitor``), or None.
    reference_frame: str | None = None
    #: The next-piece box, when the game shows one and it was found.
    preview: PreviewCalibration | None = None


def default_path() -> Path:
    """Where the calibration lives unless told otherwise: calibration.yaml in the config folder."""
    return config_dir() / "calibration.yaml"


class _Flow(list):  # type: ignore[type-arg]
    """A list written on one line."""


class _Dumper(yaml.SafeDumper):
    """A SafeDumper of its own, so the _Flow representer does not change yaml's global one."""


_Dumper.add_representer(_Flow, lambda dumper, data: dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True))


def _yaml_array(values: np.ndarray, decimals: int = 2) -> list[Any]:
    """An array as nested lists of rounded numbers, written one line per 1-D or 2-D slice."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim <= 2:
        return _Flow(np.round(array, decimals).tolist())
    return [_yaml_array(part, decimals) for part in array]


def _yaml_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return _yaml_array(value)
    if isinstance(value, (np.floating, float)):
        return round(float(value), 4)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, tuple):
        return _Flow(_yaml_value(v) for v in value)
    return value


def to_yaml(record: CalibrationRecord) -> str:
    """The record as the YAML text of the calibration file."""
    well = record.well
    colours = None
    if well.piece_colours is not None:
        colours = {name: _yaml_array(colour, _COLOUR_DECIMALS) for name, colour in zip(PIECE_NAMES, well.piece_colours)}
    preview = None
    if record.preview is not None:
        preview = {f.name: _yaml_value(getattr(record.preview, f.name)) for f in dataclasses.fields(record.preview) if f.init}
    body = {
        "format": FORMAT,
        "source": record.source,
        "frame_size": _Flow(int(v) for v in record.frame_size),
        "method": record.method,
        "score": round(float(record.score), 4),
        "created": record.created,
        "gamerig_version": record.gamerig_version,
        "reference_frame": record.reference_frame,
        "well": {
            "cols": well.cols,
            "rows": well.rows,
            "corners": _yaml_array(well.corners),
            "empty": _yaml_array(well.empty, _COLOUR_DECIMALS),
            "empty_middle": None if well.empty_middle is None else _yaml_array(well.empty_middle, _COLOUR_DECIMALS),
            "piece_colours": colours,
        },
        "preview": preview,
    }
    return _HEADER + yaml.dump(body, Dumper=_Dumper, sort_keys=False, width=1000)


def save(record: CalibrationRecord, path: Path) -> None:
    """Write the record to ``path`` (its folder must exist)."""
    path.write_text(to_yaml(record))


def load(path: Path, frame_size: tuple[int, int] | None = None) -> CalibrationRecord:
    """Read a calibration file; every problem is a ConfigError naming the file and the key.

    With ``frame_size`` (width, height of the camera's frames now), a calibration made at another
    size is refused: its corners would point at the wrong pixels.
    """
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(path, None, f"expected a mapping with the keys {', '.join(_KEYS)}")
    _check_keys(path, "", data, _KEYS)
    if data["format"] != FORMAT:
        raise ConfigError(path, "format", f"this gamerig reads format {FORMAT}, got {data['format']!r}")
    size = _array(path, "frame_size", data["frame_size"], (2,))
    if not all(v >= 1 and v == int(v) for v in size):
        raise ConfigError(path, "frame_size", f"must be [width, height] in whole pixels, got {data['frame_size']!r}")
    width, height = int(size[0]), int(size[1])
    if frame_size is not None and tuple(frame_size) != (width, height):
        raise ConfigError(
            path, "frame_size",
            f"calibrated at {width} x {height} but the camera gives {frame_size[0]} x {frame_size[1]}: calibrate again",
        )
    if data["method"] not in METHODS:
        raise ConfigError(path, "method", f"must be one of {', '.join(METHODS)}, got {data['method']!r}")
    score = data["score"]
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise ConfigError(path, "score", f"must be a number, got {score!r}")
    strings = {}
    for key in ("source", "created", "gamerig_version"):
        if not isinstance(data[key], str) or not data[key]:
            raise ConfigError(path, key, f"must be a non-empty string, got {data[key]!r}")
        strings[key] = data[key]
    reference = data["reference_frame"]
    if reference is not None and (not isinstance(reference, str) or not reference):
        raise ConfigError(path, "reference_frame", f"must be a file name or null, got {reference!r}")
    return CalibrationRecord(
        well=_load_well(path, data["well"], (width, height)),
        frame_size=(width, height),
        method=data["method"],
        score=float(score),
        reference_frame=reference,
        preview=_load_preview(path, data["preview"]),
        **strings,
    )


def _check_keys(path: Path, prefix: str, data: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        if key not in data and prefix + key not in _OPTIONAL_KEYS:
            raise ConfigError(path, prefix + key, "missing")
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise ConfigError(path, prefix + str(unknown[0]), f"unknown key (allowed: {', '.join(keys)})")


def _array(path: Path, key: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` as a float32 array of ``shape``, or a ConfigError saying what it should be."""
    expected = " x ".join(str(n) for n in shape)
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(path, key, f"must be a {expected} array of numbers") from None
    if array.shape != shape:
        got = " x ".join(str(n) for n in array.shape) or "a single value"
        raise ConfigError(path, key, f"must be a {expected} array of numbers, got {got}")
    if not np.all(np.isfinite(array)):
        raise ConfigError(path, key, "must hold finite numbers only")
    return array.astype(np.float32)


def _whole(path: Path, key: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(path, key, f"must be a whole number >= {low}, got {value!r}")
    return value


def _load_well(path: Path, data: Any, frame_size: tuple[int, int]) -> GridCalibration:
    if not isinstance(data, dict):
        raise ConfigError(path, "well", f"must be a mapping with the keys {', '.join(_WELL_KEYS)}")
    _check_keys(path, "well.", data, _WELL_KEYS)
    cols, rows = _whole(path, "well.cols", data["cols"], 4), _whole(path, "well.rows", data["rows"], 4)
    corners = _array(path, "well.corners", data["corners"], (4, 2))
    width, height = frame_size
    if np.any(corners < -0.5) or np.any(corners[:, 0] > width - 0.5) or np.any(corners[:, 1] > height - 0.5):
        raise ConfigError(path, "well.corners", f"lie outside the {width} x {height} frame: {corners.tolist()}")
    empty = _array(path, "well.empty", data["empty"], (rows + 2, cols + 2, 3))
    empty_middle = data.get("empty_middle")
    if empty_middle is not None:
        empty_middle = _array(path, "well.empty_middle", empty_middle, (rows + 2, cols + 2, 3))
    colours = data["piece_colours"]
    if colours is not None:
        if not isinstance(colours, dict) or sorted(colours) != sorted(PIECE_NAMES):
            raise ConfigError(path, "well.piece_colours", f"must map each of {' '.join(PIECE_NAMES)} to [b, g, r], or be null")
        colours = np.stack([_array(path, f"well.piece_colours.{name}", colours[name], (3,)) for name in PIECE_NAMES])
    return GridCalibration(corners=corners, cols=cols, rows=rows, empty=empty, piece_colours=colours, empty_middle=empty_middle)


def _load_preview(path: Path, data: Any) -> PreviewCalibration | None:
    """The preview calibration, built field by field: numpy-array fields from nested lists
    (float32), tuples from lists, everything else as written."""
    if data is None:
        return None
    fields = {f.name: f for f in dataclasses.fields(PreviewCalibration) if f.init}
    if not isinstance(data, dict):
        raise ConfigError(path, "preview", f"must be a mapping with the keys {', '.join(fields)}, or null")
    _check_keys(path, "preview.", data, tuple(fields))
    values = {}
    for name, value in data.items():
        annotation = str(fields[name].type)
        if "ndarray" in annotation and value is not None:
            try:
                values[name] = np.asarray(value, dtype=np.float32)
            except (TypeError, ValueError):
                raise ConfigError(path, f"preview.{name}", "must be an array of numbers") from None
        elif annotation.startswith("tuple") and isinstance(value, list):
            values[name] = tuple(value)
        else:
            values[name] = value
    try:
        return PreviewCalibration(**values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(path, "preview", str(exc)) from None
