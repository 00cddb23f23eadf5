"""The ai's level from the fall step its frames show, and its place in the game model."""

from __future__ import annotations

import random
from collections.abc import Callable

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.rules import Rules, iteration_delay
from gamerig.services.ai_fall_step import MIN_SAMPLES, FallStep
from gamerig.services.ai_model import GameModel

FRAME_S = 1 / 60


def _fall(see_fall: Callable[[str, int, float], None], piece: str, rows: range, t0: float, level: int, jitter: random.Random) -> float:
    """``piece`` seen falling through ``rows`` at ``level``'s step, each picture up to two frames late."""
    t = t0
    for row in rows:
        t += iteration_delay(level)
        see_fall(piece, row, t + jitter.choice((0.0, FRAME_S, 2 * FRAME_S)))
    return t


def test_the_level_is_the_one_whose_step_the_falls_show_despite_late_pictures() -> None:
    step, jitter = FallStep(), random.Random(1)
    t = _fall(step.see_fall, "T", range(19, 19 - MIN_SAMPLES, -1), 0.0, 8, jitter)  # MIN_SAMPLES pictures: one interval short
    assert step.level() is None
    _fall(step.see_fall, "T", range(19 - MIN_SAMPLES, 10, -1), t, 8, jitter)
    assert step.level() == 8


def test_at_level_10_late_pictures_make_no_estimate_rather_than_a_wrong_one() -> None:
    step, t = FallStep(), 0.0
    for row, late_frames in zip(range(19, 5, -1), (0, 2, 0, 2, 1, 2, 0, 2, 0, 2, 0, 2, 0, 2)):
        t += iteration_delay(10)
        step.see_fall("I", row, t + late_frames * FRAME_S)
    assert step.level() is None


def test_falls_of_different_pieces_or_with_a_missed_row_are_no_sample() -> None:
    step = FallStep()
    t = 0.0
    for piece in "TJLSZOI" * 2:  # one fall picture per piece: never two of one piece in a row
        t += 0.15
        step.see_fall(piece, 18, t)
    for row in range(19, 5, -2):  # every other row: a tick between them was not seen
        t += 0.3
        step.see_fall("I", row, t)
    assert step.level() is None


def test_a_new_level_takes_over_within_a_few_falls() -> None:
    step, jitter = FallStep(), random.Random(2)
    t = _fall(step.see_fall, "L", range(19, 5, -1), 0.0, 7, jitter)
    assert step.level() == 7
    _fall(step.see_fall, "O", range(19, 5, -1), t, 8, jitter)
    assert step.level() == 8


def test_where_the_lines_count_a_new_level_the_falls_start_again() -> None:
    model = GameModel(Rules("standard", 10, 20), initial_level=5, level_from_screen=True)
    model.lines = 49
    t = _fall(model.fall_step.see_fall, "S", range(19, 5, -1), 0.0, 5, random.Random(4))
    assert model.level == 5
    model.commit(model.board, 2)  # 51 lines: level 6 by the count, at once
    assert model.level == 6
    _fall(model.fall_step.see_fall, "Z", range(19, 5, -1), t, 5, random.Random(5))  # but the game still falls at level 5
    assert model.level == 5


def test_the_falls_of_the_piece_whose_lines_raised_the_level_do_not_bring_the_old_level_back() -> None:
    model = GameModel(Rules("standard", 10, 20), initial_level=5, level_from_screen=True)
    model.lines = 49

    def planned_at(level: int) -> Callable[[str, int, float], None]:
        return lambda piece, row, t: model.see_fall(piece, row, t, planned_level=level)

    t = _fall(planned_at(5), "S", range(19, 12, -1), 0.0, 5, random.Random(4))
    assert model.level == 5
    model.commit(model.board, 2)  # the S will make two lines: level 6 by the count
    t = _fall(planned_at(5), "S", range(12, 2, -1), t, 5, random.Random(5))  # it falls on at level 5's step
    assert model.level == 6
    _fall(planned_at(6), "Z", range(19, 5, -1), t, 6, random.Random(6))
    assert model.level == 6


def test_the_model_prefers_the_screen_then_the_falls_then_the_lines() -> None:
    model = GameModel(Rules("standard", 10, 20), initial_level=5, level_from_screen=True)
    model.lines = 55  # the ai's own count says level 6
    assert model.level == 6
    _fall(model.fall_step.see_fall, "S", range(19, 5, -1), 0.0, 8, random.Random(3))
    assert model.level == 8
    model.see_level(9)
    assert model.level == 9
    model.new_game()
    model.screen_level = None
    assert model.level == 5
    _fall(model.fall_step.see_fall, "S", range(19, 5, -1), 0.0, 3, random.Random(6))
    assert model.level == 5  # a game never runs below its initial level


def test_a_piece_forgotten_before_it_landed_takes_its_lines_back_from_the_count() -> None:
    model = GameModel(Rules("standard", 10, 20), initial_level=5, level_from_screen=False)
    model.lines = 59
    model.commit(Board(10, 20), 2)  # planned to make two lines: 61, level 7 by the count
    assert model.level == 7
    model.withdraw(2)  # forgotten at a halt, to be planned again once seen
    assert (model.lines, model.pieces, model.level) == (59, 0, 6)
    model.commit(Board(10, 20), 2)
    assert (model.lines, model.pieces, model.level) == (61, 1, 7)
