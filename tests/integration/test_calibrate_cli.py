"""`gamerigctl calibrate` run as an operator runs it: a real process on filmed synthetic screens saved as files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from gamerig.daemon.calibration_store import load
from gamerig.daemon.ctl import main
from gamerig.games.tetris.board import Board
from gamerig.games.tetris.pieces import PIECE_NAMES
from gamerig.games.tetris.recognition import observe
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import skin
from gamerig.games.tetris.vision_bench import CORNER_TOLERANCE_PX
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

pytestmark = pytest.mark.off_the_clock  # no deadlines: runs beside other tests (tests/conftest.py)

GAMERIGCTL = Path(sys.executable).parent / "gamerigctl"
#: A webcam a little off-axis, slightly blurred and noisy, MJPEG-compressed.
CAMERA = CameraSettings(
    corner_offsets=(4, -3, -2, 3, 3, 2, -3, -1), shift_px=(5, -3), blur_sigma=0.7, noise_sigma=2.0, jpeg_quality=85
)
SKIN = "picture"


def calibrate(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `gamerigctl calibrate ARGS` and capture its output."""
    return subprocess.run([str(GAMERIGCTL), "calibrate", *args], capture_output=True, text=True, timeout=60, check=False)


def _filmed(board: Board, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A filmed frame of ``board`` and the true well corners in it."""
    screen = render(board, skin(SKIN))
    image, h = film(screen.image, np.random.default_rng(seed), CAMERA)
    return image, map_points(h, screen.well_corners)


def _worst_error(corners: np.ndarray, truth: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(corners, dtype=np.float64) - truth, axis=1).max())


def test_an_image_of_an_empty_board_is_calibrated_automatically(tmp_path):
    image, truth = _filmed(Board(), seed=1)
    cv2.imwrite(str(tmp_path / "screen.png"), image)
    done = calibrate("--source", str(tmp_path / "screen.png"), "--out", str(tmp_path / "cal.yaml"))
    assert done.returncode == 0, done.stderr
    record = load(tmp_path / "cal.yaml", frame_size=(640, 480))
    assert record.method == "auto" and record.frame_size == (640, 480)
    assert _worst_error(record.well.corners, truth) <= CORNER_TOLERANCE_PX
    annotated = cv2.imread(str(tmp_path / "cal.png"))
    assert annotated is not None and annotated.shape[1] == 640 and annotated.shape[0] > 480
    assert np.array_equal(cv2.imread(str(tmp_path / record.reference_frame)), image)
    assert "lattice score" in done.stdout and str(tmp_path / "cal.yaml") in done.stdout


def test_operator_corners_are_refined_on_frames_of_a_video(tmp_path):
    video = tmp_path / "screen.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 30.0, (640, 480))
    for seed in range(5):
        image, truth = _filmed(Board(), seed)
        writer.write(image)
    writer.release()
    rough = truth + np.array([[3, -2], [-3, 2], [2, 3], [-2, -3]])
    done = calibrate(
        "--source", str(video), "--frames", "5", "--corners", ",".join(f"{v:.1f}" for v in rough.ravel()),
        "--out", str(tmp_path / "cal.yaml"), "--png", str(tmp_path / "check.png"), "--json",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["method"], report["frames"], report["png"]) == ("corners", 5, str(tmp_path / "check.png"))
    assert report["recheckable"]
    record = load(tmp_path / "cal.yaml")
    assert _worst_error(record.well.corners, truth) <= 1.5
    assert np.allclose(report["corners"], record.well.corners, atol=0.01)
    assert cv2.imread(str(tmp_path / "check.png")) is not None


def test_a_video_of_a_new_game_is_calibrated_with_its_preview_and_the_landed_piece_learned_empty(tmp_path):
    """12 frames of skin nes: a T falling, an O landed from the 5th frame on (so its cells are
    empty in only a third of the frames), every piece shown next once and five again."""
    video = tmp_path / "game.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 30.0, (640, 480))
    rng = np.random.default_rng(0)
    for k in range(12):
        stack = np.zeros((20, 10), dtype=np.uint8)
        stack[0:2, 0:2] = k >= 4
        x = 3 + k % 5
        screen = render(
            Board(cells=stack), skin("nes"), falling=[(x, 15), (x + 1, 15), (x + 2, 15), (x + 1, 16)], falling_piece="T",
            next_piece=(PIECE_NAMES * 2)[k], stack_ids=stack,
        )
        image, h = film(screen.image, rng, CAMERA)
        writer.write(image)
    writer.release()
    truth, preview_truth = map_points(h, screen.well_corners), map_points(h, screen.preview_corners)
    done = calibrate("--source", str(video), "--frames", "12", "--out", str(tmp_path / "cal.yaml"), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["method"], report["frames"], report["preview"]) == ("auto", 12, True)
    record = load(tmp_path / "cal.yaml")
    assert _worst_error(record.well.corners, truth) <= CORNER_TOLERANCE_PX
    assert _worst_error(record.preview.corners, preview_truth) <= 1.5
    # the O's cells were learned empty from the frames before it landed: the last frame reads right
    observation = observe(image, record.well)
    assert observation.valid and np.array_equal(observation.filled, screen.colour_ids > 0)


def test_corners_outside_the_frame_are_a_usage_error_and_nothing_is_written(tmp_path):
    cv2.imwrite(str(tmp_path / "screen.png"), _filmed(Board(), seed=1)[0])
    done = calibrate("--source", str(tmp_path / "screen.png"), "--rect", "600,0,100,400", "--out", str(tmp_path / "cal.yaml"))
    assert done.returncode == 2
    assert "the corners [[600.0, 0.0], [700.0, 0.0], [700.0, 400.0], [600.0, 400.0]] lie outside the 640 x 480 frame" in done.stderr
    assert not (tmp_path / "cal.yaml").exists() and not (tmp_path / "cal.png").exists()


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--corners", "1,2,3", "argument --corners: expected 8 comma-separated numbers"),
        ("--corners", "0,0,10,0,0,10,10,10", "not a convex quadrilateral"),
        ("--corners", "1,2,3,4,5,6,7,x", "expected 8 comma-separated numbers"),
        ("--rect", "10,10,-5,20", "width and height must be positive"),
        ("--rect", "10,10,5", "expected 4 comma-separated numbers x,y,width,height"),
    ],
)
def test_malformed_corners_are_refused_before_any_frame_is_grabbed(capsys, option, value, message):
    with pytest.raises(SystemExit) as stopped:
        main(["calibrate", "--source", "v4l2:///dev/no-such-camera", option, value])
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_no_well_and_a_board_that_is_not_empty_fail_with_what_to_do(tmp_path):
    cv2.imwrite(str(tmp_path / "noise.png"), np.random.default_rng(0).integers(0, 256, (480, 640, 3), dtype=np.uint8))
    done = calibrate("--source", str(tmp_path / "noise.png"), "--out", str(tmp_path / "cal.yaml"))
    assert done.returncode == 1
    assert "no 10 x 20 well found; give --corners or --rect" in done.stderr
    cells = np.zeros((20, 10), dtype=np.uint8)
    cells[:3, :9] = 1
    image, truth = _filmed(Board(cells=cells), seed=2)
    cv2.imwrite(str(tmp_path / "stack.png"), image)
    rect = f"{truth[0, 0]:.1f},{truth[0, 1]:.1f},{truth[2, 0] - truth[0, 0]:.1f},{truth[2, 1] - truth[0, 1]:.1f}"
    done = calibrate("--source", str(tmp_path / "stack.png"), "--rect", rect, "--out", str(tmp_path / "cal.yaml"))
    assert done.returncode == 1
    assert "the board is not empty" in done.stderr and "show an empty board" in done.stderr
    assert not (tmp_path / "cal.yaml").exists()


def test_a_missing_file_and_a_bad_source_url_are_usage_errors(tmp_path, capsys):
    assert main(["calibrate", "--source", str(tmp_path / "none.png")]) == 2
    assert "no image file" in capsys.readouterr().err
    assert main(["calibrate", "--source", str(tmp_path / "none.avi")]) == 2
    assert "neither a frame source URL" in capsys.readouterr().err
    assert main(["calibrate", "--source", "bogus://camera"]) == 2
    assert "unknown scheme 'bogus'" in capsys.readouterr().err
