"""When the ai presses new_game after a game over (services/ai_new_game.py)."""

from __future__ import annotations

from gamerig.services.ai_new_game import RETRY_S, NextGame


def test_the_press_is_due_once_the_last_board_has_shown_long_enough() -> None:
    next_game = NextGame(after_s=5.0)
    assert not next_game.due(100.0)  # a game is on
    next_game.game_over(100.0)
    next_game.game_over(103.0)  # the same game over reported again does not put it off
    assert not next_game.due(104.9) and next_game.due(105.0)


def test_a_press_that_shows_no_new_game_is_repeated_and_a_new_piece_ends_it() -> None:
    next_game = NextGame(after_s=2.0)
    next_game.game_over(10.0)
    next_game.pressed(12.0)
    assert not next_game.due(12.0 + RETRY_S - 0.01) and next_game.due(12.0 + RETRY_S)
    next_game.game_on()
    assert not next_game.due(1e9) and next_game.presses == 1


def test_without_a_delay_configured_new_game_is_never_pressed() -> None:
    next_game = NextGame(after_s=None)
    next_game.game_over(0.0)
    assert not next_game.due(1e9)
