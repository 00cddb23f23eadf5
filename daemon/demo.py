"""`gamerigctl demo`: the AI plays headless games in the terminal, one after another, until Ctrl-C."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TextIO

import numpy as np

from gamerig.games.tetris.headless import GameResult, GameView, play_game
from gamerig.games.tetris.players import Player
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.sequence import RandomPieces

from .player_config import load_player
from .terminal_view import render_board, render_piece, side_by_side

#: Fast enough to look lively, slow enough for a person to follow each piece.
DEFAULT_PIECES_PER_SECOND = 30.0
#: How often a plain (non-terminal) output prints its status line.
STATUS_INTERVAL_S = 1.0
#: How long a terminal keeps showing a lost game before the next one starts.
GAME_OVER_PAUSE_S = 1.0

# ANSI control sequences for in-place redraws.
CLEAR_SCREEN = "\x1b[2J"
HOME = "\x1b[H"
CLEAR_TO_EOL = "\x1b[K"
CLEAR_BELOW = "\x1b[J"
HIDE_CURSOR = "\x1b[?25l"
SHOW_CURSOR = "\x1b[?25h"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="watch the AI play Standard Tetris in the terminal",
        description="Play headless AI games one after another (seed, seed+1, ...) and draw them live. "
        "Ctrl-C stops and prints a summary. When the output is not a terminal, a status line is "
        "printed every second instead.",
    )
    parser.add_argument("--player", default="gamerig", help="player name from configs/players/ or a YAML path (default: %(default)s)")
    parser.add_argument("--preview", action="store_true", help="show the next piece; two-piece players use it")
    parser.add_argument("--rules", choices=("standard", "simplified"), default="standard", help="rule set (default: %(default)s)")
    parser.add_argument("--width", type=int, default=10, help="board width (default: %(default)s)")
    parser.add_argument("--height", type=int, default=20, help="board height (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="piece sequence seed of the first game (default: %(default)s)")
    parser.add_argument("--fps", type=_number(float, 0, low_allowed=False), default=15.0, help="most redraws per second (default: %(default)s)")
    parser.add_argument(
        "--pieces-per-second", type=_number(float, 0, low_allowed=True), default=DEFAULT_PIECES_PER_SECOND, metavar="N",
        help="pace of play so a person can follow; 0 plays at full speed (default: %(default)s)",
    )
    parser.add_argument("--max-pieces", type=_number(int, 0, low_allowed=False), default=None, metavar="N", help="stop after N pieces in all")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Play until Ctrl-C or ``--max-pieces``, then print a one-line summary."""
    rules = Rules(args.rules, args.width, args.height)
    player = Player(load_player(args.player), rules)
    out = sys.stdout
    header = [f"player  {player.name}", f"rules   {rules.name} {rules.width} x {rules.height}"]
    screen: Screen = AnsiScreen(out, header, args.fps) if out.isatty() else PlainScreen(out)
    demo = Demo(player, rules, screen, args.seed, args.preview, args.pieces_per_second, args.max_pieces)
    try:
        out.write(f"preparing player {player.name} (the first run compiles the AI kernels, about 10 s)...\n")
        out.flush()
        player.choose(np.zeros((rules.height, rules.width), dtype=np.uint8), "T")  # compile before the clock starts
        demo.play()
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a demo is meant to end
    finally:
        screen.close()
    out.write(demo.summary() + "\n")
    return 0


@dataclass(frozen=True)
class Figures:
    """The live numbers shown beside the board."""

    game: int
    seed: int
    lines: int
    level: int
    score: int
    pieces: int
    pieces_per_s: float
    best_lines: int

    def labelled(self) -> list[tuple[str, str]]:
        """(label, value) pairs in display order."""
        return [
            ("game", str(self.game)),
            ("seed", str(self.seed)),
            ("lines", str(self.lines)),
            ("level", str(self.level)),
            ("score", str(self.score)),
            ("pieces", str(self.pieces)),
            ("pieces/s", f"{self.pieces_per_s:.1f}"),
            ("best", str(self.best_lines)),
        ]


