"""`gamerigctl bench rig`: the whole rig against the simulator, measured by the simulator's ground truth.

    gamerigctl bench rig [--pieces N] [--level L] [--preview] [--seed S] [--fault SPEC ...] [--no-plan-ahead] [--keep DIR] [--json]

Starts the simulator and gamerigd with its four services as real processes (daemon/sim_rig.py:
calibration through the camera service, then play), lets the rig play until N pieces have
appeared since play began (or the game ends, or the time limit), stops everything, and reports:

- from the ground truth (daemon/rig_truth.py): pieces, lines, lines_per_piece, game_over,
  glass_to_key_ms_p50/p99 (from the frame in which a piece appeared on the target's screen to
  the first relay closure its keyboard saw), view_to_key_ms_p50/p99 (the same from the first
  frame the camera sent showing it: what the rig adds beyond the camera's own latency),
  turn_first_pieces and glass_to_key_ms_p99_move_first (how many pieces' first key was a turn,
  and the p99 over the others: a piece whose placement needs only turns in the spawn column cannot
  turn before its first fall, a fall step after it appeared, so its first key waits for the game),
  frame_period_ms (the filmed frames' median interval);
- from the watchdog's wd.state (via gamerigd's status): deadline_misses, mismatches, resyncs,
  halts, max_halt_s, stale_frames;
- from the ai's heartbeat (via gamerigd's status; counted since the ai last started): steering,
  its closed loop's work (corrections, lost_keys, retargets, second_thoughts, drop_retries,
  blind_drops, stale_stops: services/ai.py; gravity_landings: services/ai_ahead.py);
- headless_lines_per_piece: the headless AI (games/tetris/headless.py, the same player) on the
  same piece sequence (the pieces the truth shows, in order) from an empty board.

--fault takes the simulator's fault specs (``drop=0.02``, ``freeze=0.5@60``; times counted from
the start of play; see ``gamerigctl sim --help``).  --keep DIR keeps the run's files: the rig's
config, gamerigd's and the simulator's logs, the ground truth (truth.jsonl) and every bus message
of the play (bus.jsonl, daemon/bus_recorder.py; 25 MB, 59,000 messages for 1000 pieces at level
10), to look into a lost game or a mismatch after the run.  Exit 0 after a run, 1 when the rig
could not be brought up, 2 for bad options.

The figures of recent runs, and what they say against the targets, are in the README's
Results (The rig); the day-by-day history of the runs that led there is in this docstring as of
commit 800bd40 (``git show 800bd40:daemon/bench_rig.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from gamerig.games.tetris.engine import ROTATE
from gamerig.games.tetris.headless import play_game
from gamerig.games.tetris.players import Player
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.sequence import FixedPieces
from gamerig.games.tetris.skins import skin as skin_by_name
from gamerig.hardware.sim.faults import parse_fault
from gamerig.hardware.sim.machine import FAULTS

from .bus_recorder import BusRecorder, recording
from .player_config import load_player
from .rig_truth import RunTruth, TruthReader, percentile, read_truth
from .sim_rig import RigFailed, SimRig, SimRigOptions

USAGE_ERROR = 2
#: Give up waiting for the pieces after this many seconds per piece (the rig stalled).
SECONDS_PER_PIECE_LIMIT = 5.0
POLL_S = 0.5
#: With --keep: the bus's messages during play, one JSON object a line (daemon/bus_recorder.py).
BUS_RECORD = "bus.jsonl"
#: The ai's heartbeat figures reported as "steering": what its closed loop did to the plans.
STEERING_STATS = ("corrections", "lost_keys", "retargets", "second_thoughts", "drop_retries", "blind_drops", "gravity_landings", "stale_stops")

def run_bench(options: SimRigOptions, pieces: int, workdir: Path, progress: Any = None, record_bus: bool = False) -> dict[str, Any]:
    """Play ``pieces`` pieces with the whole rig and return the report (see the module docstring);
    with ``record_bus``, every bus message of the play goes to ``workdir``/bus.jsonl as well."""
    rig = SimRig(options, workdir)
    with rig, _bus_record(rig, workdir) if record_bus else nullcontext() as recorder:
        started = time.monotonic()
        limit = started + 60.0 + SECONDS_PER_PIECE_LIMIT * pieces
        counted = 0
        so_far = TruthReader(rig.truth_path, rig.play_started_t or 0.0)
        while time.monotonic() < limit and rig.alive():
            if recorder is None:
                time.sleep(POLL_S)
            else:
                recorder.record_for(POLL_S)
            counted = so_far.read().pieces
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


def _bus_record(rig: SimRig, workdir: Path) -> AbstractContextManager[BusRecorder]:
    """A recorder of every message on ``rig``'s bus into ``workdir``/bus.jsonl, late ones too."""
    return recording(rig.gamerigd.subscriber([""], keep_expired=True), workdir / BUS_RECORD)


