"""The watchdog's pure logic: the reality check, the health rules, halt, resync and resume.

Drives ``RealityCheck`` and ``Watchdog`` with hand-made bus bodies and explicit times (no
sockets, no clock); the process on real sockets is tests/integration/test_watchdog_service.py.
"""

from __future__ import annotations

import pytest

from gamerig.daemon.rig_config import WatchdogConfig
from gamerig.services.watchdog_core import Watchdog
from gamerig.services.watchdog_health import DeadlineTally, FrameClock
from gamerig.services.watchdog_reality import RealityCheck, differing_cells

EMPTY = ["." * 10] * 20
PERIOD = 1 / 60


def board_with(*rows: str) -> list[str]:
    """A 10 x 20 board whose bottom rows are ``rows`` (the last one lowest)."""
    return EMPTY[: 20 - len(rows)] + list(rows)


A = board_with("####......")
B = board_with("....####..")


# ---- RealityCheck ------------------------------------------------------------------------------


def test_a_landing_is_checked_against_the_prediction_for_its_piece() -> None:
    check = RealityCheck()
    check.on_plan(1, "I")
    check.on_prediction(1, tuple(A))
    verdict = check.on_landing("I", tuple(A))
    assert verdict is not None and verdict.matched and verdict.plan_id == 1
    assert check.on_landing("I", tuple(A)) is None  # used up: one comparison per plan


def test_a_wrong_placement_is_a_mismatch_naming_the_differing_cells() -> None:
    check = RealityCheck()
    check.on_plan(7, "I")
    check.on_prediction(7, tuple(A))
    verdict = check.on_landing("I", tuple(B))
    assert verdict is not None and not verdict.matched
    assert verdict.differing_cells == 8 and "plan 7" in verdict.describe() and "8 cells" in verdict.describe()


def test_older_predictions_are_used_up_by_a_later_landing() -> None:
    check = RealityCheck()
    for plan_id, piece in ((1, "O"), (2, "T")):
        check.on_plan(plan_id, piece)
        check.on_prediction(plan_id, tuple(A))
    verdict = check.on_landing("T", tuple(A))
    assert verdict is not None and verdict.plan_id == 2
    assert check.pending == 0  # plan 1's piece landed unseen: never compared with a later board


def test_no_prediction_for_the_landed_piece_gives_no_verdict() -> None:
    check = RealityCheck()
    check.on_plan(1, "O")
    check.on_prediction(1, tuple(A))
    assert check.on_landing("S", tuple(A)) is None
    assert check.pending == 1


def test_boards_of_different_shapes_differ_everywhere() -> None:
    assert differing_cells(("..", "##"), ("...",)) == 7


# ---- health ------------------------------------------------------------------------------------


def test_frame_clock_measures_the_period_and_goes_stale_when_capture_times_stop() -> None:
    clock = FrameClock(3, now=0.0)
    for i in range(10):
        assert clock.frame(i * PERIOD, now=i * PERIOD + 0.004)
    assert clock.period_s == pytest.approx(PERIOD)
    last = 9 * PERIOD + 0.004
    assert not clock.frame(9 * PERIOD, now=last + PERIOD)  # a frozen camera repeats its capture time
    assert not clock.stale(last + 2.9 * PERIOD)
    assert clock.stale(last + 3.1 * PERIOD)


def test_deadline_tally_adds_a_restarted_services_new_count() -> None:
    tally = DeadlineTally()
    assert [tally.report("relay.state", n) for n in (0, 2, 3, 1)] == [0, 2, 1, 1]
    assert tally.total == 4


# ---- Watchdog ----------------------------------------------------------------------------------


class Rig:
    """Plays the other services' messages into a Watchdog with a hand-moved clock."""

    def __init__(self, **settings: float) -> None:
        self.now = 0.0
        self.seq = 0
        self.dog = Watchdog(WatchdogConfig(**settings), self.now)
        self.published: list[tuple[str, dict]] = list(self.dog.start(self.now))

    def send(self, topic: str, body: dict) -> list[tuple[str, dict]]:
        """One message, and the health check after it."""
        out = self.dog.receive(topic, body, self.now) + self.dog.tick(self.now)
        self.published += out
        return out

    def frame(self, board: list[str] = EMPTY, frozen: bool = False, heartbeats: bool = True) -> None:
        """One frame period: heartbeats and one obs.frame."""
        self.now += PERIOD
        if not frozen:
            self.seq += 1
        if heartbeats:
            for name in ("camera", "ai", "relay"):
                self.send(f"hb.{name}", {"state": "active", "message": ""})
        self.send("obs.frame", {
            "frame_seq": self.seq, "t_capture": self.seq * PERIOD, "status": "ok", "reason": "", "board": board,
            "falling": None, "next_piece": None, "level": None, "calibration": "ok",
        })

    def run(self, seconds: float, **kwargs: object) -> None:
        for _ in range(round(seconds / PERIOD)):
            self.frame(**kwargs)  # type: ignore[arg-type]

    def place(self, plan_id: int, piece: str, predicted: list[str], observed: list[str]) -> list[tuple[str, dict]]:
        """The ai plans a piece, it lands, and the camera commits ``observed``."""
        self.send("plan.keys", {"plan_id": plan_id, "piece": piece, "orientation": 1, "x": 5, "keys": ["drop"]})
        self.send("predict.board", {"plan_id": plan_id, "board": predicted, "pieces": plan_id})
        self.frame(board=observed)  # placeholder frame before the landing
        start = len(self.published)
        self.send("obs.event", {"kind": "landed", "frame_seq": self.seq + 1, "t_capture": 0.0, "piece": piece, "rows": [], "board": observed})
        self.frame(board=observed)
        return self.published[start:]

    def topics(self, since: int = 0) -> list[str]:
        return [topic for topic, _ in self.published[since:] if topic != "wd.state"]


