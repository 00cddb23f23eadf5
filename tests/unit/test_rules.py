"""Rule sets and the level, speed and score formulas, with the spec's exact numbers (STANDARD_TETRIS.md 6)."""

from __future__ import annotations

import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.rules import Rules, actual_level, earned_level, iteration_delay, point_award


@pytest.mark.parametrize(
    "lines, level",
    [(-3, 1), (0, 1), (1, 1), (10, 1), (11, 2), (20, 2), (21, 3), (81, 9), (90, 9), (91, 10), (5000, 10)],
)
def test_earned_level(lines: int, level: int) -> None:
    assert earned_level(lines) == level


def test_actual_level_is_the_higher_of_initial_and_earned() -> None:
    assert actual_level(0, 5) == 5
    assert actual_level(45, 5) == 5
    assert actual_level(51, 5) == 6
    assert actual_level(200, 1) == 10


@pytest.mark.parametrize("level, seconds", [(1, 0.50), (2, 0.45), (5, 0.30), (9, 0.10), (10, 0.05)])
def test_iteration_delay(level: int, seconds: float) -> None:
    assert iteration_delay(level) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "level, free_falls, points",
    [(1, 0, 24), (1, 1, 23), (10, 0, 51), (3, 18, 12), (1, 24, 0), (1, 40, 0)],
)
def test_point_award_never_negative(level: int, free_falls: int, points: int) -> None:
    assert point_award(level, free_falls) == points


def test_spawn_point_is_one_plus_half_the_width_on_the_top_row() -> None:
    assert (Rules().spawn_x, Rules().spawn_y) == (6, 20)
    assert (Rules(width=11, height=7).spawn_x, Rules(width=11, height=7).spawn_y) == (6, 7)
    assert Rules(width=4, height=4).spawn_x == 3


def test_clearable_rows_keep_fahey_top_row_quirk_by_default() -> None:
    assert Rules().clearable_rows == 19
    assert Rules(clear_top_row=True).clearable_rows == 20
    assert Rules(name="simplified").clearable_rows == 20


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"width": 3}, "width must be 4..200, got 3"),
        ({"width": 201}, "width must be 4..200, got 201"),
        ({"height": 3}, "height must be 4..400, got 3"),
        ({"height": 401}, "height must be 4..400, got 401"),
        ({"name": "tgm"}, "rules must be 'standard' or 'simplified'"),
    ],
)
def test_bad_rules_are_rejected_with_a_clear_error(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Rules(**kwargs)


def test_extreme_sizes_are_accepted() -> None:
    assert Rules(width=4, height=4).width == 4
    assert Rules(width=200, height=400).height == 400


@pytest.mark.parametrize("size", [(3, 20), (10, 3), (201, 20), (10, 401)])
def test_bad_board_sizes_are_rejected(size: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="outside 4 x 4 .. 200 x 400"):
        Board(*size)
