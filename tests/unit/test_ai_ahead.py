"""services/ai_ahead.py: where the closed loop reckons a piece planned ahead from, on time or late."""

from __future__ import annotations

import pytest

from gamerig.services.ai_ahead import confirm_from

STEP = 0.05  # level 10
PREDICTED = (20, 100.0)  # the spawn row, the predicted spawn


@pytest.mark.parametrize("seen_y, t_state", [(20, 100.01), (19, 100.06), (18, 100.12), (17, 100.12)])
def test_a_piece_seen_where_its_predicted_spawn_puts_it_keeps_that_start(seen_y: int, t_state: float) -> None:
    assert confirm_from(PREDICTED, seen_y, t_state, STEP) == PREDICTED


def test_a_piece_seen_higher_than_the_falls_since_its_predicted_spawn_allow_starts_from_that_frame() -> None:
    # spawned two ticks late, after the piece before it landed by gravity: still in the spawn row
    assert confirm_from(PREDICTED, 20, 100.11, STEP) == (20, 100.11)
    assert confirm_from(PREDICTED, 19, 100.16, STEP) == (19, 100.16)
