"""services/ai_ahead.py's check before a piece planned ahead is adopted: it must show the keys of
its part that had acted by the frame (a spawn a tick or two late can look on time, and then its
first keys went to the piece before it or between the two)."""

from __future__ import annotations

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import FallingPiece
from gamerig.services.ai_ahead import shows_keys

SPAWNED_O = FallingPiece("O", 1, 6, 20)
PRESSED = [("7-33", "left", 1.00), ("7-33", "left", 1.06), ("7-32", "right", 0.90)]


def test_a_piece_where_its_acted_keys_took_it_is_adopted() -> None:
    assert shows_keys(Board(10, 20), SPAWNED_O, FallingPiece("O", 1, 4, 18), PRESSED, "7-33", acted_by=1.2)
    assert shows_keys(Board(10, 20), SPAWNED_O, FallingPiece("O", 1, 5, 19), PRESSED, "7-33", acted_by=1.03)  # one had acted
    assert shows_keys(Board(10, 20), SPAWNED_O, SPAWNED_O, PRESSED, "7-33", acted_by=0.99)  # none yet


def test_a_piece_still_in_its_spawn_column_after_its_keys_acted_is_planned_from_sight() -> None:
    assert not shows_keys(Board(10, 20), SPAWNED_O, FallingPiece("O", 1, 6, 18), PRESSED, "7-33", acted_by=1.2)
