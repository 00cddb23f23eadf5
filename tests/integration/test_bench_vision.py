"""`gamerigctl bench vision` run as a user runs it: a real process, one short scene per skin."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from gamerig.daemon.player_config import load_player
from gamerig.games.tetris import vision_bench
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.skins import SKINS

GAMERIGCTL = Path(sys.executable).parent / "gamerigctl"
#: Two frames per skin: the smallest run that still films every skin and commits boards.
FRAMES = 2 * len(SKINS)

RATES = ("calibration_success_rate", "cell_accuracy", "board_exact_match", "piece_read_accuracy")
REQUIRED_KEYS = {
    *RATES, "piece_accuracy", "corner_error_px_median", "false_spawns", "latency_ms_p50", "latency_ms_p99", "frames", "scenes",
    "seed", "missed_spawns", "events", "true_events", "hard", "pipeline_latency_ms_p50", "pipeline_latency_ms_p99",
}
HARD_KINDS = {"line_clear", "tear", "game_over", "after_bump"}


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `gamerigctl bench vision ARGS` and capture its output."""
    return subprocess.run(
        [str(GAMERIGCTL), "bench", "vision", *args], capture_output=True, text=True, timeout=120, check=False
    )


@cache
def small_run() -> dict[str, Any]:
    """The JSON object of one small seeded run."""
    done = bench("--frames", str(FRAMES), "--seed", "3", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_json_report_has_every_metric_as_a_fraction_or_count() -> None:
    report = small_run()
    assert REQUIRED_KEYS <= report.keys()
    assert (report["frames"], report["scenes"], report["seed"]) == (FRAMES, len(SKINS), 3)
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


# ---- the synthetic play the bench films, checked against the rules it claims to follow ----


def _scene_play(careless: bool, seed: int = 1, **style: Any) -> list[vision_bench.TruthFrame]:
    rng = np.random.default_rng(seed)
    defaults = dict(level=9, key_frames=2, hidden_spawn=True, clear_animation="white", flash_frames=4, careless=careless)
    play = vision_bench.ScenePlay(load_player("dellacherie"), Rules(), seed, 40, vision_bench.PlayStyle(**{**defaults, **style}), rng)
    return list(islice(play.frames(), vision_bench.MAX_GAME_FRAMES)) if careless else list(islice(play.frames(), 1500))


@cache
def _ai_play() -> list[vision_bench.TruthFrame]:
    return _scene_play(careless=False)


def test_pieces_enter_at_the_top_and_move_one_step_at_a_time() -> None:
    frames = _ai_play()
    pieces = {f.piece_number for f in frames if f.shown.piece}
    assert len(pieces) >= 15
    for before, after in zip(frames, frames[1:]):
        if "spawn" in after.events:
            assert min(y for _, y in after.shown.falling) >= 20  # partly above the 20 visible rows
            assert not after.shown.whole_piece
        elif before.shown.piece and after.shown.piece and before.piece_number == after.piece_number:
            assert np.array_equal(before.shown.stack_ids, after.shown.stack_ids)  # only the piece moves
            old, new = set(before.shown.falling), set(after.shown.falling)
            if old != new:
                shifted = any(new == {(x + dx, y + dy) for x, y in old} for dx, dy in ((0, -1), (1, 0), (-1, 0)))
                turned = len(new) == 4 and bool(old & new)  # every orientation keeps the origin cell
                assert shifted or turned, f"{sorted(old)} -> {sorted(new)} is no single key or gravity step"


def test_full_rows_flash_then_collapse_and_the_colours_follow_the_stack() -> None:
    frames = _ai_play()
    clears = [i for i, f in enumerate(frames) if "rows_cleared" in f.events]
    assert clears
    for i in clears:
        flashing = frames[i : i + 4]
        assert all(f.kind == "line_clear" for f in flashing)
        full = flashing[0].accepted[0].all(axis=1)
        assert full.any() and flashing[0].shown.flash_rows == tuple(int(r) + 1 for r in np.flatnonzero(full))
        assert flashing[1].shown.flash_rows == ()  # the flash alternates with the rows' own look
        after = frames[i + 4]
        assert after.kind == "play" and np.array_equal(after.accepted[0], flashing[0].accepted[1])
        assert int(after.accepted[0].sum()) == int(flashing[0].accepted[0].sum()) - 10 * int(full.sum())
    for f in frames:
        assert f.shown.stack_ids.max() <= 7 and np.array_equal(f.shown.stack_ids > 0, f.shown.stack_ids.astype(bool))


def test_the_wipe_empties_full_rows_from_the_centre_out_before_they_collapse() -> None:
    frames = _scene_play(careless=False, clear_animation="wipe", flash_frames=5)
    clears = [i for i, f in enumerate(frames) if "rows_cleared" in f.events]
    assert clears
    for i in clears:
        wipe = frames[i : i + 5]
        full = np.flatnonzero(wipe[0].accepted[0].all(axis=1))
        shown = [f.shown.board()[full] for f in wipe]
        counts = [int(rows.sum()) for rows in shown]
        assert counts == sorted(counts, reverse=True) and counts[0] < 10 * len(full) and counts[-1] == 0
        assert not shown[0][:, 4:6].any() and shown[0][:, [0, 9]].all()  # the centre goes first


def test_a_careless_game_ends_and_the_well_fills_with_grey_from_the_bottom() -> None:
    frames = _scene_play(careless=True)
    ends = [i for i, f in enumerate(frames) if "game_over" in f.events]
    assert len(ends) == 1
    tail = frames[ends[0] :]
    assert all(f.kind == "game_over" for f in tail) and len(tail) > vision_bench.GAME_OVER_HOLD_S * vision_bench.FPS
    fills = [len(f.shown.flash_rows) for f in tail]
    assert fills == sorted(fills) and fills[-1] == 20 and all(f.shown.flash == "grey" for f in tail if f.shown.flash_rows)
    assert all(np.array_equal(f.accepted[0], tail[0].accepted[0]) for f in tail)  # the game's board no longer changes


def test_torn_frames_accept_the_old_and_the_new_board() -> None:
    frames = _ai_play()
    torn = vision_bench.with_tears(frames, np.random.default_rng(0), 1.0)
    tears = [(i, f) for i, f in enumerate(torn) if f.kind == "tear"]
    assert len(tears) > 10
    for i, f in tears:
        assert f.torn_from is frames[i - 1].shown and 0 < f.tear_at < 1
        assert np.array_equal(f.accepted[0], frames[i].accepted[0]) and np.array_equal(f.accepted[1], frames[i - 1].accepted[0])
