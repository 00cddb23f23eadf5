"""When the closed loop's drop goes unconfirmed: not before a frame that could confirm the piece
had its chance, unless the deadline says so."""

from gamerig.services.ai_blind_drop import ConfirmWait, blind_drop_due

STEP = 0.3  # level 5
INTERVAL = 0.06
CONFIRM = 0.17
EVIDENCE = 0.1
MARGIN = 0.063


def due(**changes: float | int | None) -> float:
    fields = {"last_down_t": 10.0, "start_y": 20, "start_t": 9.9, "lowest_y": 20, "suspect_t": None, "deadline_t": 20.0}
    fields.update(changes)
    return blind_drop_due(ConfirmWait(**fields), STEP, INTERVAL, CONFIRM, EVIDENCE, MARGIN)  # type: ignore[arg-type]


def test_a_piece_seen_below_its_start_row_drops_the_planned_pause_after_its_last_key() -> None:
    assert due(lowest_y=19) == 10.0 + INTERVAL + CONFIRM


def test_a_piece_still_in_its_spawn_row_waits_for_a_frame_after_its_first_fall() -> None:
    # keys done 0.1 s after the spawn: the planned drop (10.23) would come before the first fall (10.2) is seen
    assert due() == 9.9 + STEP + CONFIRM


def test_a_piece_that_appeared_later_than_its_start_waits_for_its_own_first_fall() -> None:
    # planned ahead from a predicted spawn at 9.7, first seen at 9.85: its first fall comes by 10.15
    assert due(start_t=9.7, first_seen_t=9.85) == 9.85 + STEP + CONFIRM
    assert due(start_t=9.7, first_seen_t=9.6) == 10.0 + INTERVAL + CONFIRM  # seen early: the start counts


def test_off_target_frames_get_their_time_to_agree() -> None:
    assert due(lowest_y=19, suspect_t=10.2) == 10.2 + EVIDENCE + CONFIRM


def test_the_wait_never_passes_the_deadline_nor_comes_before_the_planned_pause() -> None:
    assert due(deadline_t=10.3) == 10.3 - MARGIN
    assert due(deadline_t=10.1) == 10.0 + INTERVAL + CONFIRM  # the plan fitted its drop there: keep it