def summarize(truth: RunTruth, status: dict[str, Any], options: SimRigOptions, pieces: int) -> dict[str, Any]:
    """The report from the truth of the run and gamerigd's last status."""
    watchdog = status.get("watchdog") or {}
    counters = watchdog.get("counters") or {}
    ai_stats = ((status.get("services") or {}).get("ai") or {}).get("stats") or {}
    placed = min(truth.pieces, pieces)  # the piece in play at the end has not been placed
    player = Player(load_player(options.player), Rules("standard", 10, 20))
    headless = _headless(player, truth.sequence, options, placed)
    turn_first = [delay for delay, key in zip(truth.glass_to_key_s, truth.first_keys) if key == ROTATE]
    move_first = [delay for delay, key in zip(truth.glass_to_key_s, truth.first_keys) if key != ROTATE]
    return {
        "pieces": placed,
        "lines": truth.lines,
        "deadline_misses": counters.get("deadline_misses"),
        "mismatches": counters.get("mismatches"),
        "resyncs": counters.get("resyncs"),
        "halts": counters.get("halts"),
        "max_halt_s": watchdog.get("max_halt_s"),
        "stale_frames": counters.get("stale_frames"),
        "steering": {name: ai_stats.get(name) for name in STEERING_STATS},
        "glass_to_key_ms_p50": _ms(percentile(truth.glass_to_key_s, 0.5)),
        "glass_to_key_ms_p99": _ms(percentile(truth.glass_to_key_s, 0.99)),
        "turn_first_pieces": len(turn_first),
        "glass_to_key_ms_p99_move_first": _ms(percentile(move_first, 0.99)),
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
        skin_by_name(args.skin)  # the skin's own error lists the known ones
    except ValueError as exc:
        print(f"gamerigctl bench rig: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    keys = {name: value for name, value in (("hold_ms", args.hold_ms), ("gap_ms", args.gap_ms)) if value is not None}
    options = SimRigOptions(
        level=args.level, preview=args.preview, seed=args.seed, skin=args.skin, player=args.player, faults=tuple(args.fault), keys=keys,
        play={"plan_ahead": False} if args.no_plan_ahead else {},
    )
    progress = None if args.json else (lambda n: print(f"\rpieces {n}/{args.pieces}", end="", file=sys.stderr, flush=True))
    with tempfile.TemporaryDirectory(prefix="gamerig-bench-rig-") as workdir:
        try:
            report = run_bench(options, args.pieces, Path(args.keep or workdir), progress, record_bus=args.keep is not None)
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
    parser.add_argument("--skin", default=SimRigOptions.skin, help=f"the simulator's screen skin (default {SimRigOptions.skin})")
    parser.add_argument(
        "--fault", action="append", default=[], metavar="SPEC",
        help="a simulator fault NAME[=VALUE][@SECONDS|@PIECESp after play starts] (repeatable), e.g. drop=0.02, freeze=0.5@60, freeze=1@200p",
    )
    parser.add_argument("--hold-ms", type=int, help="key press hold (default: configs/gamerig-sim.yaml's)")
    parser.add_argument("--gap-ms", type=int, help="gap between key presses (default: configs/gamerig-sim.yaml's)")
    parser.add_argument(
        "--no-plan-ahead", action="store_true", help="play.plan_ahead false: every piece planned once the camera shows it (to compare)"
    )
    parser.add_argument(
        "--keep", metavar="DIR", help=f"keep the run's files (config, logs, truth) in DIR, with every bus message of the play in DIR/{BUS_RECORD}"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)
