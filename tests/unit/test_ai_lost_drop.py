"""services/ai_lost_drop.py: a piece still falling after its drop (the key was lost) against the
next piece, a stale frame and a frame from before the drop acted."""

from __future__ import annotations

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import FallingPiece
from gamerig.games.tetris.rules import Rules
from gamerig.services.ai_lost_drop import DroppedPiece, keys_unseen_since_drop, pose_after, pose_since_drop, still_falling

RULES = Rules()
STEP = 0.3  # level 5's fall step
DROPPED = DroppedPiece(piece="T", lowest_y=15, drop_acted_t=10.0)  # steered to orientation 3, column 2


def test_the_piece_in_play_seen_falling_below_where_it_was_dropped_is_a_lost_drop() -> None:
    seen = FallingPiece("T", 3, 2, 13)
    assert still_falling(DROPPED, seen, 10.0 + 2 * STEP + 0.05, next_piece="S", rules=RULES, fall_step_s=STEP)
    # no preview: its pose and height say it cannot be a new T
    assert still_falling(DROPPED, seen, 10.0 + 2 * STEP + 0.05, next_piece=None, rules=RULES, fall_step_s=STEP)


def test_a_new_piece_of_the_same_letter_in_the_spawn_rows_is_the_next_piece() -> None:
    new = FallingPiece("T", 1, RULES.spawn_x, RULES.spawn_y - 1)
    dropped_high = DroppedPiece(piece="T", lowest_y=RULES.spawn_y, drop_acted_t=10.0)  # dropped from the spawn row
    assert not still_falling(dropped_high, new, 10.0 + STEP + 0.05, next_piece="T", rules=RULES, fall_step_s=STEP)
    assert not still_falling(dropped_high, new, 10.0 + STEP + 0.05, next_piece=None, rules=RULES, fall_step_s=STEP)
    # but a spawn-pose T lower than a new piece could have fallen since is the old one
    low = FallingPiece("T", 1, RULES.spawn_x, RULES.spawn_y - 6)
    assert still_falling(dropped_high, low, 10.0 + STEP + 0.05, next_piece="T", rules=RULES, fall_step_s=STEP)


def test_no_verdict_without_fresh_evidence() -> None:
    where_it_was = FallingPiece("T", 3, 2, 15)  # a camera that lost the piece repeats its last place
    assert not still_falling(DROPPED, where_it_was, 11.0, next_piece="S", rules=RULES, fall_step_s=STEP)
    too_early = FallingPiece("T", 3, 2, 14)  # before the drop had a fall step to land it and spawn
    assert not still_falling(DROPPED, too_early, 10.0 + STEP / 2, next_piece="S", rules=RULES, fall_step_s=STEP)
    other_letter = FallingPiece("S", 1, RULES.spawn_x, RULES.spawn_y)
    assert not still_falling(DROPPED, other_letter, 11.0, next_piece="S", rules=RULES, fall_step_s=STEP)


def test_the_keys_a_frame_does_not_show_yet_are_applied_where_the_piece_fits() -> None:
    board = Board(10, 20)
    board[2, 14] = 1  # a cell the third left would run into
    seen = FallingPiece("L", 2, 5, 13)
    assert pose_after(board, seen, ["left"]) == FallingPiece("L", 2, 4, 13)
    assert pose_after(board, seen, ["left", "left", "left", "drop"]) == pose_after(board, seen, ["left", "left"])
    assert pose_after(board, seen, ["rotate", "right"]) == FallingPiece("L", 3, 6, 13)
    assert pose_after(board, seen, []) == seen


def test_the_keys_since_the_drop_give_the_pose_whatever_the_frame_lags() -> None:
    at_drop = FallingPiece("S", 2, 5, 16)  # on target when its drop went down, and the drop was lost
    since = ["right", "right", "right"]  # the next piece's plan, pressed on it
    for shown in (5, 6, 7, 8):  # the frame shows some of them
        assert pose_since_drop(Board(10, 20), FallingPiece("S", 2, shown, 13), at_drop, since) == FallingPiece("S", 2, 8, 13)


def test_a_frame_no_key_since_the_drop_explains_gives_no_pose() -> None:
    at_drop = FallingPiece("S", 2, 5, 16)
    assert pose_since_drop(Board(10, 20), FallingPiece("S", 1, 3, 13), at_drop, ["right"]) is None


def test_with_the_next_piece_moved_at_once_only_its_height_tells_a_lost_drop() -> None:
    # dropped high up; the next piece is a T too, and a plan made ahead moves it from its spawn at once
    dropped = DroppedPiece(piece="T", lowest_y=RULES.spawn_y - 1, drop_acted_t=10.0)
    t = 10.0 + STEP + 0.05  # a new piece can have fallen two rows since
    moved_new = FallingPiece("T", 3, 2, RULES.spawn_y - 2)
    assert not still_falling(dropped, moved_new, t, next_piece="T", rules=RULES, fall_step_s=STEP, next_moved_at_once=True)
    assert still_falling(dropped, moved_new, t, next_piece="T", rules=RULES, fall_step_s=STEP)  # its pose alone would say so
    too_low_for_a_new_one = FallingPiece("T", 3, 2, RULES.spawn_y - 3)
    assert still_falling(dropped, too_low_for_a_new_one, t, next_piece="T", rules=RULES, fall_step_s=STEP, next_moved_at_once=True)


def test_a_piece_planned_from_sight_has_had_the_keys_since_the_drop_the_frame_cannot_show() -> None:
    # After a halt for a camera hiccup: the halted plan's keys went on acting while the frame lagged.
    recent = [("left", 9.0), ("drop", 9.2), ("right", 9.5), ("rotate", 9.6), ("rotate", 9.7)]
    assert keys_unseen_since_drop(recent, t_state=9.55, key_latency_s=0.03) == ["rotate", "rotate"]  # the right is in the frame
    assert keys_unseen_since_drop(recent, t_state=9.0, key_latency_s=0.03) == ["right", "rotate", "rotate"]  # not the left: before the drop
    assert keys_unseen_since_drop(recent, t_state=9.8, key_latency_s=0.03) == []
    seen = FallingPiece("T", 1, RULES.spawn_x, 15)
    unseen = keys_unseen_since_drop(recent, t_state=9.55, key_latency_s=0.03)
    assert pose_after(Board(10, 20), seen, unseen) == FallingPiece("T", 3, RULES.spawn_x, 15)
