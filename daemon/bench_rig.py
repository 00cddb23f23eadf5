"""`gamerigctl bench rig`: the whole rig against the simulator, measured by the simulator's ground truth.

    gamerigctl bench rig [--pieces N] [--level L] [--preview] [--seed S] [--fault SPEC ...] [--plan-ahead] [--json]

Starts the simulator and gamerigd with its four services as real processes (daemon/sim_rig.py:
calibration through the camera service, then play), lets the rig play until N pieces have
appeared since play began (or the game ends, or the time limit), stops everything, and reports:

- from the ground truth (daemon/rig_truth.py): pieces, lines, lines_per_piece, game_over,
  glass_to_key_ms_p50/p99 (from the frame in which a piece appeared on the target's screen to
  the first relay closure its keyboard saw), view_to_key_ms_p50/p99 (the same from the first
  frame the camera sent showing it: what the rig adds beyond the camera's own latency),
  frame_period_ms (the filmed frames' median interval);
- from the watchdog's wd.state (via gamerigd's status): deadline_misses, mismatches, resyncs,
  halts, max_halt_s, stale_frames;
- headless_lines_per_piece: the headless AI (games/tetris/headless.py, the same player) on the
  same piece sequence (the pieces the truth shows, in order) from an empty board.

--fault takes the simulator's fault specs (``drop=0.02``, ``freeze=0.5@60``; times counted from
the start of play; see ``gamerigctl sim --help``).  Exit 0 after a run, 1 when the rig could not
be brought up, 2 for bad options.

Measured 2026-12-02 on the shared 2-core machine (simulator, gamerigd and its 4 services, and
other helpers' work on it), seed 0, the gamerig player, one run each.

With the ai planning each next piece ahead and timing its drops to the gravity (services/ai.py,
services/ai_timing.py; keys 30/30 ms), now ``--plan-ahead`` (the config's ``play.plan_ahead``, off by
default for the faults regression below; with it off the figures are those of "before planning
ahead"):

- ``--pieces 300 --level 10 --preview --plan-ahead --json``: pieces 300, lines 116, deadline_misses 0,
  mismatches 0, resyncs 1, halts 0, glass_to_key_ms p50 17.6 / p99 34.3, view_to_key_ms p50 -32.5 /
  p99 -15.7 (the first key now comes before the camera's first picture of the piece),
  lines_per_piece 0.3867 vs headless 0.3933 (-1.7 %), 124 s.  5 of 300 pieces above 26.7 ms: the
  first (from sight), two while the timing was being learned, two whose timed drop acted before
  its tick.  Earlier runs of the same code: p99 42.3 (4 above), 60.7-61.0 (before the latency and
  fall windows were made the same).
- ``--pieces 300 --level 5 --preview --plan-ahead --json``: pieces 300, lines 118, deadline_misses 0,
  mismatches 1, resyncs 5, halts 3 (late frames), glass_to_key_ms p50 16.4 / p99 394.7 (a piece
  that must turn cannot start from the spawn row while a fall step may be 0.3 s away: planned from
  sight), lines_per_piece 0.3933 = headless, 178 s.
- ``--pieces 300 --level 5 --preview --json --fault drop=0.02 --fault freeze=1@60 --fault
  freeze=1@150``: game over in every one of 6 runs of this code, after 181-218 pieces (mismatches
  15-20, halts 4-7, max_halt_s 1.48, lines_per_piece 0.33-0.35 vs headless 0.39, glass_to_key p50
  ~80 ms: few pieces planned ahead), also in the 2 of them with planning ahead and timed drops
  switched off by hand; the code before planning ahead (commit 2cc15a3's ai) played all 300 pieces
  in both of 2 runs at the same time (mismatches 1 and 3, max_halt_s 1.48, lines_per_piece 0.3933
  and 0.3967 vs 0.3933).  Cause not found: a REGRESSION of the faults target to resolve.  With the
  default (planning ahead off) at commit 8d58ffe: game over after 240 pieces (level 9), lines 90,
  deadline_misses 3, mismatches 7, resyncs 13, halts 5, max_halt_s 1.48, lines_per_piece 0.375 vs
  headless 0.3958 (95 %); one run of the same code earlier played 300 (mismatches 1).

Against the issue's targets: glass-to-first-key p99 <= 26.7 ms NOT met yet (level 10: 34.3, p50
17.6; level 5: the pieces that turn); level 10 x 300 with 0 misses and 0 mismatches met; lines per
piece within 2 % met at both levels.

Before planning ahead:

- ``--pieces 300 --level 5 --preview --json`` (keys 30/30 ms, configs/gamerig-sim.yaml): pieces 300,
  lines 119, deadline_misses 0, mismatches 0, resyncs 2, halts 1 (a late frame), max_halt_s 0.51,
  glass_to_key_ms p50 81.3 / p99 380.9, view_to_key_ms p50 31.3 / p99 330.9, frame_period_ms 16.7,
  lines_per_piece 0.3967 vs headless 0.3933 (level 5 -> 10 by the lines), 179 s.
- ``--pieces 300 --level 10 --preview --json`` (30/30): pieces 300, lines 117, deadline_misses 0,
  mismatches 0, resyncs 1, halts 0, glass_to_key_ms p50 79.4 / p99 111.5, view_to_key_ms p50 29.4 /
  p99 61.5, lines_per_piece 0.390 vs headless 0.3967 (1.7 % lower), 121 s.
- The same with keys 60/60 ms (the real boards' default, ``--hold-ms 60 --gap-ms 60``): level 10
  lost the game after 23 pieces (4 deadline misses: sideways moves of 120 ms a key do not reach
  far columns at 50 ms a row); level 5 lost it after 287 pieces, once the lines had raised the level
  to 10 (5 deadline misses, 0 mismatches).  One level-5 run at 30/30 before the last fixes counted 9
  mismatches and a game over at 248 pieces (level 9); not reproduced since.

- ``--pieces 1000 --level 10 --preview --json`` (30/30): game over after 961 pieces, lines 374,
  deadline_misses 6, mismatches 4 (each resynced), resyncs 9, halts 4, max_halt_s 0.54,
  glass_to_key_ms p50 81.1 / p99 131.3, view_to_key_ms p50 31.0 / p99 81.3, lines_per_piece 0.389 vs
  headless 0.3985 (-2.3 %), 385 s.

Against the issue's targets: level 10 with the preview is met for 300 pieces (0 misses, 0
mismatches) but NOT for 1,000 (6 deadline misses, the game lost at piece 961).  Lines per piece within 2 % of the
headless AI: met at level 5 (+0.9 %) and level 10 (-1.7 %).  Glass-to-first-key p99 <= one frame
+ 10 ms (26.7 ms): NOT met while the ai waited to see each piece (its camera alone shows the
screen 3 frames, 50 ms, late; view_to_key p50 ~30 ms, p99 62 ms at level 10 and up to ~330 ms at
level 5); planning ahead (above) does not wait for the camera.
- ``--pieces 300 --level 5 --preview --json --fault drop=0.02 --fault freeze=1@60 --fault
  freeze=1@150`` (30/30): game over after 245 pieces (level 9), lines 88, deadline_misses 5,
  mismatches 14, resyncs 22, halts 7, max_halt_s 1.48, lines_per_piece 0.359 vs headless 0.392
  (92 %).  Against "2 % drops and a freeze every 200 pieces: the game goes on, no halt over 2 s,
  >= 90 % of the headless lines per piece": halts under 2 s and 92 % met, the game going on NOT met.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gamerig.games.tetris.headless import play_game
from gamerig.games.tetris.players import Player
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.sequence import FixedPieces
from gamerig.hardware.sim.faults import parse_fault
from gamerig.hardware.sim.machine import FAULTS

from .player_config import load_player
from .rig_truth import RunTruth, percentile, read_truth
from .sim_rig import RigFailed, SimRig, SimRigOptions

USAGE_ERROR = 2
#: Give up waiting for the pieces after this many seconds per piece (the rig stalled).
SECONDS_PER_PIECE_LIMIT = 5.0
POLL_S = 0.5

def run_bench(options: SimRigOptions, pieces: int, workdir: Path, progress: Any = None) -> dict[str, Any]:
    """Play ``pieces`` pieces with the whole rig and return the report (see the module docstring)."""
    rig = SimRig(options, workdir)
    with rig:
        started = time.monotonic()
        limit = started + 60.0 + SECONDS_PER_PIECE_LIMIT * pieces
        counted = 0
        while time.monotonic() < limit and rig.alive():
            time.sleep(POLL_S)
            counted = read_truth(rig.truth_path, rig.play_started_t or 0.0).pieces
            if progress is not None:
                progress(counted)
            if counted > pieces or rig.truth().get("over"):
                break
        status = rig.status()
        stopped_early = counted <= pieces and not rig.truth().get("over")
    truth = read_truth(rig.truth_path, rig.play_started_t or 0.0, max_pieces=pieces)
    report = summarize(truth, status, options, pieces)
    report["stopped_early"] = stopped_early
    report["wall_s"] = round(time.monotonic() - started, 1)
    return report


def summarize(truth: RunTruth, status: dict[str, Any], options: SimRigOptions, pieces: int) -> dict[str, Any]:
    """The report from the truth of the run and gamerigd's last status."""
    watchdog = status.get("watchdog") or {}
    counters = watchdog.get("counters") or {}
    placed = min(truth.pieces, pieces)  # the piece in play at the end has not been placed
    player = Player(load_player(options.player), Rules("standard", 10, 20))
    headless = _headless(player, truth.sequence, options, placed)
    return {
        "pieces": placed,
        "lines": truth.lines,
        "deadline_misses": counters.get("deadline_misses"),
        "mismatches": counters.get("mismatches"),
        "resyncs": counters.get("resyncs"),
        "halts": counters.get("halts"),
        "max_halt_s": watchdog.get("max_halt_s"),
        "stale_frames": counters.get("stale_frames"),
        "glass_to_key_ms_p50": _ms(percentile(truth.glass_to_key_s, 0.5)),
        "glass_to_key_ms_p99": _ms(percentile(truth.glass_to_key_s, 0.99)),
        "view_to_key_ms_p50": _ms(percentile(truth.view_to_key_s, 0.5)),
        "view_to_key_ms_p99": _ms(percentile(truth.view_to_key_s, 0.99)),
        "frame_period_ms": _ms(truth.frame_period_s),
        "lines_per_piece": round(truth.lines / placed, 4) if placed else None,
        "headless_lines_per_piece": headless,
        "game_over": truth.game_over,
        "level": options.level,
        "level_end": truth.level_end,
        "preview": options.preview,
        "faults": list(options.faults),
        "keys": options.keys,
    }


