"""`gamerigctl bench ai`: play many headless games with one player and report strength and speed.

Game g plays the piece sequence of seed S + g, so two players (or two versions
of one) are compared on the same pieces, and the results do not depend on how
many processes (--jobs) share the work.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import signal
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from typing import Any

import numpy as np

from gamerig.games.tetris import stats
from gamerig.games.tetris.headless import GameView, play_game
from gamerig.games.tetris.players import Player, PlayerSpec
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.sequence import RandomPieces

from .player_config import load_player
from .progress import ProgressBar

PROG = "gamerigctl bench ai"
DESCRIPTION = (
    "Play headless games with one player and report lines per game, speed, decision times and"
    " Fahey's predicted mean. Game g plays the pieces of seed SEED + g."
)
USAGE_ERROR = 2
INTERRUPTED = 130
#: Pieces in the warm-up game that loads the compiled kernels before anything is timed.
WARMUP_PIECES = 50
#: Workers add to the live totals every this many pieces (the progress bar's lines and pieces/s).
LIVE_EVERY = 256
#: How often the main process wakes to redraw the progress bar while games run.
POLL_S = 0.2


@dataclass(frozen=True)
class BenchConfig:
    """Everything that decides what the benchmark plays."""

    spec: PlayerSpec
    rules: Rules
    games: int
    seed: int
    preview: bool
    max_lines: int | None
    max_pieces: int | None
    predict_from_pieces: int | None
    jobs: int


@dataclass
class GameRecord:
    """What one game reports back to the main process."""

    lines: int
    pieces: int
    score: int
    capped: bool  # stopped by --max-lines or --max-pieces rather than by losing
    elapsed_s: float
    height_histogram: list[int]
    decision_s: array
    #: the placements the prediction is made from: the first K (--predict-from-pieces) or the whole game
    sample_histogram: list[int]
    sample_lines: int
    sample_pieces: int


def end_height(rules: Rules) -> int:
    """Pile height at which Fahey's prediction counts a game as lost: H + 1.

    H + 1 is the first height no surviving pile has, Fahey's own choice ("row
    21" on his 20-row board).  The pile height is the tallest column, which
    under standard rules often reaches H - 1 or H at the edges without blocking
    the spawn.  Measured with ``dellacherie``, standard rules: on 10 x 20
    (100,000 pieces) the tail predicts 45k lines at H - 1, 96k at H and 202k at
    H + 1, against 281k measured with Fahey's own code; on 10 x 10 (300 games)
    35, 79 and 176 against 253 played.  Under simplified rules the prediction
    is far too low (82 against 2,511 on 10 x 10): there the tallest column
    says little about the danger of losing.
    """
    return rules.height + 1


class LiveTotals:
    """Pieces and lines played so far by all workers, shared memory for the progress bar."""

    def __init__(self) -> None:
        self.pieces: Synchronized = multiprocessing.Value("q", 0)
        self.lines: Synchronized = multiprocessing.Value("q", 0)

    def add(self, pieces: int, lines: int) -> None:
        """Count pieces and lines just played."""
        with self.pieces.get_lock():
            self.pieces.value += pieces
        with self.lines.get_lock():
            self.lines.value += lines


class _GameWatcher:
    """play_game's per-piece hook: snapshots the prediction sample and feeds the live totals."""

    def __init__(self, snapshot_at: int | None, live: LiveTotals | None) -> None:
        self.snapshot_at = snapshot_at
        self.live = live
        self.snapshot: tuple[list[int], int] | None = None  # (histogram, lines) at snapshot_at pieces
        self.reported = (0, 0)  # (pieces, lines) already added to the live totals

    def __call__(self, view: GameView) -> None:
        result = view.result
        if result.pieces == self.snapshot_at:
            self.snapshot = (list(result.height_histogram), result.lines)
        if self.live is not None and result.pieces % LIVE_EVERY == 0:
            self.report(result.pieces, result.lines)

    def report(self, pieces: int, lines: int) -> None:
        """Add what was played since the last report to the live totals."""
        if self.live is not None:
            self.live.add(pieces - self.reported[0], lines - self.reported[1])
            self.reported = (pieces, lines)


class _Worker:
    """Plays games in one process with its own player, warmed up before any game is timed."""

    def __init__(self, config: BenchConfig, live: LiveTotals | None) -> None:
        self.config = config
        self.live = live
        self.player = Player(config.spec, config.rules)
        # The first decisions load (or compile) the numba kernels; keep that out of the timings.
        play_game(self.player, config.rules, RandomPieces(config.seed), config.preview, max_pieces=WARMUP_PIECES)

    def play(self, game: int) -> GameRecord:
        """Play game ``game`` on the sequence of seed S + game."""
        config = self.config
        watch = config.predict_from_pieces is not None or self.live is not None
        watcher = _GameWatcher(config.predict_from_pieces, self.live)
        result = play_game(
            self.player,
            config.rules,
            RandomPieces(config.seed + game),
            preview=config.preview,
            max_lines=config.max_lines,
            max_pieces=config.max_pieces,
            on_piece=watcher if watch else None,
        )
        watcher.report(result.pieces, result.lines)
        if watcher.snapshot is None:  # the game ended before K pieces (or K is unset): use all of it
            sample_histogram, sample_lines, sample_pieces = result.height_histogram, result.lines, result.pieces
        else:
            (sample_histogram, sample_lines), sample_pieces = watcher.snapshot, watcher.snapshot_at
        return GameRecord(
            lines=result.lines,
            pieces=result.pieces,
            score=result.score,
            capped=result.ended_by != "game over",
            elapsed_s=result.elapsed_s,
            height_histogram=result.height_histogram,
            decision_s=result.decision_s,
            sample_histogram=sample_histogram,
            sample_lines=sample_lines,
            sample_pieces=sample_pieces,
        )


