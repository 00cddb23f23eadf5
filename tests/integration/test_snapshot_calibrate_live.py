"""`gamerigctl calibrate` (live) and `gamerigctl snapshot` as real processes against a real rig.

The rig is tests/support/rig_sim.py: the simulator (level 1, so a fresh game's first piece is
still falling while the camera collects its frames) in this process, gamerigd with its four real
services as processes.  In one run: with no daemon both commands exit 3 saying so; gamerigd
starts with no calibration file, and a snapshot then shows the camera's frame but no observed
board; `gamerigctl calibrate --corners` (the simulator's true corners, roughly rounded) makes the
camera calibrate on live frames, writes the YAML, the reference frame and the PNG, and the camera
recognises the board at once; corners on something that is not a well are refused (exit 1, the
camera's reason) and the good calibration stays in use; after a few pieces of play, `gamerigctl
snapshot --json` writes a PNG holding the doubled frame and two boards, and reports the observed
board (the ground truth's board at that moment, give or take the piece landing meanwhile) and
the ai's predicted board.  Not checked: how the PNG looks beyond its size.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import cv2
import numpy as np
import pytest
from support.rig_sim import MachineRig

from gamerig.daemon.snapshot_cli import CELL_PX
from gamerig.games.tetris.vision_bench import CORNER_TOLERANCE_PX


@pytest.fixture(scope="module")
def rig() -> Iterator[MachineRig]:
    rig = MachineRig(level=1, seed=3)
    yield rig
    rig.stop()


def test_no_daemon_is_exit_code_3_with_a_clear_message(rig: MachineRig) -> None:
    for args in (["snapshot", "--out", str(rig.dir / "none.png")], ["calibrate"]):
        result = rig.gamerigctl(*args)
        assert result.returncode == 3, result
        assert "gamerigd is not running" in result.stderr
    assert not (rig.dir / "none.png").exists()


def test_live_calibration_then_snapshot(rig: MachineRig) -> None:
    rig.start()
    # no calibration file yet: the camera sends frames and sees no board
    uncalibrated = rig.gamerigctl("snapshot", "--out", str(rig.dir / "before.png"), "--json")
    assert uncalibrated.returncode == 0, uncalibrated.stderr
    assert json.loads(uncalibrated.stdout)["observed"] is None

    # live calibration from roughly rounded corners, on a fresh (empty) game
    truth = rig.true_corners()
    rough = ",".join(str(round(v)) for v in truth.ravel())
    rig.machine.target.new_game()
    calibrated = rig.gamerigctl("calibrate", "--corners", rough, "--json")
    assert calibrated.returncode == 0, calibrated.stderr
    answer = json.loads(calibrated.stdout)
    assert answer["ok"] and str(rig.calibration) in answer["message"]
    assert np.abs(np.asarray(answer["corners"]) - truth).max() < CORNER_TOLERANCE_PX
    for name in ("calibration.yaml", "calibration.png", "calibration-frame.png"):
        assert (rig.dir / name).is_file(), name
    rig.wait_for(lambda: (rig.status()["camera"] or {}).get("calibration") == "ok", 10.0, "the camera uses the calibration")

    # corners on the frame's empty corner: refused with the camera's reason, the good one stays
    bad = rig.gamerigctl("calibrate", "--rect", "4,4,40,80", "--frames", "2", "--every", "0", "--out", str(rig.dir / "bad.yaml"))
    assert bad.returncode == 1 and "calibration failed" in bad.stderr, bad
    assert not (rig.dir / "bad.yaml").exists()

    # a few pieces of play, then the snapshot
    rig.machine.target.new_game()
    assert rig.request("play")["ok"]
    rig.wait_for(lambda: rig.drops() >= 3, 60.0, "three pieces dropped")
    out = rig.dir / "snap" / "snapshot.png"
    snap = rig.gamerigctl("snapshot", "--out", str(out), "--json")
    assert snap.returncode == 0, snap.stderr
    report = json.loads(snap.stdout)
    picture = cv2.imread(str(out))
    assert picture.shape == (report["height"], report["width"], 3)
    assert picture.shape[1] >= 2 * 320 + 2 * 10 * CELL_PX  # the doubled frame and the two boards
    boards = {frame.board for frame in rig.machine.target.truth.frames()[-300:]}  # the last 5 s
    assert tuple(report["observed"]) in boards
    assert report["predicted"] is not None and len(report["predicted"]) == 20
    assert report["ai"]["synced"] is True
