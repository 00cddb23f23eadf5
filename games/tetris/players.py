"""Players: linear evaluators over the kernel's features, one-piece or two-piece, anytime.

A player is data (:class:`PlayerSpec`: weights by feature name, tie-break,
look-ahead) plus the search in :class:`Player`.  Specs are loaded from YAML
under ``configs/players/`` by :mod:`gamerig.daemon.player_config`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from . import kernel
from .board import Board
from .placements import Placement, kind_of, placement_from_row
from .rules import Rules

Clock = Callable[[], float]
TieBreak = Literal["priority", "first"]

FEATURE_NAMES = kernel.FEATURE_NAMES
#: First placements re-valued per kernel call in the two-ply searches: small enough that
#: a time budget is checked often, large enough that call overhead stays negligible.
REFINE_CHUNK = 6


@dataclass(frozen=True)
class AtSpeed:
    """How a player values boards where the game falls fast: from ``from_level`` up, each weight
    named in ``weight_scales`` is multiplied by its scale.  At Standard Tetris's level 10 a piece
    falls a row per 50 ms, and the higher the pile the fewer keys reach a place before it lands."""

    from_level: int
    weight_scales: Mapping[str, float]


@dataclass(frozen=True)
class PlayerSpec:
    """What defines a player: its weights, how it breaks ties, and how far it looks."""

    name: str
    weights: Mapping[str, float]
    tie_break: TieBreak = "first"
    lookahead: int = 1  # 2: use the next piece when the game shows it
    description: str = ""
    #: Without a preview, re-value this many of the best placements by the expected
    #: best reply over the 7 equally likely next pieces (0: never) ...
    expect_top: int = 0
    #: ... when the pile reaches within this many rows of the top (where a wrong
    #: move can end a Standard Tetris game); 0 means on every board.
    expect_rows: int = 0
    #: Weights for fast levels, where a player steers pieces against gravity (the rig's ai).
    at_speed: AtSpeed | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.weights) - set(FEATURE_NAMES))
        if unknown:
            raise ValueError(f"player {self.name!r}: unknown features {unknown}; known: {list(FEATURE_NAMES)}")
        if self.tie_break not in ("priority", "first"):
            raise ValueError(f"player {self.name!r}: tie_break must be 'priority' or 'first'")
        if self.lookahead not in (1, 2):
            raise ValueError(f"player {self.name!r}: lookahead must be 1 or 2")
        if self.expect_top < 0 or self.expect_rows < 0:
            raise ValueError(f"player {self.name!r}: expect_top and expect_rows must be >= 0")
        if self.at_speed is not None:
            unknown = sorted(set(self.at_speed.weight_scales) - set(FEATURE_NAMES))
            if unknown:
                raise ValueError(f"player {self.name!r}: at_speed scales unknown features {unknown}")

    def at_level(self, level: int) -> PlayerSpec:
        """The spec a game at ``level`` is played with: its weights scaled by ``at_speed`` from
        that spec's level up."""
        if self.at_speed is None or level < self.at_speed.from_level:
            return self
        scales = self.at_speed.weight_scales
        return replace(self, weights={k: v * scales.get(k, 1.0) for k, v in self.weights.items()}, at_speed=None)

    def weight_vector(self) -> np.ndarray:
        """Weights in kernel feature order (absent features weigh 0)."""
        return np.array([float(self.weights.get(n, 0.0)) for n in FEATURE_NAMES], dtype=np.float64)


@dataclass(frozen=True)
class Decision:
    """A player's answer: the placement (None when the game is lost) and how it was found."""

    placement: Placement | None
    rating: float
    elapsed_s: float
    evaluated: int  # placements rated
    complete: bool  # False when the time budget ran out before the search finished
    lookahead: int = 1  # plies searched: 2 with the preview or the expectation over next pieces
    used_preview: bool = False


@dataclass
class _Workspace:
    """Preallocated buffers for one board size, so a decision allocates nothing."""

    out: np.ndarray
    out2: np.ndarray
    ratings: np.ndarray
    ratings2: np.ndarray
    scratch: np.ndarray
    after_first: np.ndarray
    heights: np.ndarray
    base_heights: np.ndarray
    values: np.ndarray
    feats: np.ndarray = field(default_factory=lambda: np.zeros(kernel.N_FEATURES))

    @classmethod
    def for_board(cls, width: int, height: int) -> _Workspace:
        return cls(
            out=np.zeros((kernel.MAX_CANDIDATES, 3), dtype=np.int64),
            out2=np.zeros((kernel.MAX_CANDIDATES, 3), dtype=np.int64),
            ratings=np.zeros(kernel.MAX_CANDIDATES, dtype=np.float64),
            ratings2=np.zeros(kernel.MAX_CANDIDATES, dtype=np.float64),
            scratch=np.zeros((height, width), dtype=np.uint8),
            after_first=np.zeros((height, width), dtype=np.uint8),
            heights=np.zeros(width, dtype=np.int64),
            base_heights=np.zeros(width, dtype=np.int64),
            values=np.zeros(kernel.MAX_CANDIDATES, dtype=np.float64),
        )


