"""services/ai_state.py: which frames show, in the preview, the piece after the one in play."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gamerig.daemon.player_config import load_player
from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import FallingPiece
from gamerig.games.tetris.rules import Rules
from gamerig.services.ai_planner import Planner
from gamerig.services.ai_settings import AiSettings
from gamerig.services.ai_state import PieceInPlay

KEY_LATENCY_S = 0.03
DROP_DOWN_T = 100.0


@pytest.fixture(scope="module")
def z_in_play() -> PieceInPlay:
    rules = Rules()
    planner = Planner(AiSettings(rules=rules, initial_level=10, preview=True, player=load_player("gamerig"), key_interval_s=0.06), clock=lambda: 0.0)
    board, start = Board(10, 20), FallingPiece("Z", 1, rules.spawn_x, rules.spawn_y - 1)
    decision = planner.decide(board, start, None, 10, 0.0)
    assert decision is not None
    return PieceInPlay(root="1-1", piece="Z", first_seq=10, t_seen=99.5, level=10, board_before=board, placement=decision.placement, plan=decision.plan)


def test_until_its_drop_goes_down_every_frame_previews_the_piece_after_it(z_in_play: PieceInPlay) -> None:
    assert z_in_play.previews_its_next(DROP_DOWN_T + 5.0, KEY_LATENCY_S)


def test_a_frame_taken_before_the_drop_acted_previews_the_piece_after_it(z_in_play: PieceInPlay) -> None:
    dropped = replace(z_in_play, dropped_at=DROP_DOWN_T)
    assert dropped.previews_its_next(DROP_DOWN_T + KEY_LATENCY_S - 0.001, KEY_LATENCY_S)


@pytest.mark.parametrize("after_s", [KEY_LATENCY_S, KEY_LATENCY_S + 0.05, 1.0])
def test_a_frame_taken_once_the_drop_acted_may_preview_the_piece_after_the_next(z_in_play: PieceInPlay, after_s: float) -> None:
    # the next piece may have spawned: its preview names the piece after it
    dropped = replace(z_in_play, dropped_at=DROP_DOWN_T)
    assert not dropped.previews_its_next(DROP_DOWN_T + after_s, KEY_LATENCY_S)
