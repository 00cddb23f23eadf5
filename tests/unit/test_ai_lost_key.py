"""services/ai_lost_key.py: a pose that only a lost key explains, against a lagging frame's pose."""

from __future__ import annotations

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import FallingPiece
from gamerig.services.ai_lost_key import end_if_one_key_lost, pose_since_lost_drop

EMPTY = Board(10, 20)
START = FallingPiece("T", 1, 6, 20)  # in its spawn row: a turn would reach above the well
KEYS = ("left", "left", "left", "rotate", "rotate")  # to orientation 3, column 3


def test_poses_along_the_keys_way_are_no_evidence() -> None:
    for orientation, x in ((1, 6), (1, 5), (1, 3), (2, 3), (3, 3)):
        assert end_if_one_key_lost(EMPTY, START, KEYS, FallingPiece("T", orientation, x, 18)) is None


def test_a_lost_move_shows_once_a_turn_after_it_does() -> None:
    # one column short, already turned: no first keys lead there, one lost left does
    end = end_if_one_key_lost(EMPTY, START, KEYS, FallingPiece("T", 2, 4, 17))
    assert end == FallingPiece("T", 3, 4, 17)  # the second turn is still to come: it ends turned twice


def test_a_lost_turn_shows_once_a_move_after_it_does() -> None:
    keys = ("rotate", "left", "left")
    end = end_if_one_key_lost(EMPTY, FallingPiece("T", 1, 6, 17), keys, FallingPiece("T", 1, 5, 16))
    assert end == FallingPiece("T", 1, 4, 16)


def test_a_pose_no_single_lost_key_explains_is_left_to_the_closed_loop() -> None:
    assert end_if_one_key_lost(EMPTY, START, KEYS, FallingPiece("T", 4, 6, 17)) is None  # turned the other way
    assert end_if_one_key_lost(EMPTY, START, KEYS, FallingPiece("T", 2, 5, 17)) is None  # two lefts lost


def test_keys_are_applied_where_the_part_began_not_next_to_a_stack_below() -> None:
    # a column 6 cells high at x=6: the piece moved left above it, and has fallen beside it since
    board = Board.from_rows([".....#...."] * 6, 10, 20)
    assert end_if_one_key_lost(board, START, KEYS, FallingPiece("T", 2, 4, 5)) == FallingPiece("T", 3, 4, 5)


def test_keys_counted_before_the_part_may_be_the_lost_one() -> None:
    # An early second thought's part starts where the first part's keys were counted to put the
    # piece (R R from the spawn, column 8); the first R was lost, and a frame shows the piece
    # turned twice in column 7, on its way.  From the part's start alone that reads as a lost turn
    # (and was "corrected" off a target the piece reached); from the spawn with the counted keys, a
    # lost R explains it as well, so it is no evidence.
    part = ("rotate", "rotate", "rotate") + ("left",) * 6
    seen = FallingPiece("L", 3, 7, 16)
    assert end_if_one_key_lost(EMPTY, FallingPiece("L", 1, 8, 20), part, seen) == FallingPiece("L", 3, 2, 16)
    assert end_if_one_key_lost(EMPTY, FallingPiece("L", 1, 6, 20), ("right", "right", *part), seen) is None


def test_after_a_lost_drop_a_frame_on_the_keys_way_gives_where_they_lead() -> None:
    at_drop = FallingPiece("J", 4, 7, 9)
    since = ("left", "rotate")  # the next piece's plan made ahead, pressed on this piece
    assert pose_since_lost_drop(EMPTY, at_drop, since, FallingPiece("J", 4, 7, 9)) == FallingPiece("J", 1, 6, 9)


def test_after_a_lost_drop_a_key_lost_since_is_seen_in_the_frame() -> None:
    # A level-10 run's lost game: the drop and the L after it were lost, the turn acted and the frame
    # shows it; the frame's time put the turn still to come, so it was counted twice: (2, 7).
    at_drop = FallingPiece("J", 4, 7, 9)
    since = ("left", "rotate")
    assert pose_since_lost_drop(EMPTY, at_drop, since, FallingPiece("J", 1, 7, 9)) == FallingPiece("J", 1, 7, 9)
    assert pose_since_lost_drop(EMPTY, at_drop, since, FallingPiece("J", 3, 5, 9)) is None  # nothing explains it
