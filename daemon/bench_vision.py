"""`gamerigctl bench vision`: calibration, recognition and tracking measured on synthetic filmed play.

The measurement itself lives in ``games.tetris.vision_bench`` (its docstring defines every
metric); this module parses the command line, pins OpenCV to one thread so the latency is
per core, and prints the report.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import cv2
import numpy as np

from gamerig.games.tetris import vision_bench
from gamerig.games.tetris.vision_bench import BenchResult

from .player_config import load_player

PROG = "gamerigctl bench vision"
DESCRIPTION = (
    "Film synthetic Tetris play (the engine played key by key, every skin, held-out skins reported"
    " apart, a random camera per scene, line-clear and game-over animations, torn frames and camera"
    " bumps) and report auto-calibration success, and cell, board, piece and spawn accuracy, what"
    " hard frames did, and observe() latency, measured from the true well corners."
)
USAGE_ERROR = 2
INTERRUPTED = 130
#: The AI whose games give the boards (fast and plays long games).
PLAYER = "dellacherie"


def summarize(result: BenchResult, seed: int, k: int, jobs: int = 1) -> dict[str, Any]:
    """The --json object: overall metrics, the latency of observe() (latency_ms_*) and of observe
    + preview reading + filter + tracker (pipeline_latency_ms_*), and the held-out skins apart."""
    report: dict[str, Any] = {"seed": seed, "k": k, "jobs": jobs, **result.overall.metrics()}
    for prefix, seconds in (("latency_ms", result.latencies_s), ("pipeline_latency_ms", result.pipeline_latencies_s)):
        ms = 1000.0 * np.asarray(seconds)
        report[f"{prefix}_p50"] = float(np.percentile(ms, 50)) if ms.size else None
        report[f"{prefix}_p99"] = float(np.percentile(ms, 99)) if ms.size else None
    report["held_out"] = result.held_out.metrics()
    report["calibration_success_by_skin"] = {
        name: tally.metrics()["calibration_success_rate"] for name, tally in result.by_skin.items()
    }
    report["recognition_from"] = "true corners"
    return report


def _percent(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} ms"


def _group_lines(metrics: dict[str, Any]) -> list[str]:
    corner = metrics["corner_error_px_median"]
    events, truth = metrics["events"], metrics["true_events"]
    lines = [
        f"  calibration      {_percent(metrics['calibration_success_rate'], 1)} of {metrics['scenes']} scenes within"
        f" {vision_bench.CORNER_TOLERANCE_PX:g} px; median worst-corner error "
        + ("n/a" if corner is None else f"{corner:.2f} px"),
        f"  cells            {_percent(metrics['cell_accuracy'], 3)} correct over {metrics['valid_frames']} valid"
        f" of {metrics['play_frames']} play frames ({metrics['frames']} frames in all)",
        f"  boards           {_percent(metrics['board_exact_match'])} of {metrics['commits']} commits exact;"
        f" the filter adds {_ms(metrics['filter_delay_ms_p50'])} p50, {_ms(metrics['filter_delay_ms_p99'])} p99",
        f"  flagged          {metrics['unsure_frames']} unsure, {metrics['no_observation_frames']} no observation;"
        " tracker " + ", ".join(f"{status} {count}" for status, count in metrics["tracker_status"].items()),
        f"  piece type       {_percent(metrics['piece_accuracy'])} of {metrics['spawn_events']} spawn events;"
        f" {_percent(metrics['piece_read_accuracy'])} of per-frame readings",
        f"  spawns           {metrics['false_spawns']} false, {metrics['missed_spawns']} missed of {metrics['spawns_due']} due",
        "  events           " + ", ".join(f"{kind} {events[kind]} (truth {truth[kind]})" for kind in events),
        f"  next piece       box found in {_percent(metrics['preview_found_rate'], 1)} of scenes with a preview;"
        f" {_percent(metrics['next_piece_accuracy'])} of frames read right, {metrics['next_piece_wrong']} wrong",
    ]
    for kind, counts in metrics["hard"].items():
        lines.append(
            f"  {kind.replace('_', ' '):<16} {counts['frames']} frames: {counts['flagged']} flagged,"
            f" {counts['commits']} committed, {counts['wrong_commits']} wrong commits"
        )
    return lines


def format_report(report: dict[str, Any]) -> str:
    """The human-readable report."""
    lines = [f"vision bench: seed {report['seed']}, filter k={report['k']} (recognition from the true well corners)"]
    lines += _group_lines(report)
    if report["latency_ms_p50"] is not None:
        lines.append(
            f"  latency          observe() p50 {report['latency_ms_p50']:.3f} ms, p99 {report['latency_ms_p99']:.3f} ms;"
            f" with preview, filter and tracker p50 {report['pipeline_latency_ms_p50']:.3f} ms,"
            f" p99 {report['pipeline_latency_ms_p99']:.3f} ms (one core"
            + (")" if report["jobs"] == 1 else f", shared by {report['jobs']} jobs)")
        )
    lines.append("held-out skins:")
    lines += _group_lines(report["held_out"])
    lines.append("calibration success by skin:")
    lines += [f"  {name:<16} {_percent(rate, 0)}" for name, rate in report["calibration_success_by_skin"].items()]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark from parsed arguments; returns the exit code."""
    if args.k < 1:
        print(f"{PROG}: error: --k must be at least 1, got {args.k}", file=sys.stderr)
        return USAGE_ERROR
    cv2.setNumThreads(1)  # the jobs' processes inherit it
    try:
        result = vision_bench.run_bench(args.frames, args.seed, load_player(PLAYER), args.k, args.jobs)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return INTERRUPTED
    report = summarize(result, args.seed, args.k, args.jobs)
    print(json.dumps(report) if args.json else format_report(report))
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options."""
    parser.add_argument(
        "--frames", type=int, default=2000, help="frames of play over all scenes, about 100 per scene (default 2000: 20 scenes, under 3 minutes on one job)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the scenes, cameras and games (default 0)")
    parser.add_argument("--k", type=int, default=2, help="agreeing frames before the filter commits (default 2)")
    parser.add_argument(
        "--jobs", type=int, default=1,
        help="processes that film and measure the scenes (default 1); the counts are the same for any"
        " number, the latencies are measured on cores the jobs share",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `vision` to the `bench` command's subcommands."""
    parser = subparsers.add_parser(
        "vision", help="measure calibration and recognition on synthetic filmed scenes", description=DESCRIPTION
    )
    add_arguments(parser)
    parser.set_defaults(func=run)