def ready() -> Rig:
    rig = Rig()
    rig.run(0.7)
    assert rig.topics() == ["wd.halt", "wd.resync", "wd.resume"]  # start-up wait, then play with the seen board
    assert not rig.dog.halted and rig.dog.counters["halts"] == 0
    return rig


def test_starts_halted_and_resumes_once_everything_is_healthy() -> None:
    rig = ready()
    assert rig.published[-1][0] == "wd.state" and rig.published[-1][1]["halted"] is False


def test_a_frozen_camera_halts_within_three_frame_periods_and_play_resumes() -> None:
    rig = ready()
    start = len(rig.published)
    frozen_at = rig.now
    halted_at = None
    for _ in range(10):
        rig.frame(frozen=True)
        if rig.dog.halted:
            halted_at = rig.now
            break
    assert halted_at is not None and halted_at - frozen_at <= 3 * PERIOD + 1e-9
    assert rig.topics(start) == ["wd.halt"] and "no new camera frame" in rig.dog.reason
    rig.run(0.3, frozen=True)
    assert rig.dog.halted  # still frozen
    thawed_at = rig.now
    while rig.dog.halted and rig.now - thawed_at < 1.0:
        rig.frame()
    # a halt for stale frames alone ends once frames have been fresh for three periods
    assert 3 * PERIOD <= rig.now - thawed_at <= 5 * PERIOD + 1e-9
    assert rig.topics(start)[-2:] == ["wd.resync", "wd.resume"]
    state = rig.published[-1][1]
    assert state["counters"]["stale_frames"] == 1 and state["counters"]["halts"] == 1
    assert 0.3 < state["max_halt_s"] < 0.5


def test_after_stale_frames_play_waits_for_a_frame_that_shows_the_board() -> None:
    rig = ready()
    rig.run(0.2, frozen=True)
    assert rig.dog.halted
    for _ in range(20):  # fresh frames, but the camera is unsure of the board
        rig.now += PERIOD
        rig.seq += 1
        for name in ("camera", "ai", "relay"):
            rig.send(f"hb.{name}", {"state": "active", "message": ""})
        rig.send("obs.frame", {"frame_seq": rig.seq, "t_capture": rig.seq * PERIOD, "status": "unsure", "reason": "", "board": None,
                               "falling": None, "next_piece": None, "level": None, "calibration": "ok"})
    assert rig.dog.halted
    rig.frame()
    assert not rig.dog.halted


def test_a_halt_with_another_cause_besides_stale_frames_waits_resume_healthy_s() -> None:
    rig = ready()
    for _ in range(90):  # 1.5 s: the ai silent and the camera frozen
        rig.now += PERIOD
        rig.send("hb.camera", {"state": "active"})
        rig.send("hb.relay", {"state": "active"})
        rig.send("obs.frame", {"frame_seq": rig.seq, "t_capture": rig.seq * PERIOD, "status": "ok", "board": EMPTY, "calibration": "ok"})
    assert rig.dog.halted and "ai is not alive" in rig.dog.reason and "no new camera frame" in rig.dog.reason
    rig.run(0.4)
    assert rig.dog.halted
    rig.run(0.2)
    assert not rig.dog.halted


def test_a_watchdog_that_was_not_scheduled_judges_by_the_newest_frame_waiting() -> None:
    rig = ready()
    late = rig.now + 10 * PERIOD  # heartbeats and the frames of ten periods wait in the queue
    for name in ("camera", "ai", "relay"):
        assert rig.dog.receive(f"hb.{name}", {"state": "active"}, late) == []
    for i in range(1, 11):
        rig.seq += 1
        rig.dog.receive("obs.frame", {"frame_seq": rig.seq, "t_capture": rig.now + i * PERIOD, "status": "ok",
                                      "board": EMPTY, "calibration": "ok"}, late)
    rig.dog.tick(late)
    assert not rig.dog.halted