_worker_setup: tuple[BenchConfig, LiveTotals | None] | None = None
_worker: _Worker | None = None


def _start_worker(config: BenchConfig, live: LiveTotals | None) -> None:
    # Ctrl-C is the main process's to handle: it stops the pool and reports the interruption.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _worker_setup
    _worker_setup = (config, live)


def _play_in_worker(game: int) -> GameRecord:
    # The player is built (and warmed up) on the first task, not in the initializer: a
    # failing initializer makes the pool restart workers forever, a failing task reaches the caller.
    global _worker
    if _worker is None:
        assert _worker_setup is not None, "worker used before _start_worker"
        _worker = _Worker(*_worker_setup)
    return _worker.play(game)


def play_games(config: BenchConfig, bar: ProgressBar) -> list[GameRecord]:
    """Play all games over ``config.jobs`` processes; results in game (seed) order."""
    live = LiveTotals() if bar.enabled else None
    processes = min(config.jobs, config.games)
    records: list[GameRecord] = []
    with multiprocessing.Pool(processes, initializer=_start_worker, initargs=(config, live)) as pool:
        results = pool.imap(_play_in_worker, range(config.games))
        while len(records) < config.games:
            try:
                records.append(results.next(timeout=POLL_S))
            except multiprocessing.TimeoutError:
                pass  # no game finished in this poll: only the progress bar moves
            if live is not None:
                bar.update(len(records), _live_details(live, bar.elapsed_s), force=len(records) == config.games)
    return records


def _live_details(live: LiveTotals, elapsed_s: float) -> str:
    rate = live.pieces.value / elapsed_s if elapsed_s > 0 else 0.0
    return f"{live.lines.value:,} lines  {rate:,.0f} pieces/s"


def summarize(config: BenchConfig, records: Sequence[GameRecord]) -> dict[str, Any]:
    """The benchmark's result as one JSON-ready mapping (the --json output)."""
    lines = [r.lines for r in records]
    pieces = [r.pieces for r in records]
    total_pieces, total_lines = sum(pieces), sum(lines)
    play_s = sum(r.elapsed_s for r in records)
    decision_ms = np.concatenate([np.frombuffer(r.decision_s, dtype=np.float64) for r in records]) * 1000.0
    histogram = np.sum([r.height_histogram for r in records], axis=0)
    sample_histogram = np.sum([r.sample_histogram for r in records], axis=0)
    sample_pieces = sum(r.sample_pieces for r in records)
    lines_per_piece = sum(r.sample_lines for r in records) / sample_pieces if sample_pieces else 0.0
    prediction = stats.predict_game(sample_histogram, end_height(config.rules), lines_per_piece)
    summary = stats.summarize(lines)
    return {
        "player": config.spec.name,
        "rules": config.rules.name,
        "width": config.rules.width,
        "height": config.rules.height,
        "preview": config.preview,
        "seed": config.seed,
        "games": len(records),
        "jobs": config.jobs,
        "max_lines": config.max_lines,
        "max_pieces": config.max_pieces,
        "lines_mean": summary.mean,
        "lines_median": summary.median,
        "lines_min": min(lines),
        "lines_max": max(lines),
        "lines_ci95": summary.ci95,
        "pieces_mean": float(np.mean(pieces)),
        "score_mean": float(np.mean([r.score for r in records])),
        "games_capped": sum(r.capped for r in records),
        "pieces_per_s": total_pieces / play_s if play_s > 0 else None,
        "lines_per_s": total_lines / play_s if play_s > 0 else None,
        "decision_ms_p50": stats.percentile(decision_ms, 50),
        "decision_ms_p99": stats.percentile(decision_ms, 99),
        "height_histogram": [int(c) for c in histogram],
        "predict_from_pieces": config.predict_from_pieces,
        "predicted_pieces_mean": prediction.pieces if prediction else None,
        "predicted_lines_mean": prediction.lines if prediction else None,
        "tail_fit": _tail_fit_json(prediction),
        "lines": lines,
        "pieces": pieces,
    }


def _tail_fit_json(prediction: stats.Prediction | None) -> dict[str, Any] | None:
    if prediction is None:
        return None
    fit = prediction.fit
    return {"a": fit.a, "r": fit.r, "heights": list(fit.heights), "end_height": prediction.end_height}


