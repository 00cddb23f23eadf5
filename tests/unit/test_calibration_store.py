"""The calibration file round-trips, reads as plain YAML, and every bad value names the file and the key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from gamerig.daemon.calibration_store import CalibrationRecord, load, save, to_yaml
from gamerig.daemon.config_errors import ConfigError
from gamerig.games.tetris.preview import CANONICAL_WIDTH, PreviewCalibration
from gamerig.games.tetris.recognition import GridCalibration

CORNERS = np.array([[230.684, 39.041], [416.912, 38.889], [424.98, 426.61], [232.49, 423.771]], dtype=np.float32)


PREVIEW_BOX = PreviewCalibration(
    corners=np.array([[450, 60], [540, 60], [540, 132], [450, 132]], dtype=np.float32),
    empty=np.random.default_rng(1).uniform(0, 255, (32, CANONICAL_WIDTH, 3)).astype(np.float32),
    pitch=7.5,
    threshold=0.11,
)


def _record(piece_colours: bool = True, preview: PreviewCalibration | None = None) -> CalibrationRecord:
    rng = np.random.default_rng(0)
    well = GridCalibration(
        corners=CORNERS,
        cols=10,
        rows=20,
        empty=rng.uniform(0, 255, (22, 12, 3)).astype(np.float32),
        empty_middle=rng.uniform(0, 255, (22, 12, 3)).astype(np.float32),
        piece_colours=rng.uniform(0, 255, (7, 3)).astype(np.float32) if piece_colours else None,
    )
    return CalibrationRecord(
        well=well, source="v4l2:///dev/video0", frame_size=(640, 480), method="corners", score=0.6123,
        created="2026-12-02T14:30:00+00:00", gamerig_version="0.1.0", reference_frame="calibration-frame.png",
        preview=preview,
    )


def _assert_same(loaded: CalibrationRecord, record: CalibrationRecord) -> None:
    assert np.abs(loaded.well.corners - record.well.corners).max() <= 0.005 + 1e-4
    assert np.abs(loaded.well.empty - record.well.empty).max() <= 0.05 + 1e-4
    assert np.abs(loaded.well.empty_middle - record.well.empty_middle).max() <= 0.05 + 1e-4
    if record.well.piece_colours is None:
        assert loaded.well.piece_colours is None
    else:
        assert np.abs(loaded.well.piece_colours - record.well.piece_colours).max() <= 0.05 + 1e-4
    assert (loaded.well.cols, loaded.well.rows) == (record.well.cols, record.well.rows)
    plain = ("source", "frame_size", "method", "score", "created", "gamerig_version", "reference_frame")
    assert [getattr(loaded, k) for k in plain] == [getattr(record, k) for k in plain]
    assert loaded.well.empty.dtype == np.float32 and loaded.well.corners.dtype == np.float32


@pytest.mark.parametrize("piece_colours", [True, False])
def test_a_record_round_trips_through_the_file(tmp_path, piece_colours):
    record = _record(piece_colours)
    path = tmp_path / "calibration.yaml"
    save(record, path)
    _assert_same(load(path, frame_size=(640, 480)), record)


def test_the_file_is_readable_yaml_with_corners_on_one_line():
    text = to_yaml(_record())
    assert text.startswith("#")
    assert "\n  corners: [[230.68, 39.04], [416.91, 38.89], [424.98, 426.61], [232.49, 423.77]]\n" in text
    data = yaml.safe_load(text)
    assert data["format"] == 1 and data["frame_size"] == [640, 480]
    assert len(data["well"]["empty"]) == 22 and all(len(row) == 12 for row in data["well"]["empty"])
    assert sorted(data["well"]["piece_colours"]) == sorted("OISZLJT")


def test_a_preview_calibration_round_trips_field_by_field(tmp_path):
    path = tmp_path / "calibration.yaml"
    save(_record(preview=PREVIEW_BOX), path)
    loaded = load(path).preview
    assert isinstance(loaded, PreviewCalibration)
    assert np.abs(loaded.corners - PREVIEW_BOX.corners).max() <= 0.005
    assert np.abs(loaded.empty - PREVIEW_BOX.empty).max() <= 0.005 + 1e-4
    assert (loaded.pitch, loaded.threshold) == (PREVIEW_BOX.pitch, PREVIEW_BOX.threshold)


def test_a_bad_preview_names_the_preview_key(tmp_path):
    data = yaml.safe_load(to_yaml(_record(preview=PREVIEW_BOX)))
    for edit, key, reason in [
        (lambda d: d["preview"].update(pitch=-1.0), "preview", "pitch and threshold must be positive"),
        (lambda d: d["preview"].pop("empty"), "preview.empty", "missing"),
        (lambda d: d["preview"].update(corners="left"), "preview.corners", "array of numbers"),
    ]:
        edited = yaml.safe_load(yaml.safe_dump(data))
        edit(edited)
        path = tmp_path / "calibration.yaml"
        path.write_text(yaml.safe_dump(edited))
        with pytest.raises(ConfigError) as caught:
            load(path)
        assert (caught.value.key, reason in caught.value.reason) == (key, True), caught.value


def _edited(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load(to_yaml(_record()))
    edit(data)
    path = tmp_path / "calibration.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("edit", "key", "reason"),
    [
        (lambda d: d.pop("score"), "score", "missing"),
        (lambda d: d["well"].pop("empty"), "well.empty", "missing"),
        (lambda d: d.update(colour="red"), "colour", "unknown key"),
        (lambda d: d.update(format=2), "format", "reads format 1"),
        (lambda d: d["well"].update(corners=[[1, 2], [3, 4], [5, 6]]), "well.corners", "4 x 2 array of numbers, got 3 x 2"),
        (lambda d: d["well"].update(corners=[[1, 2], [3, 4], [5, 6], [7, "x"]]), "well.corners", "4 x 2 array of numbers"),
        (lambda d: d["well"].update(corners=[[1, 2], [3000, 4], [5, 6], [7, 8]]), "well.corners", "outside the 640 x 480 frame"),
        (lambda d: d["well"].update(rows=18), "well.empty", "20 x 12 x 3"),
        (lambda d: d["well"].update(cols=2.5), "well.cols", "whole number"),
        (lambda d: d["well"].update(empty_middle=[[1, 2, 3]]), "well.empty_middle", "22 x 12 x 3"),
        (lambda d: d["well"]["piece_colours"].pop("T"), "well.piece_colours", "each of O I S Z L J T"),
        (lambda d: d["well"]["piece_colours"].update(T=[1, 2]), "well.piece_colours.T", "3 array"),
        (lambda d: d.update(method="guess"), "method", "auto, corners, rect"),
        (lambda d: d.update(frame_size=[640]), "frame_size", "2 array"),
        (lambda d: d.update(source=""), "source", "non-empty string"),
        (lambda d: d.update(well=[1, 2]), "well", "mapping"),
    ],
)
def test_a_bad_value_is_an_error_naming_the_file_and_the_key(tmp_path, edit, key, reason):
    path = _edited(tmp_path, edit)
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert (caught.value.path, caught.value.key) == (path, key)
    assert reason in caught.value.reason
    assert str(caught.value).startswith(f"{path}: {key}: ")


def test_a_file_from_before_the_middle_look_loads_and_reads_cells_whole(tmp_path):
    path = _edited(tmp_path, lambda d: d["well"].pop("empty_middle"))
    well = load(path).well
    assert well.empty_middle is None and not well.read_middles
    assert np.abs(well.empty - _record().well.empty).max() <= 0.05 + 1e-4


def test_a_calibration_for_another_frame_size_is_refused(tmp_path):
    path = tmp_path / "calibration.yaml"
    save(_record(), path)
    with pytest.raises(ConfigError, match=r"frame_size: calibrated at 640 x 480 but the camera gives 1280 x 720"):
        load(path, frame_size=(1280, 720))


def test_a_missing_or_broken_file_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "none.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("format: [1\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load(listed)

