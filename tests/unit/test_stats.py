"""Benchmark statistics: confidence interval, percentiles, Fahey's tail fit and prediction."""

from __future__ import annotations

import math

import pytest

from gamerig.games.tetris import stats

# Fahey's observed tail for his two-piece player on 10 x 20: frequency(h) = 0.122 * 0.375^(h - 5).
FAHEY_R = 0.375
FAHEY_A = 0.122 / FAHEY_R**5
#: Relative frequencies below the tail (heights 0..4, mode at 4); with the tail from 5 on they sum to 1.
HEAD = [0.0148, 0.07, 0.17, 0.25, 0.30]
PLACEMENTS = 10**9


def fahey_histogram(top: int = 24) -> list[int]:
    """Counts of ``PLACEMENTS`` placements whose heights follow HEAD, then Fahey's geometric tail."""
    freqs = HEAD + [FAHEY_A * FAHEY_R**h for h in range(len(HEAD), top + 1)]
    assert math.isclose(sum(freqs), 1.0, abs_tol=1e-3)
    return [round(PLACEMENTS * f) for f in freqs]


def test_ci95_is_1_96_sample_sd_over_root_n() -> None:
    values = [1, 2, 3, 4, 5]  # sample sd = sqrt(2.5)
    assert stats.ci95_half_width(values) == pytest.approx(1.96 * math.sqrt(2.5) / math.sqrt(5))


def test_ci95_of_one_value_is_none() -> None:
    assert stats.ci95_half_width([42]) is None
    assert stats.summarize([42]).ci95 is None


def test_summarize_reports_mean_median_and_range() -> None:
    summary = stats.summarize([10, 0, 30, 20])
    assert (summary.n, summary.mean, summary.median, summary.minimum, summary.maximum) == (4, 15, 15, 0, 30)
    with pytest.raises(ValueError, match="empty"):
        stats.summarize([])


def test_percentile_interpolates_between_ranks() -> None:
    assert stats.percentile([10, 20, 30, 40], 25) == pytest.approx(17.5)  # rank 0.75
    assert stats.percentile(list(range(1, 101)), 99) == pytest.approx(99.01)
    assert stats.percentile([7.0], 50) == 7.0
    assert stats.percentile([], 50) is None
    with pytest.raises(ValueError, match="0..100"):
        stats.percentile([1, 2], 101)


def test_tail_fit_recovers_a_and_r_of_a_geometric_tail() -> None:
    fit = stats.fit_tail(fahey_histogram())
    assert fit is not None
    assert fit.r == pytest.approx(FAHEY_R, rel=1e-3)
    assert fit.a == pytest.approx(FAHEY_A, rel=1e-2)
    assert fit.frequency(5) == pytest.approx(0.122, rel=1e-2)


def test_tail_fit_uses_only_bins_above_the_mode_with_enough_placements() -> None:
    histogram = fahey_histogram()
    # 10^9 * 0.122 * 0.375^15 = 50 placements at height 20; height 21 has 19, under the threshold.
    fit = stats.fit_tail(histogram)
    assert fit is not None and fit.heights == tuple(range(5, 21))
    # A sparse bin far off the line does not move the fit.
    histogram[22] = 29
    refit = stats.fit_tail(histogram)
    assert refit is not None and refit.r == pytest.approx(fit.r)


def test_prediction_is_one_over_the_tail_frequency_at_the_end_height() -> None:
    prediction = stats.predict_game(fahey_histogram(), end_height=21, lines_per_piece=0.4)
    assert prediction is not None
    # Fahey's worked example: 0.122 * 0.375^(21 - 5) = 1.8e-8, so about 5.3e7 pieces.
    assert prediction.pieces == pytest.approx(1 / (0.122 * FAHEY_R**16), rel=2e-2)
    assert prediction.pieces == pytest.approx(5.3e7, rel=5e-2)
    assert prediction.lines == pytest.approx(0.4 * prediction.pieces)
    assert prediction.end_height == 21


def test_a_higher_end_height_predicts_longer_games() -> None:
    low = stats.predict_game(fahey_histogram(), end_height=19, lines_per_piece=0.4)
    high = stats.predict_game(fahey_histogram(), end_height=21, lines_per_piece=0.4)
    assert low is not None and high is not None
    assert high.pieces == pytest.approx(low.pieces / FAHEY_R**2, rel=1e-2)


@pytest.mark.parametrize(
    "histogram",
    [
        [],
        [0, 0, 0],
        [10, 100, 40, 5],  # one tail bin with enough placements
        [0, 500, 29, 29, 29],  # tail bins too sparse
    ],
)
def test_no_fit_and_no_prediction_with_fewer_than_two_usable_bins(histogram: list[int]) -> None:
    assert stats.fit_tail(histogram) is None
    assert stats.predict_game(histogram, end_height=5, lines_per_piece=0.4) is None


def test_no_prediction_when_the_tail_does_not_decay() -> None:
    histogram = [0, 1000, 40, 60, 90]
    fit = stats.fit_tail(histogram)
    assert fit is not None and fit.r > 1
    assert stats.predict_game(histogram, end_height=6, lines_per_piece=0.4) is None
