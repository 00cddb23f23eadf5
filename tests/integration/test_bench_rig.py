"""`gamerigctl bench rig` as a user runs it: a real subprocess that starts the simulator and
gamerigd with its services, plays a few pieces and prints one JSON object.

A small run (8 pieces at level 5 with the preview): every key the issue asks for is there with a
sane value, the pieces are exactly the ones asked for, latencies are positive and ordered, and the
headless AI was run on the same sequence.  At level 10 (60 pieces), pieces confirmed late in their
fall are left to gravity and land as predicted.  With --keep, the play's bus is recorded.  A skin
with a ghost piece is calibrated (at level 10, while the first piece falls onto its ghost) and
played, its cells read by their middles.  Bad options exit 2 before anything starts.  Takes about
30 s a run (most of it starting and calibrating).  The benchmark's figures at a realistic size are
in daemon/bench_rig.py's docstring.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from gamerig.daemon.bench_rig import STEERING_STATS
from gamerig.daemon.sim_rig import gamerigctl_command

KEYS = (
    "pieces", "lines", "deadline_misses", "mismatches", "resyncs", "halts", "max_halt_s", "glass_to_key_ms_p50",
    "glass_to_key_ms_p99", "frame_period_ms", "lines_per_piece", "headless_lines_per_piece",
)


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*gamerigctl_command(), "bench", "rig", *args], capture_output=True, text=True, timeout=240)


def test_a_small_run_reports_every_key_as_json(tmp_path: Path) -> None:
    proc = bench("--pieces", "8", "--level", "5", "--preview", "--json", "--keep", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert set(KEYS) <= set(report)
    assert report["pieces"] == 8 and not report["stopped_early"]
    assert report["lines"] >= 0 and report["lines_per_piece"] == round(report["lines"] / 8, 4)
    assert 0 <= report["headless_lines_per_piece"] <= 0.4  # four cells a piece, ten a line
    assert 0 < report["glass_to_key_ms_p50"] <= report["glass_to_key_ms_p99"] < 5000
    assert 15.0 <= report["frame_period_ms"] <= 18.0  # the simulator films at 60 Hz
    assert report["mismatches"] == 0 and report["halts"] >= 0 and report["max_halt_s"] >= 0
    assert set(report["steering"]) == set(STEERING_STATS) and all(isinstance(n, int) and n >= 0 for n in report["steering"].values())
    assert (tmp_path / "truth.jsonl").exists() and (tmp_path / "gamerigd.log").exists()
    # --keep records the play's bus: what was seen, planned, predicted and pressed, in order
    recorded = [json.loads(line) for line in (tmp_path / "bus.jsonl").read_text().splitlines()]
    assert {"obs.frame", "plan.keys", "predict.board", "relay.key"} <= {message["topic"] for message in recorded}
    plans = [message for message in recorded if message["topic"] == "plan.keys"]
    assert [plan["seq"] for plan in plans] == sorted(plan["seq"] for plan in plans) and all(plan["source"] == "ai" for plan in plans)


def test_at_level_10_pieces_late_in_their_fall_are_left_to_gravity_and_land_as_predicted(tmp_path: Path) -> None:
    # No drop key: the ai reckons the landing tick from the piece's spawn, and the next piece's plan
    # made ahead is timed to the spawn after it.  A wrong reckoning shows as a mismatch: the next
    # piece's keys would act on this one, or wait a tick.
    proc = bench("--pieces", "60", "--level", "10", "--preview", "--json", "--keep", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["pieces"] == 60 and not report["stopped_early"]
    assert report["steering"]["gravity_landings"] >= 1, report["steering"]  # about one piece in eight at level 10
    assert report["mismatches"] == 0, (report, (tmp_path / "gamerigd.log").read_text()[-3000:])
    # the calibration's 3 s of frames at level 10 (sim_rig.calibration_every_s) saw the preview change
    assert yaml.safe_load((tmp_path / "calibration.yaml").read_text()).get("preview") is not None


def test_a_game_that_draws_a_ghost_piece_is_calibrated_and_played(tmp_path: Path) -> None:
    # flat_modern outlines where the falling piece would land; with camera seed 1 at level 10 the
    # first piece's ghost and then the piece itself cover one cell in every calibration frame
    proc = bench("--pieces", "8", "--level", "10", "--preview", "--json", "--skin", "flat_modern", "--seed", "1",
                 "--keep", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["pieces"] == 8 and not report["stopped_early"] and report["mismatches"] == 0, report
    states = [json.loads(line)["body"] for line in (tmp_path / "bus.jsonl").read_text().splitlines() if '"cam.state"' in line]
    assert states and states[-1]["cells_read_by"] == "middles"  # a ghost's outline is no filled cell


def test_bad_options_exit_2_before_anything_starts() -> None:
    for args, words in ((("--pieces", "0"), "--pieces"), (("--level", "11"), "--level"), (("--fault", "melt=1"), "melt"),
                        (("--skin", "nope"), "unknown skin 'nope'; known skins: elektronika1986")):
        proc = bench(*args)
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
