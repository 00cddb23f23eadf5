"""The temporal filter commits stable, explainable changes only, and says what the wait cost."""

from __future__ import annotations

import numpy as np
import pytest

from gamerig.games.tetris.recognition import Observation
from gamerig.games.tetris.temporal import BoardFilter

FRAME_S = 1 / 30


def _seen(cells: list[tuple[int, int]] | np.ndarray) -> Observation:
    """A valid observation of the 1-based (x, y) cells, or of a whole cell array."""
    filled = np.zeros((20, 10), dtype=bool)
    if isinstance(cells, np.ndarray):
        filled[:] = cells
    else:
        for x, y in cells:
            filled[y - 1, x - 1] = True
    return Observation(True, "", filled, np.ones((20, 10), dtype=np.float32), np.zeros((20, 10, 3), dtype=np.float32))


NO_OBSERVATION = Observation(False, "black frame", np.zeros((20, 10), bool), np.zeros((20, 10), np.float32), np.zeros((20, 10, 3), np.float32))
T_SPAWN = [(4, 20), (5, 20), (6, 20), (5, 19)]


def _feed(board_filter: BoardFilter, observations: list[Observation], start: int = 0):
    return [board_filter.update(o, (start + i) * FRAME_S) for i, o in enumerate(observations)]


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_a_change_is_committed_on_its_kth_agreeing_frame_and_not_before(k):
    board_filter = BoardFilter(k)
    _feed(board_filter, [_seen([])] * k)
    updates = _feed(board_filter, [_seen(T_SPAWN)] * k, start=k)
    assert [u.status for u in updates] == ["pending"] * (k - 1) + ["committed"]
    if k > 1:
        assert not updates[-2].board.any()  # still the empty board while pending
    assert updates[-1].board.sum() == 4
    assert updates[-1].latency_frames == k - 1
    assert updates[-1].latency_s == pytest.approx((k - 1) * FRAME_S)
    assert board_filter.update(_seen(T_SPAWN), 2 * k * FRAME_S).status == "steady"


def test_disagreeing_or_missing_frames_restart_the_count():
    board_filter = BoardFilter(3)
    _feed(board_filter, [_seen([])] * 3)
    moved = [(x, y - 1) for x, y in T_SPAWN]
    updates = _feed(board_filter, [_seen(T_SPAWN), _seen(T_SPAWN), NO_OBSERVATION, _seen(T_SPAWN), _seen(T_SPAWN), _seen(moved)])
    assert [u.status for u in updates] == ["pending", "pending", "no_observation", "pending", "pending", "pending"]
    assert updates[2].reason == "black frame"
    assert not board_filter.committed.any()


def test_a_frame_with_a_doubtful_cell_is_unsure_and_restarts_the_count():
    board_filter = BoardFilter(2)
    _feed(board_filter, [_seen([])] * 2)
    doubtful = _seen(T_SPAWN)
    doubtful.confidence[0, 0] = 0.1
    updates = _feed(board_filter, [_seen(T_SPAWN), doubtful, _seen(T_SPAWN), _seen(T_SPAWN)], start=2)
    assert [u.status for u in updates] == ["pending", "unsure", "pending", "committed"]
    assert updates[1].reason == "1 cells read without confidence"


def test_six_cells_appearing_at_once_are_unsure_until_they_stay_for_resync_frames():
    board_filter = BoardFilter(2, resync_frames=6)
    _feed(board_filter, [_seen([])] * 2)
    six = [(1, 1), (2, 1), (3, 1), (1, 2), (2, 2), (3, 2)]
    updates = _feed(board_filter, [_seen(six)] * 6, start=2)
    assert [u.status for u in updates] == ["pending"] + ["unsure"] * 4 + ["resynced"]
    assert "6 cells appeared" in updates[1].reason
    assert not updates[-2].board.any()
    assert updates[-1].board.sum() == 6 and "6 cells appeared" in updates[-1].reason
    assert updates[-1].latency_frames == 5


def test_cells_vanishing_without_a_full_row_are_unsure():
    stack = np.zeros((20, 10), dtype=bool)
    stack[:2, :5] = True  # no piece completes these rows
    board_filter = BoardFilter(2)
    _feed(board_filter, [_seen(stack)] * 2)
    updates = _feed(board_filter, [_seen(np.zeros((20, 10), dtype=bool))] * 2, start=2)
    assert updates[-1].status == "unsure" and "10 cells vanished" in updates[-1].reason


def test_a_line_clear_half_drawn_is_never_a_first_board():
    """The camera starts during a line clear that erased the full row before dropping the
    stack: a floating stack, which no game shows at rest, stays unsure even with nothing
    committed to compare it with; a piece in the air over empty rows is a board."""
    floating = np.zeros((20, 10), dtype=bool)
    floating[1, :8] = floating[2, :7] = True  # row 1 erased, rows 2 and 3 not yet dropped
    board_filter = BoardFilter(2, resync_frames=6)
    updates = _feed(board_filter, [_seen(floating)] * 5)
    assert [u.status for u in updates] == ["pending"] + ["unsure"] * 4
    assert updates[-1].reason == "15 cells over an empty row: a line clear being drawn" and board_filter.committed is None
    dropped = _feed(board_filter, [_seen(np.roll(floating, -1, axis=0))] * 2, start=5)
    assert dropped[-1].status == "committed"
    in_the_air = np.roll(floating, -1, axis=0)
    for x, y in T_SPAWN:
        in_the_air[y - 1, x - 1] = True
    assert _feed(board_filter, [_seen(in_the_air)] * 2, start=7)[-1].status == "committed"


