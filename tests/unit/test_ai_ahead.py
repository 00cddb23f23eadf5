"""services/ai_ahead.py: where the closed loop reckons a piece planned ahead from, on time or late,
and whether a piece seen late is on its keys' way."""

from __future__ import annotations

import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import FallingPiece
from gamerig.games.tetris.rules import Rules
from gamerig.services.ai_ahead import confirm_from, on_its_path

STEP = 0.05  # level 10
PREDICTED = (20, 100.0)  # the spawn row, the predicted spawn


@pytest.mark.parametrize("seen_y, t_state", [(20, 100.01), (19, 100.06), (18, 100.12), (17, 100.12)])
def test_a_piece_seen_where_its_predicted_spawn_puts_it_keeps_that_start(seen_y: int, t_state: float) -> None:
    assert confirm_from(PREDICTED, seen_y, t_state, STEP) == PREDICTED


def test_a_piece_seen_higher_than_the_falls_since_its_predicted_spawn_allow_starts_from_that_frame() -> None:
    # spawned two ticks late, after the piece before it landed by gravity: still in the spawn row
    assert confirm_from(PREDICTED, 20, 100.11, STEP) == (20, 100.11)
    assert confirm_from(PREDICTED, 19, 100.16, STEP) == (19, 100.16)


RULES = Rules()
SPAWNED_J = FallingPiece("J", 1, RULES.spawn_x, RULES.spawn_y)
KEYS = ("right", "right", "rotate", "drop")  # from the spawn: (1, x+1), (1, x+2), (2, x+2)


@pytest.mark.parametrize("orientation, dx", [(1, 0), (1, 1), (1, 2), (2, 2)])
def test_a_piece_seen_where_some_of_its_first_keys_lead_is_on_its_path(orientation: int, dx: int) -> None:
    seen = FallingPiece("J", orientation, RULES.spawn_x + dx, RULES.spawn_y - 3)  # seen late, rows down
    assert on_its_path(Board(10, 20), SPAWNED_J, KEYS, seen)


@pytest.mark.parametrize("orientation, dx", [(2, 0), (2, 1), (1, -1), (1, 3), (3, 2)])
def test_a_piece_its_keys_cannot_have_led_there_is_off_its_path(orientation: int, dx: int) -> None:
    # (2, x+1): its first right went astray before it spawned; the others no prefix of the keys gives
    seen = FallingPiece("J", orientation, RULES.spawn_x + dx, RULES.spawn_y - 3)
    assert not on_its_path(Board(10, 20), SPAWNED_J, KEYS, seen)
