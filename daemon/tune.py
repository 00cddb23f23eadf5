"""`gamerigctl tune`: fit a player's weights by the cross-entropy method on headless games.

Reproducible: the same arguments give the same weights, whatever --jobs is,
because candidates come from a seeded generator and every candidate of a
generation plays the same seeded piece sequences (common random numbers, so
candidates are compared on equal luck).
"""

from __future__ import annotations

import argparse
import multiprocessing
import shlex
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gamerig.games.tetris.headless import play_game
from gamerig.games.tetris.players import FEATURE_NAMES, Player, PlayerSpec
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.sequence import RandomPieces
from gamerig.games.tetris.tuning import CrossEntropy

from .config_errors import ConfigError
from .player_config import dump_player, load_player, players_dir
from .progress import ProgressBar

USAGE_ERROR = 2
INTERRUPTED = 130
#: Seeds of generation k start at SEED_STRIDE * (k + 1) + seed * GAMES, far from bench's small seeds.
SEED_STRIDE = 1_000_003
INITIAL_STD = 10.0


@dataclass(frozen=True)
class Trial:
    """One candidate's games: what a worker process needs to play them."""

    weights: tuple[float, ...]
    features: tuple[str, ...]
    tie_break: str
    rules: Rules
    seeds: tuple[int, ...]
    max_lines: int


def play_trial(trial: Trial) -> float:
    """Mean lines of a candidate over its games (one-piece play, as tuned)."""
    spec = PlayerSpec("candidate", dict(zip(trial.features, trial.weights)), tie_break=trial.tie_break)  # type: ignore[arg-type]
    player = Player(spec, trial.rules)
    total = 0
    for seed in trial.seeds:
        total += play_game(player, trial.rules, RandomPieces(seed), max_lines=trial.max_lines).lines
    return total / len(trial.seeds)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C once for everyone


def generation_seeds(seed: int, generation: int, games: int) -> tuple[int, ...]:
    """Piece-sequence seeds shared by every candidate of a generation."""
    first = SEED_STRIDE * (generation + 1) + seed * games
    return tuple(range(first, first + games))


def starting_point(args: argparse.Namespace, features: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Initial mean and spread: a given player's weights (narrower) or zeros (wide)."""
    if args.start:
        spec = load_player(args.start)
        mean = np.array([spec.weights.get(f, 0.0) for f in features])
        return mean, np.full(len(features), INITIAL_STD / 2)
    return np.zeros(len(features)), np.full(len(features), INITIAL_STD)


def run(args: argparse.Namespace) -> int:
    """Tune, printing one line per generation, and write the weights as a player YAML."""
    try:
        features = parse_features(args.features)
        rules = Rules(name=args.rules, width=args.width, height=args.height)
        for flag in ("generations", "population", "games", "max_lines", "jobs"):
            if getattr(args, flag) < 1:
                raise ValueError(f"--{flag.replace('_', '-')} must be at least 1")
        mean, std = starting_point(args, features)
        method = CrossEntropy(mean, std, population=args.population, elite_fraction=args.elite, seed=args.seed)
    except (ValueError, ConfigError) as exc:
        print(f"gamerigctl tune: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    out = Path(args.out) if args.out else players_dir() / f"{args.name}.yaml"
    print(f"tuning {len(features)} weights on {rules.name} {rules.width}x{rules.height}: "
          f"{args.generations} generations x {args.population} candidates x {args.games} games (cap {args.max_lines} lines)")
    history: list[str] = []
    try:
        with multiprocessing.Pool(args.jobs, initializer=_ignore_sigint) as pool, \
                ProgressBar("generation", args.generations) as bar:
            for generation in range(args.generations):
                seeds = generation_seeds(args.seed, generation, args.games)
                candidates = method.ask()
                trials = [Trial(tuple(map(float, c)), features, args.tie_break, rules, seeds, args.max_lines)
                          for c in candidates]
                scores = np.zeros(len(trials))
                for i, score in enumerate(pool.imap(play_trial, trials)):
                    scores[i] = score
                    bar.update(generation, f"candidate {i + 1}/{len(trials)}  best {scores[: i + 1].max():,.0f} lines")
                elite = method.tell(candidates, scores)
                line = (f"generation {generation + 1:3d}: best {scores.max():9,.1f}  elite mean "
                        f"{scores[elite].mean():9,.1f}  population mean {scores.mean():9,.1f} lines")
                history.append(line)
                print(line, flush=True)
                bar.update(generation + 1, f"elite {scores[elite].mean():,.0f} lines", force=True)
    except KeyboardInterrupt:
        print("gamerigctl tune: interrupted; nothing written", file=sys.stderr)
        return INTERRUPTED
    spec = PlayerSpec(
        name=args.name,
        weights=dict(zip(features, (float(w) for w in method.mean))),
        tie_break=args.tie_break,
        lookahead=args.lookahead,
        expect_top=args.expect_top,
        expect_rows=args.expect_rows,
        description=args.description or f"cross-entropy tuned on {rules.name} {rules.width}x{rules.height}",
    )
    header = "\n".join(["Tuned by the cross-entropy method; reproduce with:",
                        "  gamerigctl tune " + shlex.join(args.argv), "", *history])
    dump_player(spec, out, header)
    print(f"wrote {out}")
    return 0


def parse_features(text: str) -> tuple[str, ...]:
    """Comma-separated feature names, or 'all'."""
    if text == "all":
        return FEATURE_NAMES
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in FEATURE_NAMES]
    if unknown or not names:
        raise ValueError(f"unknown features {unknown}; known: {', '.join(FEATURE_NAMES)}")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The tune command's options."""
    parser.add_argument("--name", default="tuned", help="player name (and file name) to write")
    parser.add_argument("--out", help="YAML file to write (default configs/players/NAME.yaml)")
    parser.add_argument("--description", default="", help="description stored with the weights")
    parser.add_argument("--features", default="all", help="comma-separated features to weight, or 'all'")
    parser.add_argument("--start", help="player whose weights start the search (default: zeros)")
    parser.add_argument("--rules", default="standard", choices=("standard", "simplified"))
    parser.add_argument("--width", type=int, default=10)
    parser.add_argument("--height", type=int, default=10)
    parser.add_argument("--generations", type=int, default=20)
    parser.add_argument("--population", type=int, default=60)
    parser.add_argument("--elite", type=float, default=0.2, help="fraction of each generation kept")
    parser.add_argument("--games", type=int, default=10, help="games per candidate")
    parser.add_argument("--max-lines", type=int, default=5000, help="cap per game, bounds the time")
    parser.add_argument("--tie-break", default="priority", choices=("priority", "first"))
    parser.add_argument("--lookahead", type=int, default=2, choices=(1, 2),
                        help="look-ahead of the written player (tuning itself plays one-piece)")
    parser.add_argument("--expect-top", type=int, default=0,
                        help="written player: without a preview, re-value this many best placements by the expected next piece")
    parser.add_argument("--expect-rows", type=int, default=0,
                        help="written player: ... when the pile is within this many rows of the top (0: always)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="processes that play games")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `tune` to gamerigctl."""
    parser = subparsers.add_parser(
        "tune", help="tune a player's weights by the cross-entropy method",
        description=__doc__.splitlines()[0],
    )
    add_arguments(parser)
    parser.set_defaults(func=_run_with_argv)


def _run_with_argv(args: argparse.Namespace) -> int:
    args.argv = sys.argv[2:] if len(sys.argv) > 2 and sys.argv[1] == "tune" else []
    return run(args)
