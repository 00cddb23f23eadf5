"""Statistics for benchmarks: summaries of game results and Fahey's game-length prediction.

Pure functions on numbers, no I/O, so the benchmark, the tuner and the tests share them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: z value of a two-sided 95% interval under the normal approximation.
Z95 = 1.96
#: Fewest placements a histogram bin needs to take part in the tail fit: rarer
#: bins are mostly sampling noise, and log(count) of a noisy small count is biased.
MIN_TAIL_COUNT = 30


@dataclass(frozen=True)
class Summary:
    """Mean, spread and range of a sample (e.g. lines per game)."""

    n: int
    mean: float
    median: float
    minimum: float
    maximum: float
    ci95: float | None  # half-width of the 95% interval of the mean; None for a single value


def ci95_half_width(values: Sequence[float]) -> float | None:
    """Half-width of the 95% confidence interval of the mean: 1.96 * s / sqrt(n).

    ``s`` is the sample standard deviation (n - 1 in the denominator); the normal
    approximation is fine for the tens to hundreds of games a benchmark plays.
    One value has no spread to estimate, so the answer is None.
    """
    n = len(values)
    if n < 2:
        return None
    return Z95 * float(np.std(values, ddof=1)) / math.sqrt(n)


def summarize(values: Sequence[float]) -> Summary:
    """Mean, median, min, max and 95% CI half-width of a non-empty sample."""
    if len(values) == 0:
        raise ValueError("cannot summarize an empty sample")
    data = np.asarray(values, dtype=np.float64)
    return Summary(
        n=len(data),
        mean=float(data.mean()),
        median=float(np.median(data)),
        minimum=float(data.min()),
        maximum=float(data.max()),
        ci95=ci95_half_width(data),
    )


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float | None:
    """The q-th percentile (0..100), interpolating linearly between the two nearest ranks.

    That is numpy's default ("linear") method: rank q/100 * (n - 1) of the sorted
    values. None for an empty sample.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be 0..100, got {q}")
    if len(values) == 0:
        return None
    return float(np.percentile(values, q))


@dataclass(frozen=True)
class TailFit:
    """The exponential tail of a pile-height histogram: frequency(h) = a * r**h."""

    a: float
    r: float
    heights: tuple[int, ...]  # the bins the fit used

    def frequency(self, height: int) -> float:
        """Fitted relative frequency of placements leaving the pile ``height`` rows high."""
        return self.a * self.r**height


def fit_tail(histogram: Sequence[int], min_count: int = MIN_TAIL_COUNT) -> TailFit | None:
    """Fit Fahey's exponential tail to a histogram of pile heights after each placement.

    ``histogram[h]`` counts placements after which the pile was ``h`` rows high.
    Relative frequencies are counts divided by all placements.  The tail is every
    bin above the mode that holds at least ``min_count`` placements; a straight
    line is fitted to log(frequency) against h by ordinary least squares, so
    log a is the intercept and log r the slope.  None when fewer than two bins
    qualify (a line needs two points).
    """
    counts = np.asarray(histogram, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        return None
    mode = int(np.argmax(counts))
    heights = [h for h in range(mode + 1, len(counts)) if counts[h] >= min_count]
    if len(heights) < 2:
        return None
    log_freq = np.log(counts[heights] / total)
    slope, intercept = np.polyfit(np.asarray(heights, dtype=np.float64), log_freq, 1)
    return TailFit(a=float(math.exp(intercept)), r=float(math.exp(slope)), heights=tuple(heights))


@dataclass(frozen=True)
class Prediction:
    """Fahey's long-run prediction from a height histogram."""

    fit: TailFit
    end_height: int
    pieces: float  # predicted mean game length in placements
    lines: float  # predicted mean lines per game


def predict_game(
    histogram: Sequence[int], end_height: int, lines_per_piece: float, min_count: int = MIN_TAIL_COUNT
) -> Prediction | None:
    """Predict the mean game length from the tail of the pile-height histogram (Fahey's method).

    Game length is close to geometric: if each placement ends the game with
    probability p, games last 1/p placements on average.  Fahey takes p as the
    tail fit's frequency at ``end_height``, the pile height at which the game
    ends (which a long run almost never reaches, hence the extrapolation), so
    pieces = 1 / (a * r**end_height) and lines = pieces * ``lines_per_piece``
    (the observed lines per placement).  None when the tail cannot be fitted or
    does not decay (r >= 1: then the game is not ended by rare excursions of
    the pile and the model does not apply).
    """
    fit = fit_tail(histogram, min_count)
    if fit is None or fit.r >= 1:
        return None
    pieces = 1.0 / fit.frequency(end_height)
    return Prediction(fit=fit, end_height=end_height, pieces=pieces, lines=pieces * lines_per_piece)
