"""`gamerigctl bench ai` run as a user runs it: a real process, small boards, a few games."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.off_the_clock  # no deadlines: runs beside other tests (tests/conftest.py)

GAMERIGCTL = Path(sys.executable).parent / "gamerigctl"
#: 10 x 10 standard games last a few hundred pieces: quick, yet long enough for a tail fit.
SMALL = ("--player", "dellacherie", "--width", "10", "--height", "10")

REQUIRED_KEYS = {
    "games", "lines_mean", "lines_median", "lines_min", "lines_max", "lines_ci95", "pieces_per_s",
    "lines_per_s", "decision_ms_p50", "decision_ms_p99", "height_histogram", "predicted_lines_mean",
    "rules", "width", "height", "player", "preview", "seed", "jobs", "pieces_mean", "score_mean",
    "games_capped", "lines",
}


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `gamerigctl bench ai ARGS` and capture its output."""
    return subprocess.run(
        [str(GAMERIGCTL), "bench", "ai", *args], capture_output=True, text=True, timeout=120, check=False
    )


@cache
def bench_json(*args: str) -> dict[str, Any]:
    """The JSON a successful `--json` run prints; runs once per distinct command line."""
    done = bench(*args, "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", "nothing on stderr when it is not a terminal"
    return json.loads(done.stdout)  # exactly one JSON object: json.loads rejects anything after it


def test_json_has_every_key_with_sane_values() -> None:
    report = bench_json(*SMALL, "--games", "4", "--seed", "5")
    assert REQUIRED_KEYS <= report.keys()
    assert (report["player"], report["rules"], report["width"], report["height"]) == ("dellacherie", "standard", 10, 10)
    assert (report["games"], report["seed"], report["jobs"], report["preview"]) == (4, 5, 1, False)
    lines = report["lines"]
    assert len(lines) == 4 and all(n >= 0 for n in lines)
    assert report["lines_mean"] == pytest.approx(sum(lines) / 4)
    assert report["lines_min"] == min(lines) and report["lines_max"] == max(lines)
    assert min(lines) <= report["lines_median"] <= max(lines)
    assert report["lines_ci95"] > 0
    assert report["games_capped"] == 0
    # Every placement lands in the histogram; the pile never tops the board.
    assert len(report["height_histogram"]) == 11
    assert sum(report["height_histogram"]) == pytest.approx(4 * report["pieces_mean"])
    # About 4 cells per piece and 10 per line: a surviving player clears ~0.4 lines per piece.
    assert 0.2 < report["lines_per_s"] / report["pieces_per_s"] < 0.45
    assert 0 < report["decision_ms_p50"] <= report["decision_ms_p99"]
    assert report["score_mean"] > 0
    assert report["predicted_lines_mean"] > 0


def test_same_seed_gives_same_lines() -> None:
    # Two separate processes; --predict-from-pieces changes only what the prediction reads.
    first = bench_json(*SMALL, "--games", "3", "--seed", "0")
    second = bench_json(*SMALL, "--games", "3", "--seed", "0", "--predict-from-pieces", "400")
    assert first["lines"] == second["lines"]
    assert first["height_histogram"] == second["height_histogram"]


def test_jobs_do_not_change_the_games() -> None:
    one = bench_json(*SMALL, "--games", "4", "--seed", "5")
    two = bench_json(*SMALL, "--games", "4", "--seed", "5", "--jobs", "2")
    assert two["jobs"] == 2
    assert two["lines"] == one["lines"]
    assert two["height_histogram"] == one["height_histogram"]


def test_game_g_plays_seed_s_plus_g() -> None:
    both = bench_json(*SMALL, "--games", "4", "--seed", "5")
    alone = bench_json(*SMALL, "--games", "1", "--seed", "6")
    assert alone["lines"] == [both["lines"][1]]


def test_caps_stop_games_and_are_counted() -> None:
    # Seeds 0..2 play 786, 638 and 100 pieces uncapped: the third ends on its own.
    report = bench_json(*SMALL, "--games", "3", "--seed", "0", "--max-pieces", "400")
    assert report["pieces"] == [400, 400, 100]
    assert report["games_capped"] == 2
    single = bench_json(*SMALL, "--games", "1", "--seed", "0", "--max-lines", "5")
    assert single["games_capped"] == 1 and single["lines"] == [5]
    assert single["lines_ci95"] is None


def test_prediction_from_the_first_k_pieces_ignores_the_rest_of_each_game() -> None:
    # Seeds 0..2 play 786, 638 and 100 pieces: the first K=400 of each are exactly what a 400-piece cap plays.
    early = bench_json(*SMALL, "--games", "3", "--seed", "0", "--predict-from-pieces", "400")
    capped = bench_json(*SMALL, "--games", "3", "--seed", "0", "--max-pieces", "400")
    whole = bench_json(*SMALL, "--games", "3", "--seed", "0")
    assert early["lines"] == whole["lines"] != capped["lines"]
    assert early["predicted_lines_mean"] == pytest.approx(capped["predicted_lines_mean"])
    assert early["predicted_lines_mean"] != pytest.approx(whole["predicted_lines_mean"])


def test_rules_option_reaches_the_engine() -> None:
    capped = ("--games", "3", "--seed", "0", "--max-pieces", "400")
    simplified = bench_json(*SMALL, *capped, "--rules", "simplified")
    standard = bench_json(*SMALL, *capped)
    assert (simplified["rules"], standard["rules"]) == ("simplified", "standard")
    assert simplified["lines"] != standard["lines"]


def test_readable_report() -> None:
    done = bench(*SMALL, "--games", "4", "--seed", "5")
    assert done.returncode == 0, done.stderr
    report = bench_json(*SMALL, "--games", "4", "--seed", "5")
    assert f"mean {report['lines_mean']:,.1f}" in done.stdout
    for heading in ("lines per game", "pieces per game", "speed per core", "decision time", "predicted lines"):
        assert heading in done.stdout


def test_progress_bar_on_a_terminal() -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(GAMERIGCTL), "bench", "ai", *SMALL, "--games", "2", "--json"], stdout=subprocess.PIPE, stderr=slave
    )
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    stdout = proc.stdout.read() if proc.stdout else b""
    assert proc.wait(timeout=60) == 0
    assert "games 2/2" in shown.decode() and "pieces/s" in shown.decode()
    assert json.loads(stdout)["games"] == 2  # the bar stays off stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--player", "nobody"), "no player named 'nobody'"),
        (("--player", "dellacherie", "--width", "3"), "board width must be 4..200, got 3"),
        (("--player", "dellacherie", "--games", "0"), "--games must be at least 1, got 0"),
        (("--player", "dellacherie", "--jobs", "0"), "--jobs must be at least 1, got 0"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    done = bench(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stdout == ""