class Screen(Protocol):
    """Where the demo shows itself: a redrawn terminal or plain status lines."""

    interval_s: float

    def game_started(self, cells: np.ndarray, figures: Figures) -> None:
        """A new game begins on ``cells``."""

    def show(self, cells: np.ndarray, next_piece: str | None, figures: Figures) -> None:
        """Show the current state."""

    def game_over(self, cells: np.ndarray, figures: Figures, ended_by: str) -> None:
        """A game ended (``ended_by`` says how); ``figures`` are its final numbers."""

    def close(self) -> None:
        """Leave the output ready for the summary line."""


class AnsiScreen:
    """Redraws the board and figures in place on a terminal."""

    def __init__(self, out: TextIO, header: list[str], fps: float) -> None:
        self.out = out
        self.header = header
        self.interval_s = 1.0 / fps
        self._opened = False

    def game_started(self, cells: np.ndarray, figures: Figures) -> None:
        """Draw the empty board at once, before the first piece lands."""
        self.show(cells, None, figures)

    def show(self, cells: np.ndarray, next_piece: str | None, figures: Figures) -> None:
        """Redraw the whole frame from the top-left corner."""
        panel = ["gamerig demo", *self.header, ""]
        panel += [f"{label:<9}{value:>8}" for label, value in figures.labelled()]
        if next_piece is not None:
            panel += ["", "next", *render_piece(next_piece)]
        lines = side_by_side([render_board(cells), panel])
        if not self._opened:
            self._check_fits(lines)
            self.out.write(HIDE_CURSOR + CLEAR_SCREEN)
            self._opened = True
        self.out.write(HOME + "".join(line + CLEAR_TO_EOL + "\n" for line in lines) + CLEAR_BELOW)
        self.out.flush()

    def game_over(self, cells: np.ndarray, figures: Figures, ended_by: str) -> None:
        """Show the final board, and hold a lost game long enough for a person to see it."""
        self.show(cells, None, figures)
        if ended_by == "game over":
            time.sleep(GAME_OVER_PAUSE_S)

    def close(self) -> None:
        """Give the cursor back, on a clean line (the terminal may have echoed ^C there)."""
        self.out.write("\r" + CLEAR_TO_EOL + SHOW_CURSOR)
        self.out.flush()

    @staticmethod
    def _check_fits(lines: list[str]) -> None:
        size = shutil.get_terminal_size()
        rows, cols = len(lines) + 1, max(len(line) for line in lines)  # +1 keeps the summary on screen
        if rows > size.lines or cols > size.columns:
            raise ValueError(
                f"the demo needs a terminal of at least {cols} x {rows} characters, this one is "
                f"{size.columns} x {size.lines}: enlarge it, choose a smaller --width/--height, "
                "or pipe the output to get status lines"
            )