def test_a_dead_service_halts_until_it_beats_again() -> None:
    rig = ready()
    for _ in range(90):  # 1.5 s with the ai silent
        rig.now += PERIOD
        rig.send("hb.camera", {"state": "active"})
        rig.send("hb.relay", {"state": "active"})
        rig.send("obs.frame", {"frame_seq": rig.seq + 1, "t_capture": rig.now, "status": "ok", "board": EMPTY, "calibration": "ok"})
        rig.seq += 1
    assert rig.dog.halted and "ai is not alive" in rig.dog.reason
    assert rig.dog.counters["dead_services"] == 1
    rig.run(0.7)
    assert not rig.dog.halted


def test_a_fault_heartbeat_halts() -> None:
    rig = ready()
    rig.send("hb.relay", {"state": "fault", "message": "serial link lost"})
    assert rig.dog.halted and "relay is in fault: serial link lost" in rig.dog.reason


def test_a_matching_placement_is_checked_and_a_mismatch_resyncs_with_the_observed_board() -> None:
    rig = ready()
    assert rig.topics(len(rig.published) - 1) == []
    out = rig.place(1, "I", predicted=A, observed=A)
    assert [t for t, _ in out if t != "wd.state"] == [] and rig.dog.counters["checks"] == 1
    out = rig.place(2, "O", predicted=A, observed=B)
    resyncs = [body for topic, body in out if topic == "wd.resync"]
    assert resyncs == [{"reason": "plan 2: the observed board differs from the prediction in 8 cells", "board": B}]
    assert not rig.dog.halted and rig.dog.counters["mismatches"] == 1


def test_repeated_mismatches_halt_and_a_match_ends_the_run() -> None:
    rig = ready()
    rig.place(1, "I", predicted=A, observed=B)
    rig.place(2, "I", predicted=A, observed=B)
    rig.place(3, "I", predicted=B, observed=B)  # a match: the run starts again
    rig.place(4, "I", predicted=A, observed=B)
    rig.place(5, "I", predicted=A, observed=B)
    assert not rig.dog.halted
    out = rig.place(6, "I", predicted=A, observed=B)
    halts = [body for topic, body in out if topic == "wd.halt"]
    assert rig.dog.halted and halts == [{"reason": "3 consecutive reality-check mismatches"}]
    rig.place(7, "I", predicted=A, observed=B)  # while halted nothing is compared
    assert rig.dog.counters["mismatches"] == 5 and rig.dog.counters["checks"] == 6
    rig.run(0.6)
    assert not rig.dog.halted and rig.dog.counters["halts"] == 1


def test_two_landings_in_one_frame_are_compared_once_with_the_last_pieces_plan() -> None:
    rig = ready()
    for plan_id, piece in ((1, "O"), (2, "T")):
        rig.send("plan.keys", {"plan_id": plan_id, "piece": piece})
        rig.send("predict.board", {"plan_id": plan_id, "board": A if plan_id == 1 else B})
    seq = rig.seq + 1
    rig.send("obs.event", {"kind": "landed", "frame_seq": seq, "piece": "O", "board": B})
    rig.send("obs.event", {"kind": "landed", "frame_seq": seq, "piece": "T", "board": B})
    rig.send("obs.event", {"kind": "rows_cleared", "frame_seq": seq, "piece": None, "rows": [1], "board": B})
    rig.frame(board=B)
    assert rig.dog.counters["checks"] == 1 and rig.dog.counters["mismatches"] == 0


def test_deadline_misses_are_summed_from_relay_and_ai() -> None:
    rig = ready()
    rig.send("relay.state", {"outputs": {}, "link": "connected", "safe": False, "deadline_misses": 2})
    rig.send("ai.state", {"synced": True, "deadline_misses": 1})
    rig.send("relay.state", {"outputs": {}, "link": "connected", "safe": False, "deadline_misses": 3})
    assert rig.dog.counters["deadline_misses"] == 4


@pytest.mark.parametrize("topic, body", [
    ("obs.frame", {"frame_seq": "x", "t_capture": 1.0, "status": "ok", "board": None, "calibration": "ok"}),
    ("obs.frame", {"frame_seq": 1, "t_capture": 1.0, "status": "ok", "board": ["..", "#"], "calibration": "ok"}),
    ("obs.event", {"kind": "landed", "frame_seq": 3, "board": "##"}),
    ("predict.board", {"plan_id": [1], "board": A}),
    ("hb.ai", {"state": None}),
    ("relay.state", {"deadline_misses": True}),
    ("plan.keys", "not a mapping"),
])
def test_malformed_bodies_are_counted_and_ignored(topic: str, body: dict) -> None:
    rig = ready()
    rig.send(topic, body)
    assert rig.dog.counters["malformed"] == 1 and not rig.dog.halted