def test_a_drop_that_locks_and_clears_at_once_is_committed():
    before = np.zeros((20, 10), dtype=bool)
    before[0, :6] = True  # row 1 misses columns 7-10: an I lying there completes it
    before[1, :3] = True
    for x in range(4, 8):
        before[19, x - 1] = True  # an I in the air, which then drops onto row 1
    after = np.zeros((20, 10), dtype=bool)
    after[0, :3] = True  # row 2 dropped to row 1; the I is gone
    for x, y in T_SPAWN:
        after[y - 1, x - 1] = True  # the next piece
    board_filter = BoardFilter(2)
    _feed(board_filter, [_seen(before)] * 2)
    assert _feed(board_filter, [_seen(after)] * 2, start=2)[-1].status == "committed"
    gappy = before.copy()
    gappy[0, 6:] = False
    gappy[0, 0] = False  # its gaps are wider than a piece: nothing completes the row
    board_filter = BoardFilter(2)
    _feed(board_filter, [_seen(gappy)] * 2)
    assert _feed(board_filter, [_seen(after)] * 2, start=2)[-1].status == "unsure"


def test_a_line_clear_drops_the_rows_above_and_is_committed():
    before = np.zeros((20, 10), dtype=bool)
    before[:2, :] = True  # two full rows, shown during the clear animation
    before[2, :7] = True
    after = np.zeros((20, 10), dtype=bool)
    after[0, :7] = True
    board_filter = BoardFilter(2)
    _feed(board_filter, [_seen(before)] * 2)
    updates = _feed(board_filter, [_seen(after)] * 2, start=2)
    assert updates[-1].status == "committed"
    assert np.array_equal(board_filter.committed, after)


def _board(stack: np.ndarray, cells: list[tuple[int, int]]) -> np.ndarray:
    board = stack.copy()
    for x, y in cells:
        board[y - 1, x - 1] = True
    return board


def test_a_stale_board_resyncs_once_three_stable_boards_follow_one_another_by_play():
    board_filter = BoardFilter(2)  # resync_frames 30: level-10 play never holds a board that long
    _feed(board_filter, [_seen([])] * 2)
    stack = np.zeros((20, 10), dtype=bool)
    stack[:2, :7] = True  # two rows locked while the camera was away
    falling = [_board(stack, [(x, y - drop) for x, y in T_SPAWN]) for drop in range(4)]
    updates = _feed(board_filter, [_seen(board) for board in falling for _ in range(3)], start=2)
    assert [u.status for u in updates[:7]] == ["pending"] + ["unsure"] * 6
    assert updates[7].status == "resynced" and "appeared at once" in updates[7].reason
    assert np.array_equal(updates[7].board, falling[2])
    assert updates[10].status == "committed" and np.array_equal(updates[10].board, falling[3])


def test_boards_that_flash_back_to_the_committed_one_never_resync():
    full = np.zeros((20, 10), dtype=bool)
    full[:2, :] = True
    full[2:4, :4] = True
    blank = full.copy()
    blank[:2, :] = False  # a line-clear animation blanking the full rows, the rows above not dropped
    board_filter = BoardFilter(2)
    _feed(board_filter, [_seen(full)] * 2)
    updates = _feed(board_filter, [_seen(b) for b in [blank, blank, full, full] * 8], start=2)
    assert {u.status for u in updates} == {"pending", "unsure", "steady"}


def test_after_a_gap_in_the_frames_the_committed_board_is_not_vouched_for_until_the_next_commit():
    board_filter = BoardFilter(2)
    _feed(board_filter, [_seen([])] * 2)
    moved = [(x + 1, y - 5) for x, y in T_SPAWN]
    updates = _feed(board_filter, [_seen(moved)] * 2, start=31)  # one second after the last frame
    assert updates[0].status == "unsure" and updates[0].reason.startswith("no frame for 1.00 s")
    # one step of play explains the change, yet pieces may have come and gone unseen: a resync
    assert updates[1].status == "resynced" and updates[1].reason.startswith("no frame for 1.00 s")
    assert _feed(board_filter, [_seen(T_SPAWN)], start=33)[0].status == "pending"
    assert _feed(board_filter, [_seen(T_SPAWN)], start=34)[0].status == "committed"  # the gap is behind it


def test_bad_settings_are_a_clear_error():
    with pytest.raises(ValueError, match="at least 1"):
        BoardFilter(0)
    with pytest.raises(ValueError, match="min_confidence"):
        BoardFilter(2, min_confidence=1.5)
    with pytest.raises(ValueError, match="resync_frames"):
        BoardFilter(3, resync_frames=2)
