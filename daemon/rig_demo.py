"""`gamerigctl rig-demo` (what `make demo` runs): the whole rig plays the simulator, shown live.

    gamerigctl rig-demo [--level L] [--no-preview] [--seed S] [--fault SPEC ...] [--seconds N]

Starts the simulator and gamerigd with its four services as real processes (daemon/sim_rig.py:
the camera pointed at the simulator's stream, the relay at its virtual board's pty, calibration
through the camera service, then play) and shows what `gamerigctl watch` shows: the board the
camera sees beside the one the ai predicts, the current plan, lines, pieces and level,
capture-to-first-key latency, deadline misses, mismatches, resyncs and halts, plus the
simulator's own count of pieces and lines.  Until Ctrl-C (or --seconds), then everything stops
in order (gamerigd releases the relays first) and a one-line summary is printed.  On a terminal
the view is redrawn in place; otherwise one status line a second.

The headless demo (the AI alone, no rig) stays `gamerigctl demo` (`make headless-demo`).
Tested through tests/integration/test_rig_end_to_end.py (the same rig and view).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from gamerig.hardware.sim.faults import parse_fault
from gamerig.hardware.sim.machine import FAULTS

from .rig_truth import TruthReader
from .sim_rig import RigFailed, SimRig, SimRigOptions
from .watch_cli import CLEAR_SCREEN, RigWatcher, draw, format_view

USAGE_ERROR = 2
REDRAW_S = 0.1


def run(args: argparse.Namespace) -> int:
    """Run the demo until Ctrl-C or --seconds; returns the exit code."""
    try:
        for spec in args.fault:
            parse_fault(spec, FAULTS)
        if not 1 <= args.level <= 10:
            raise ValueError(f"--level must be 1..10, got {args.level}")
    except ValueError as exc:
        print(f"gamerigctl rig-demo: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    options = SimRigOptions(level=args.level, preview=not args.no_preview, seed=args.seed, faults=tuple(args.fault))
    terminal = sys.stdout.isatty()
    print("starting the simulator and gamerigd, calibrating the camera (about 15 s) ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="gamerig-demo-") as workdir:
        rig = SimRig(options, Path(workdir))
        try:
            rig.start()
        except RigFailed as exc:
            print(f"gamerigctl rig-demo: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130
        watcher = RigWatcher(rig.endpoints)
        watcher.start()
        end = time.monotonic() + args.seconds if args.seconds else float("inf")
        last_line = 0.0
        so_far = TruthReader(rig.truth_path, rig.play_started_t or 0.0)
        try:
            if terminal:
                sys.stdout.write(CLEAR_SCREEN)
            while time.monotonic() < end and rig.alive():
                truth = so_far.read()
                simulator = (f"simulator (ground truth): games {truth.games}  pieces {truth.pieces}  lines {truth.lines}"
                             f"  level {truth.level_end}{'  game over' if truth.game_over else ''}")
                if terminal:
                    draw([*format_view(*watcher.snapshot()), simulator, "Ctrl-C stops the rig."])
                    time.sleep(REDRAW_S)
                elif time.monotonic() - last_line >= 1.0:
                    last_line = time.monotonic()
                    print(simulator, flush=True)
                    time.sleep(REDRAW_S)
                else:
                    time.sleep(REDRAW_S)
        except KeyboardInterrupt:  # Ctrl-C is how the demo is meant to end
            pass
        finally:
            watcher.close()
            rig.stop()
        truth = so_far.read()
        print(f"rig-demo: {truth.games} game(s), {truth.pieces} pieces, {truth.lines} lines, level {truth.level_end}"
              f"{', game over' if truth.game_over else ''}; everything stopped")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `rig-demo` to gamerigctl's commands."""
    parser = subparsers.add_parser(
        "rig-demo", help="the whole rig plays the simulator, shown live (make demo)",
        description="Start the simulator and gamerigd with its services, calibrate, play, and show the "
        "observed and predicted boards with live figures until Ctrl-C.",
    )
    parser.add_argument("--level", type=int, default=5, help="the simulator's level 1..10 (default 5)")
    parser.add_argument("--no-preview", action="store_true", help="the simulator hides the next piece")
    parser.add_argument("--seed", type=int, default=0, help="the simulator's seed (default 0)")
    parser.add_argument("--fault", action="append", default=[], metavar="SPEC",
                        help="a simulator fault NAME[=VALUE][@SECONDS|@PIECESp after play starts] (repeatable)")
    parser.add_argument("--seconds", type=float, default=0, help="stop after this many seconds of play (default: Ctrl-C)")
    parser.set_defaults(func=run)