class PlainScreen:
    """Prints one status line per interval, for logs and pipes."""

    interval_s = STATUS_INTERVAL_S

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def game_started(self, cells: np.ndarray, figures: Figures) -> None:
        """Say which piece sequence the game plays, so it can be replayed."""
        self._print(f"game {figures.game} started (seed {figures.seed})")

    def show(self, cells: np.ndarray, next_piece: str | None, figures: Figures) -> None:
        """Print the figures as one line."""
        self._print("  ".join(f"{label} {value}" for label, value in figures.labelled()))

    def game_over(self, cells: np.ndarray, figures: Figures, ended_by: str) -> None:
        """Print the game's result."""
        self._print(
            f"game {figures.game} ended ({ended_by}): {figures.lines} lines, {figures.pieces} pieces, "
            f"score {figures.score}"
        )

    def close(self) -> None:
        """Nothing to restore on a plain output."""

    def _print(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()  # a pipe is block-buffered; a reader wants each line when it happens


class Pacer:
    """Holds play to a number of pieces per second; 0 means full speed."""

    def __init__(self, pieces_per_second: float) -> None:
        self.interval_s = 1.0 / pieces_per_second if pieces_per_second > 0 else 0.0
        self._due: float | None = None

    def wait(self) -> None:
        """Sleep until the next piece is due."""
        if not self.interval_s:
            return
        now = time.monotonic()
        if self._due is None or now - self._due > self.interval_s:
            self._due = now  # first piece, or after a stall: do not rush to catch up
        else:
            self._due += self.interval_s
        if self._due > now:
            time.sleep(self._due - now)


class Demo:
    """Plays games seed, seed+1, ... and feeds a screen at most once per its interval."""

    def __init__(
        self,
        player: Player,
        rules: Rules,
        screen: Screen,
        seed: int,
        preview: bool,
        pieces_per_second: float,
        max_pieces: int | None,
    ) -> None:
        self.player = player
        self.rules = rules
        self.screen = screen
        self.first_seed = seed
        self.preview = preview
        self.max_pieces = max_pieces
        self.pacer = Pacer(pieces_per_second)
        self.game = 0
        self.best_lines = 0
        self.total_pieces = 0
        self._result = GameResult()
        self._cells = np.zeros((rules.height, rules.width), dtype=np.uint8)
        self._level = 1
        self._game_started = self._last_shown = 0.0

    def play(self) -> None:
        """Play games until the piece budget is spent (forever without one)."""
        while self.max_pieces is None or self.total_pieces < self.max_pieces:
            self.game += 1
            self._result = GameResult()
            self._cells = np.zeros((self.rules.height, self.rules.width), dtype=np.uint8)
            self._level = 1
            self._game_started = self._last_shown = time.monotonic()
            self.screen.game_started(self._cells, self._figures())
            budget = None if self.max_pieces is None else self.max_pieces - self.total_pieces
            source = RandomPieces(self._seed())
            result = play_game(self.player, self.rules, source, self.preview, max_pieces=budget, on_piece=self._on_piece)
            self.screen.game_over(self._cells, self._figures(), result.ended_by)

    def summary(self) -> str:
        """One line: how many games and pieces, and the best game."""
        last_seed = self._seed() if self.game else self.first_seed
        games = f"{self.game} game" + ("" if self.game == 1 else "s")
        return (
            f"demo: {games}, {self.total_pieces} pieces, best {self.best_lines} lines "
            f"({self.player.name}, {self.rules.name} {self.rules.width} x {self.rules.height}, "
            f"seeds {self.first_seed}..{last_seed})"
        )

    def _on_piece(self, view: GameView) -> None:
        self._result, self._cells, self._level = view.result, view.cells, view.level
        self.total_pieces += 1
        self.best_lines = max(self.best_lines, view.result.lines)
        self.pacer.wait()
        now = time.monotonic()
        if now - self._last_shown >= self.screen.interval_s:
            self._last_shown = now
            self.screen.show(view.cells, view.next_piece, self._figures())

    def _seed(self) -> int:
        return self.first_seed + self.game - 1

    def _figures(self) -> Figures:
        result = self._result
        elapsed = time.monotonic() - self._game_started
        return Figures(
            game=self.game,
            seed=self._seed(),
            lines=result.lines,
            level=self._level,
            score=result.score,
            pieces=result.pieces,
            pieces_per_s=result.pieces / elapsed if elapsed > 0 else 0.0,
            best_lines=self.best_lines,
        )


def _number(kind: type[int] | type[float], low: float, low_allowed: bool) -> Callable[[str], float]:
    """An argparse type: a number of ``kind`` above ``low`` (or equal to it when ``low_allowed``)."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            what = "whole number" if kind is int else "number"
            raise argparse.ArgumentTypeError(f"expected a {what}, got {text!r}") from None
        if value < low or (value == low and not low_allowed):
            raise argparse.ArgumentTypeError(f"must be {'>=' if low_allowed else '>'} {low:g}, got {text}")
        return value

    return parse
