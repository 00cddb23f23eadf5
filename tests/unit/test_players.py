"""Players: what they answer, how they use the preview, and the anytime budget."""

from __future__ import annotations

import dataclasses

import pytest

from gamerig.daemon.player_config import load_player
from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import Game, collapse_full_rows
from gamerig.games.tetris.headless import play_game
from gamerig.games.tetris.placements import enumerate_placements
from gamerig.games.tetris.players import Player, PlayerSpec
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.sequence import RandomPieces

import reference_features as reference

RULES = Rules(width=10, height=20)

# A pile with a 4-deep well at column 10 and a bump on the left.
WELL_BOARD = Board.from_rows(["." * 10] * 15 + ["##........"] + ["#########."] * 4)


def two_piece(name: str) -> PlayerSpec:
    return dataclasses.replace(load_player(name), lookahead=2)


def test_dellacherie_takes_the_tetris_with_an_i() -> None:
    decision = Player(load_player("dellacherie"), RULES).choose(WELL_BOARD, "I")
    assert decision.placement is not None
    assert sorted(decision.placement.cells()) == [(10, 1), (10, 2), (10, 3), (10, 4)]
    assert decision.placement.keys == ("rotate",) + ("right",) * 4 + ("drop",)
    assert decision.complete and decision.elapsed_s >= 0 and decision.evaluated == len(enumerate_placements(WELL_BOARD, "I", RULES))


def test_the_chosen_placement_is_one_of_the_rules_placements() -> None:
    player = Player(load_player("bcts"), RULES)
    for piece in "OISZLJT":
        decision = player.choose(WELL_BOARD, piece)
        assert decision.placement in enumerate_placements(WELL_BOARD, piece, RULES)


def test_a_blocked_spawn_gives_no_placement() -> None:
    board = Board.from_rows(["....##...."] + ["." * 10] * 19)
    decision = Player(load_player("dellacherie"), RULES).choose(board, "T")
    assert decision.placement is None


def test_a_one_piece_player_ignores_the_preview() -> None:
    player = Player(load_player("dellacherie"), RULES)
    with_next = player.choose(WELL_BOARD, "L", "I")
    assert with_next.placement == player.choose(WELL_BOARD, "L").placement
    assert with_next.lookahead == 1


def test_a_two_piece_player_uses_the_preview_only_when_shown() -> None:
    player = Player(two_piece("dellacherie"), RULES)
    assert player.choose(WELL_BOARD, "L").lookahead == 1
    with_next = player.choose(WELL_BOARD, "L", "I")
    assert with_next.lookahead == 2 and with_next.complete
    assert with_next.placement in enumerate_placements(WELL_BOARD, "L", RULES)


def test_knowing_the_next_piece_changes_the_choice_when_it_matters() -> None:
    # With an I coming next, an O should keep the well open for the I's four rows;
    # whatever the one-piece answer is, the two-piece player must not fill the well.
    player = Player(two_piece("dellacherie"), RULES)
    decision = player.choose(WELL_BOARD, "O", "I")
    assert all(x != 10 for x, _ in decision.placement.cells())


def test_an_exhausted_budget_still_answers_with_the_one_piece_choice() -> None:
    ticks = iter(range(1000))
    player = Player(two_piece("dellacherie"), RULES, clock=lambda: float(next(ticks)))
    decision = player.choose(WELL_BOARD, "T", "I", budget_s=0.5)
    one_piece = Player(load_player("dellacherie"), RULES).choose(WELL_BOARD, "T")
    assert not decision.complete
    assert decision.placement is not None
    # Only the first chunk (best one-piece candidates first) was refined.
    assert decision.evaluated < one_piece.evaluated * 2


def test_a_wrong_board_size_is_rejected() -> None:
    with pytest.raises(ValueError, match="10 x 10"):
        Player(load_player("dellacherie"), Rules(width=10, height=10)).choose(Board(10, 20), "T")


def test_headless_play_equals_pressing_the_keys_in_the_engine() -> None:
    """The benchmark's shortcut (apply the placement) and the real game (press keys) agree."""
    player = Player(load_player("dellacherie"), Rules(width=8, height=12))
    rules = player.rules
    fast = play_game(player, rules, RandomPieces(7), max_pieces=300)
    game = Game(rules, RandomPieces(7))
    while not game.over and game.pieces < 300:
        game.iterate()  # spawn
        if game.over:
            break
        decision = player.choose(game.board, game.piece.kind)
        game.iterate()  # fall one row, then the keys
        for key in decision.placement.keys:
            game.press(key)
    assert (game.lines, game.pieces) == (fast.lines, fast.pieces)
    assert fast.score == game.score


def test_the_expectation_over_next_pieces_runs_only_near_the_top() -> None:
    spec = dataclasses.replace(load_player("dellacherie"), expect_top=4, expect_rows=8)
    player = Player(spec, RULES)
    low = player.choose(WELL_BOARD, "T")
    high_board = Board.from_rows(["." * 10] * 6 + ["#" * 4 + "." * 5 + "#"] * 14)
    high = player.choose(high_board, "T")
    assert (low.lookahead, high.lookahead) == (1, 2)
    assert not high.used_preview and high.placement in enumerate_placements(high_board, "T", RULES)
    # Four candidates were re-valued on top of the one-piece pass.
    assert high.evaluated == len(enumerate_placements(high_board, "T", RULES)) + 4


def test_the_expectation_is_the_mean_best_reply_over_the_seven_pieces() -> None:
    board = Board.from_rows(["." * 10] * 4 + ["##.####.##"] * 3 + ["#########."] * 13)
    spec = dataclasses.replace(load_player("dellacherie"), expect_top=40)
    decision = Player(spec, RULES).choose(board, "I")
    chosen = decision.placement
    # Recompute its value from public parts: the move terms, then each piece's best one-piece reply.
    after = board.copy()
    for cell in chosen.cells():
        after[cell] = 1
    moves = reference.placement_features(board, "I", chosen.orientation, chosen.x, chosen.y, RULES)
    collapse_full_rows(after, RULES.clearable_rows)
    one_piece = Player(load_player("dellacherie"), RULES)
    replies = [one_piece.choose(after, piece).rating for piece in "OISZLJT"]
    expected = -moves["landing_height"] + moves["eroded_cells"] + sum(replies) / 7
    assert decision.rating == pytest.approx(expected)