def format_report(report: dict[str, Any]) -> str:
    """The benchmark's result as text for a person."""
    ci = f" ± {report['lines_ci95']:,.1f} (95% CI)" if report["lines_ci95"] is not None else ""
    lines = [
        f"{report['player']}, {report['rules']} rules, {report['width']} x {report['height']}, "
        f"{'with' if report['preview'] else 'no'} preview: {report['games']} games from seed {report['seed']}"
        f" on {report['jobs']} job(s)",
        f"lines per game   mean {report['lines_mean']:,.1f}{ci}   median {report['lines_median']:,.1f}"
        f"   min {report['lines_min']:,}   max {report['lines_max']:,}",
        f"pieces per game  mean {report['pieces_mean']:,.1f}   score mean {report['score_mean']:,.1f}",
    ]
    if report["games_capped"]:
        lines.append(f"capped           {report['games_capped']} of {report['games']} games stopped by a cap, not by losing")
    if report["pieces_per_s"] is not None:
        lines.append(f"speed per core   {report['pieces_per_s']:,.0f} pieces/s   {report['lines_per_s']:,.0f} lines/s")
    if report["decision_ms_p50"] is not None:
        lines.append(f"decision time    p50 {report['decision_ms_p50']:.4f} ms   p99 {report['decision_ms_p99']:.4f} ms")
    lines.append(_prediction_line(report))
    lines.append("pile height after each placement:")
    lines.extend(_histogram_lines(report["height_histogram"]))
    return "\n".join(lines)


def _prediction_line(report: dict[str, Any]) -> str:
    fit = report["tail_fit"]
    if fit is None:
        return "predicted lines  unavailable (fewer than 2 tail bins with enough placements, or no decaying tail)"
    source = (
        f"first {report['predict_from_pieces']:,} pieces of each game"
        if report["predict_from_pieces"]
        else "all placements"
    )
    return (
        f"predicted lines  {report['predicted_lines_mean']:,.0f} per game ({report['predicted_pieces_mean']:,.0f} pieces;"
        f" tail {fit['a']:.4g} x {fit['r']:.4f}^h over heights {fit['heights'][0]}..{fit['heights'][-1]},"
        f" game over at height {fit['end_height']}; from {source})"
    )


def _histogram_lines(histogram: Sequence[int]) -> list[str]:
    total = sum(histogram)
    top = max((h for h, count in enumerate(histogram) if count), default=0)
    return [
        f"  {h:>3}  {count:>12,}  {count / total:7.2%}" if total else f"  {h:>3}  {count:>12,}"
        for h, count in enumerate(histogram[: top + 1])
    ]


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    """Validate the command line; every problem raises ValueError with a message for the user."""
    for option, value in (
        ("--games", args.games),
        ("--jobs", args.jobs),
        ("--max-lines", args.max_lines),
        ("--max-pieces", args.max_pieces),
        ("--predict-from-pieces", args.predict_from_pieces),
    ):
        if value is not None and value < 1:
            raise ValueError(f"{option} must be at least 1, got {value}")
    return BenchConfig(
        spec=load_player(args.player),
        rules=Rules(args.rules, args.width, args.height),
        games=args.games,
        seed=args.seed,
        preview=args.preview,
        max_lines=args.max_lines,
        max_pieces=args.max_pieces,
        predict_from_pieces=args.predict_from_pieces,
        jobs=args.jobs,
    )


def run(args: argparse.Namespace) -> int:
    """Run the benchmark from parsed arguments; returns the exit code."""
    try:
        config = config_from_args(args)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    try:
        with ProgressBar("games", config.games) as bar:
            records = play_games(config, bar)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return INTERRUPTED
    report = summarize(config, records)
    print(json.dumps(report) if args.json else format_report(report))
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options."""
    parser.add_argument("--player", required=True, help="player name (configs/players/NAME.yaml) or a YAML path")
    parser.add_argument("--preview", action="store_true", help="show the next piece (two-piece players use it)")
    parser.add_argument(
        "--rules", default="standard", metavar="{standard,simplified}",
        help="standard: Fahey's Standard Tetris (default); simplified: the research literature's game",
    )
    parser.add_argument("--width", type=int, default=10, help="board width, 4..200 (default 10)")
    parser.add_argument("--height", type=int, default=20, help="board height, 4..400 (default 20)")
    parser.add_argument("--games", type=int, default=10, help="games to play (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="game g plays the pieces of seed SEED + g (default 0)")
    parser.add_argument("--max-lines", type=int, metavar="L", help="stop a game once it has cleared L lines")
    parser.add_argument("--max-pieces", type=int, metavar="P", help="stop a game once it has placed P pieces")
    parser.add_argument(
        "--predict-from-pieces", type=int, metavar="K",
        help="make the predicted mean from the first K placements of each game (default: all of them)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="processes to spread the games over (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `ai` to the `bench` command's subcommands."""
    parser = subparsers.add_parser(
        "ai",
        help="play headless games with one player and report lines, speed and the predicted mean",
        description=DESCRIPTION,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)