def _headless(player: Player, sequence: list[str], options: SimRigOptions, pieces: int) -> float | None:
    """Lines per piece of the headless AI on ``sequence``'s first ``pieces`` pieces."""
    if not pieces or not sequence:
        return None
    result = play_game(
        player, Rules("standard", 10, 20), FixedPieces("".join(sequence)), preview=options.preview,
        max_pieces=pieces, initial_level=options.level,
    )
    return round(result.lines / max(1, result.pieces), 4)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def format_report(report: dict[str, Any]) -> str:
    """The report as aligned lines."""
    width = max(len(key) for key in report)
    return "\n".join(f"{key:<{width}}  {value}" for key, value in report.items())


def run(args: argparse.Namespace) -> int:
    """`gamerigctl bench rig`; returns the exit code."""
    try:
        if args.pieces < 1:
            raise ValueError(f"--pieces must be at least 1, got {args.pieces}")
        if not 1 <= args.level <= 10:
            raise ValueError(f"--level must be 1..10, got {args.level}")
        for spec in args.fault:
            parse_fault(spec, FAULTS)
    except ValueError as exc:
        print(f"gamerigctl bench rig: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    keys = {name: value for name, value in (("hold_ms", args.hold_ms), ("gap_ms", args.gap_ms)) if value is not None}
    options = SimRigOptions(
        level=args.level, preview=args.preview, seed=args.seed, player=args.player, faults=tuple(args.fault), keys=keys,
        play={"plan_ahead": True} if args.plan_ahead else {},
    )
    progress = None if args.json else (lambda n: print(f"\rpieces {n}/{args.pieces}", end="", file=sys.stderr, flush=True))
    with tempfile.TemporaryDirectory(prefix="gamerig-bench-rig-") as workdir:
        try:
            report = run_bench(options, args.pieces, Path(args.keep or workdir), progress)
        except RigFailed as exc:
            print(f"gamerigctl bench rig: {exc}", file=sys.stderr)
            return 1
    if progress is not None:
        print(file=sys.stderr)
    print(json.dumps(report) if args.json else format_report(report))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `rig` to gamerigctl bench's benchmarks."""
    parser = subparsers.add_parser(
        "rig", help="the whole rig (simulator + gamerigd + services): pieces, lines, latency, faults",
        description="Run the simulator and gamerigd with its services, play N pieces, and report what the "
        "simulator's ground truth and the watchdog saw.",
    )
    parser.add_argument("--pieces", type=int, default=100, help="pieces to play (default 100)")
    parser.add_argument("--level", type=int, default=5, help="the simulator's level 1..10 (default 5)")
    parser.add_argument("--preview", action="store_true", help="the simulator shows the next piece")
    parser.add_argument("--seed", type=int, default=0, help="the simulator's seed (pieces and camera; default 0)")
    parser.add_argument("--player", default="gamerig", help="the ai's player (default gamerig)")
    parser.add_argument(
        "--fault", action="append", default=[], metavar="SPEC",
        help="a simulator fault NAME[=VALUE][@SECONDS after play starts] (repeatable), e.g. drop=0.02, freeze=0.5@60",
    )
    parser.add_argument("--hold-ms", type=int, help="key press hold (default: configs/gamerig-sim.yaml's)")
    parser.add_argument("--gap-ms", type=int, help="gap between key presses (default: configs/gamerig-sim.yaml's)")
    parser.add_argument("--plan-ahead", action="store_true", help="the ai plans the next piece ahead (play.plan_ahead)")
    parser.add_argument("--keep", metavar="DIR", help="keep the run's files (config, logs, truth) in DIR")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)