class Player:
    """Chooses placements for one rule set.

    ``choose`` is anytime: with a budget it returns the best placement found
    when the budget runs out (the one-piece answer is always complete first,
    then the two-piece search refines it, best first).
    """

    def __init__(self, spec: PlayerSpec, rules: Rules, clock: Clock = time.perf_counter) -> None:
        self.spec = spec
        self.rules = rules
        self.clock = clock
        self.weights = spec.weight_vector()
        self.use_priority = spec.tie_break == "priority"
        self._standard = rules.name == "standard"
        self._clearable = rules.clearable_rows
        self._ws = _Workspace.for_board(rules.width, rules.height)

    @property
    def name(self) -> str:
        """The spec's name."""
        return self.spec.name

    def choose(
        self,
        board: Board | np.ndarray,
        piece: str,
        next_piece: str | None = None,
        budget_s: float | None = None,
    ) -> Decision:
        """Pick a placement for ``piece``; ``next_piece`` is used only by two-piece players."""
        start = self.clock()
        cells = board.cells if isinstance(board, Board) else board
        if cells.shape != (self.rules.height, self.rules.width):
            raise ValueError(f"board is {cells.shape[1]} x {cells.shape[0]}, player expects {self.rules.width} x {self.rules.height}")
        ws = self._ws
        n, best, best_rating = kernel.rate_candidates(
            cells, kind_of(piece), self._standard, self._clearable, self.weights,
            self.use_priority, ws.out, ws.ratings, ws.scratch, ws.base_heights, ws.heights, ws.feats,
        )
        evaluated = max(n, 0)
        if best < 0 or best_rating == kernel.NEG_INF:
            return Decision(None, kernel.NEG_INF, self.clock() - start, evaluated, True)
        complete = True
        deadline = None if budget_s is None else start + budget_s
        used_preview = next_piece is not None and self.spec.lookahead == 2
        if used_preview:
            next_kind, limit = kind_of(next_piece), n
        elif self._in_expectation_zone(cells):
            next_kind, limit = kernel.ANY_PIECE, self.spec.expect_top
        else:
            next_kind, limit = None, 0
        if next_kind is not None:
            best, best_rating, extra, complete = self._refine(cells, kind_of(piece), next_kind, n, limit, best, deadline)
            evaluated += extra
        placement = placement_from_row(piece, ws.out[best], self.rules)
        lookahead = 1 if next_kind is None else 2
        return Decision(placement, float(best_rating), self.clock() - start, evaluated, complete, lookahead, used_preview)

    def _in_expectation_zone(self, cells: np.ndarray) -> bool:
        """Whether to weigh the unknown next piece: enabled and the pile is high enough."""
        if not self.spec.expect_top:
            return False
        if not self.spec.expect_rows:
            return True
        return kernel.column_heights(cells, self._ws.heights) > self.rules.height - self.spec.expect_rows

    def _refine(
        self, cells: np.ndarray, kind: int, next_kind: int, n: int, limit: int, one_piece_best: int,
        deadline: float | None,
    ) -> tuple[int, float, int, bool]:
        """Re-value the ``limit`` best one-piece placements by the next piece's reply; anytime.

        ``next_kind`` is the previewed piece, or ``kernel.ANY_PIECE`` for the
        expectation over all seven.  Placements are valued best-first, a chunk
        at a time, so when the budget runs out the most promising ones are done.
        """
        ws = self._ws
        ratings = ws.ratings[:n]
        order = np.argsort(-ratings, kind="stable")
        order = order[ratings[order] > kernel.NEG_INF][:limit]
        values = ws.values
        done = 0
        complete = True
        while done < len(order):
            if deadline is not None and done and self.clock() >= deadline:
                complete = False
                break
            stop = min(done + REFINE_CHUNK, len(order))
            kernel.reply_values(
                cells, kind, next_kind, self._standard, self._clearable, self.weights,
                ws.out, order, done, stop, values, ws.out2, ws.ratings2, ws.after_first, ws.scratch,
                ws.base_heights, ws.heights, ws.feats,
            )
            done = stop
        best, best_value, best_prio = one_piece_best, kernel.NEG_INF, -(1 << 30)
        for i in order[:done]:
            value = values[i]
            prio = kernel.priority(self.rules.width, ws.out[i, 0], ws.out[i, 1]) if self.use_priority else 0
            if value > best_value or (value == best_value and prio > best_prio):
                best, best_value, best_prio = int(i), float(value), prio
        if best_value == kernel.NEG_INF:  # every reply loses: keep the one-piece choice
            return one_piece_best, float(ratings[one_piece_best]), done, complete
        return best, best_value, done, complete
