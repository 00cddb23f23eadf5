"""`gamerigctl`: the operator's command line.

Each subcommand lives in its own module, which adds itself with
``register(subparsers)`` and sets ``func(args) -> int`` (the exit code).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from importlib.metadata import version

from . import (
    bench_ai, bench_keys, bench_rig, bench_vision, calibrate, demo, keys_cli, rig_demo, sim, snapshot_cli, status_cli,
    tune, watch_cli,
)
from .player_config import available_players, load_player, players_dir

#: Exit code for usage and configuration errors, as argparse uses.
USAGE_ERROR = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run the chosen subcommand; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help(sys.stderr)
        return USAGE_ERROR
    try:
        return args.func(args)
    except ValueError as exc:  # ConfigError is one; so are bad rule settings (board size, rules name)
        print(f"gamerigctl: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130  # the shell's code for "stopped by Ctrl-C"; commands that expect it handle it themselves
    except BrokenPipeError:  # the reader went away (`gamerigctl demo | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit-time flush cannot fail again
        return 1


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every subcommand of this build."""
    parser = argparse.ArgumentParser(prog="gamerigctl", description="Control and inspect the gamerig rig.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('gamerig')}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    demo.register(subparsers)
    rig_demo.register(subparsers)
    _register_players(subparsers)
    _register_bench(subparsers)
    tune.register(subparsers)
    calibrate.register(subparsers)
    sim.register(subparsers)
    status_cli.register(subparsers)
    watch_cli.register(subparsers)
    keys_cli.register(subparsers)
    snapshot_cli.register(subparsers)
    return parser


def _register_bench(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser(
        "bench", help="measure the AI's strength and speed", description="Benchmarks of the rig's parts."
    )
    bench_subparsers = bench.add_subparsers(title="benchmarks", metavar="BENCHMARK")
    bench_ai.register(bench_subparsers)
    bench_vision.register(bench_subparsers)
    bench_keys.register(bench_subparsers)
    bench_rig.register(bench_subparsers)
    bench.set_defaults(func=lambda args: _usage(bench))


def _usage(parser: argparse.ArgumentParser) -> int:
    """A command given without its subcommand: show what it offers."""
    parser.print_help(sys.stderr)
    return USAGE_ERROR


def _register_players(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "players",
        help="list the AI players that can be chosen with --player",
        description=f"List the players defined in {players_dir()}.",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON list of objects instead of a table")
    parser.set_defaults(func=_list_players)


def _list_players(args: argparse.Namespace) -> int:
    """Print each player's name (what --player takes) and description."""
    players = [
        {"name": name, "description": spec.description, "lookahead": spec.lookahead, "tie_break": spec.tie_break}
        for name, spec in ((name, load_player(name)) for name in available_players())
    ]
    if args.json:
        print(json.dumps(players, indent=2))
        return 0
    if not players:
        print(f"no players in {players_dir()}")
        return 0
    width = max(len(p["name"]) for p in players)
    for p in players:
        print(f"{p['name']:<{width}}  {p['description']}")
    return 0
