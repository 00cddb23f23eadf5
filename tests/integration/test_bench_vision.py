"""`gamerigctl bench vision` run as a user runs it: a real process, one short scene per skin,
filmed and measured by two jobs (their counts are the same as one job's)."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from gamerig.games.tetris.skins import SKINS

pytestmark = pytest.mark.off_the_clock  # no deadlines: runs beside other tests (tests/conftest.py)

GAMERIGCTL = Path(sys.executable).parent / "gamerigctl"
#: Two frames per skin: the smallest run that still films every skin and commits boards.
FRAMES = 2 * len(SKINS)

RATES = ("calibration_success_rate", "cell_accuracy", "board_exact_match", "piece_read_accuracy")
REQUIRED_KEYS = {
    *RATES, "piece_accuracy", "corner_error_px_median", "false_spawns", "latency_ms_p50", "latency_ms_p99", "frames", "scenes",
    "seed", "missed_spawns", "events", "true_events", "hard", "pipeline_latency_ms_p50", "pipeline_latency_ms_p99",
    "preview_found_rate", "next_piece_accuracy", "next_piece_wrong", "filter_delay_ms_p50", "filter_delay_ms_p99",
}
HARD_KINDS = {"line_clear", "tear", "game_over", "after_bump"}


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `gamerigctl bench vision ARGS` and capture its output."""
    return subprocess.run(
        [str(GAMERIGCTL), "bench", "vision", *args], capture_output=True, text=True, timeout=120, check=False
    )


@cache
def small_run() -> dict[str, Any]:
    """The JSON object of one small seeded run over two jobs."""
    done = bench("--frames", str(FRAMES), "--seed", "3", "--jobs", "2", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_json_report_has_every_metric_as_a_fraction_or_count() -> None:
    report = small_run()
    assert REQUIRED_KEYS <= report.keys()
    assert (report["frames"], report["scenes"], report["seed"], report["jobs"]) == (FRAMES, len(SKINS), 3, 2)
    for key in RATES:
        assert 0.0 <= report[key] <= 1.0, key
    assert report["piece_accuracy"] is None or 0.0 <= report["piece_accuracy"] <= 1.0  # None: no spawn event
    assert report["false_spawns"] >= 0 and report["missed_spawns"] >= 0
    assert 0.0 < report["latency_ms_p50"] <= report["latency_ms_p99"]
    assert report["latency_ms_p50"] <= report["pipeline_latency_ms_p50"]  # the filter and tracker come on top


def test_every_frame_is_play_or_a_hard_kind_and_the_hard_ones_are_filmed() -> None:
    report = small_run()
    hard = report["hard"]
    assert set(hard) == HARD_KINDS
    assert report["play_frames"] + sum(counts["frames"] for counts in hard.values()) == FRAMES
    # seed 3 at this size: scene 9 shows its game's end, scene 4 its camera bumped
    assert hard["game_over"]["frames"] > 0 and hard["after_bump"]["frames"] > 0
    for counts in hard.values():
        assert counts["flagged"] + counts["commits"] <= counts["frames"]
        assert counts["wrong_commits"] <= counts["commits"]
    assert set(report["events"]) == set(report["true_events"]) == {"spawn", "landed", "rows_cleared", "game_over"}


def test_held_out_skins_and_each_skin_are_reported_apart() -> None:
    report = small_run()
    assert list(report["calibration_success_by_skin"]) == [skin.name for skin in SKINS]
    held_out = report["held_out"]
    assert held_out["scenes"] == sum(skin.held_out for skin in SKINS)
    assert held_out["scenes"] <= held_out["frames"] < report["frames"]


def test_recognition_from_true_corners_reads_synthetic_boards() -> None:
    report = small_run()
    assert report["recognition_from"] == "true corners"
    assert report["valid_frames"] > report["play_frames"] // 2
    assert report["cell_accuracy"] > 0.99
    assert report["commits"] > 0


def test_too_few_frames_is_a_usage_error_naming_the_minimum() -> None:
    done = bench("--frames", "3")
    assert done.returncode == 2
    assert f"at least {len(SKINS)}" in done.stderr
    assert done.stdout == ""


def test_fewer_than_one_job_is_a_usage_error() -> None:
    done = bench("--frames", str(FRAMES), "--jobs", "0")
    assert done.returncode == 2
    assert "jobs must be at least 1" in done.stderr
    assert done.stdout == ""
