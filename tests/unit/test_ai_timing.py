"""services/ai_timing.py against a synthetic game: a 60 Hz frame grid at an arbitrary phase, gravity
every few frames, a camera whose pictures arrive a fixed latency plus jitter after the game frame,
and keys that act at the first frame after their contact closed."""

from __future__ import annotations

import math
import random

import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import Game
from gamerig.games.tetris.rules import Rules, iteration_delay
from gamerig.games.tetris.sequence import FixedPieces
from gamerig.hardware.sim.game_session import GameOptions, GameSession
from gamerig.services.ai_ahead import AHEAD_ROUND_TRIP_S, FIRST_KEY_MARGIN_S, PRESS_OVERHEAD_S, TICK_MARGIN_S, spawn_after_drop
from gamerig.services.ai_timing import GameTiming, KeyEffects, Ticks

FRAME = 1 / 60
LATENCY = 0.088  # game frame -> t_capture of its picture, before jitter
CONTACT = 0.0007  # relay down_t -> the contact the keyboard sees


class SyntheticGame:
    """Frames at ``phase + n * FRAME``; gravity on frames ``n % every == tick_frame``."""

    def __init__(self, phase: float, every: int, tick_frame: int, seed: int = 1) -> None:
        self.phase, self.every, self.tick_frame = phase, every, tick_frame
        self.rng = random.Random(seed)

    def frame_at_or_after(self, t: float) -> float:
        return self.phase + math.ceil((t - self.phase) / FRAME) * FRAME

    def captured(self, frame_t: float) -> float:
        return frame_t + LATENCY + self.rng.uniform(0.0, 0.006)


    def tick(self, k: int) -> float:
        return self.phase + (k * self.every + self.tick_frame) * FRAME

    def true_ticks_on_key_clock(self) -> float:
        """A key down before this acts no later than the tick (its contact closes CONTACT later)."""
        return self.tick(0) - CONTACT


def learned(game: SyntheticGame, presses: int = 64, falls: int = 40) -> GameTiming:
    """Presses at random phases over a few seconds, and the falls of the same seconds."""
    timing = GameTiming()
    rng = random.Random(7)
    first_tick = math.ceil((10.0 - game.tick(0)) / (game.every * FRAME))
    for k in range(falls):
        timing.see_fall(game.captured(game.tick(first_tick + k)), fall_step_s=game.every * FRAME)
    span = falls * game.every * FRAME
    for i in range(presses):
        down = 10.0 + (i + rng.random()) * span / presses
        timing.see_key_effect(down, game.captured(game.frame_at_or_after(down + CONTACT)))
    return timing


def phase_error(ticks: Ticks, true_tick: float, true_period: float) -> float:
    return (ticks.anchor - true_tick + true_period / 2) % true_period - true_period / 2


@pytest.mark.parametrize("every", [3, 18])
def test_the_gravity_ticks_are_learned_to_a_few_milliseconds(every: int) -> None:
    """Within 5 ms (early: the margins cover it), although the pictures arrive 88-94 ms after the game frame."""
    game = SyntheticGame(phase=3.00731, every=every, tick_frame=1)
    timing = learned(game)
    latency = timing.view_latency_s
    assert latency is not None and LATENCY + CONTACT <= latency < LATENCY + CONTACT + 0.006  # a rough figure
    ticks = timing.ticks(every * FRAME)
    assert ticks is not None and ticks.period == pytest.approx(every * FRAME)
    assert abs(phase_error(ticks, game.true_ticks_on_key_clock(), every * FRAME)) < 0.005


def test_pictures_of_falls_late_by_most_of_a_step_do_not_pull_the_ticks_early() -> None:
    """Level 10 on a loaded machine: one fall picture in six came 33-38 ms late, which modulo the
    50 ms step looks 12-17 ms early."""
    game = SyntheticGame(phase=3.00731, every=3, tick_frame=1)
    timing = learned(game)
    first_tick = math.ceil((10.0 - game.tick(0)) / (3 * FRAME))
    for k in range(40, 120):
        lag = 0.033 + 0.005 * (k % 2) if k % 6 == 0 else 0.0
        timing.see_fall(game.captured(game.tick(first_tick + k)) + lag, fall_step_s=3 * FRAME)
    ticks = timing.ticks(3 * FRAME)
    assert ticks is not None
    assert abs(phase_error(ticks, game.true_ticks_on_key_clock(), 3 * FRAME)) < 0.005


def test_moves_shown_only_with_the_next_fall_still_give_the_latency() -> None:
    """At level 10 the camera service showed a move only with the next fall step."""
    game = SyntheticGame(phase=7.0123, every=3, tick_frame=2)
    timing = learned(game, falls=40)
    shown_late = GameTiming()
    rng = random.Random(3)
    for i in range(64):
        down = 10.0 + i * 0.0613 + rng.uniform(0, 0.01)
        acted = game.frame_at_or_after(down + CONTACT)
        next_tick = game.tick(0) + math.ceil((acted - game.tick(0)) / (3 * FRAME) - 1e-9) * 3 * FRAME
        shown_late.see_key_effect(down, game.captured(next_tick))
    assert shown_late.view_latency_s == pytest.approx(timing.view_latency_s, abs=0.004)


def test_pieces_that_appear_a_tick_early_move_the_ticks_later_and_pieces_on_time_slowly_back() -> None:
    game = SyntheticGame(phase=0.5, every=3, tick_frame=0)
    timing = learned(game)
    before = timing.ticks(3 * FRAME)
    assert before is not None
    timing.see_spawn(predicted_t=20.0, appeared_t=19.96, fall_step_s=3 * FRAME)  # a tick early
    timing.see_spawn(predicted_t=20.5, appeared_t=20.46, fall_step_s=3 * FRAME)
    after = timing.ticks(3 * FRAME)
    assert after is not None and after.anchor - before.anchor == pytest.approx(0.006)
    for _ in range(10):
        timing.see_spawn(predicted_t=21.0, appeared_t=20.99, fall_step_s=3 * FRAME)  # on time, give or take
    back = timing.ticks(3 * FRAME)
    assert back is not None and before.anchor < back.anchor < after.anchor


def test_nothing_is_predicted_before_enough_was_seen_or_at_another_fall_step() -> None:
    game = SyntheticGame(phase=0.5, every=3, tick_frame=0)
    assert learned(game, presses=2).ticks(3 * FRAME) is None  # too few presses
    assert learned(game, falls=0).ticks(3 * FRAME) is None  # no fall seen
    assert learned(game).ticks(18 * FRAME) is None  # falls were seen at another level
    timing = learned(game)
    timing.see_fall(100.0, fall_step_s=18 * FRAME)  # the level changed: the old schedule is forgotten
    assert timing.ticks(3 * FRAME) is None


@pytest.mark.parametrize("every", [3, 6, 9, 12, 15])
def test_one_fall_at_a_new_fall_step_places_the_ticks_within_a_frame(every: int) -> None:
    """After a level change the schedule must be learned again; one fall does (a piece planned
    ahead may show no more before its drop), the one sample putting the ticks late rather than
    early (a key then waits, never comes before the spawn)."""
    game = SyntheticGame(phase=3.00731, every=every, tick_frame=1)
    ticks = learned(game, falls=1).ticks(every * FRAME)
    assert ticks is not None
    assert -0.005 < phase_error(ticks, game.true_ticks_on_key_clock(), every * FRAME) < FRAME


def test_of_a_new_fall_steps_first_two_pictures_the_earlier_places_the_ticks() -> None:
    """A piece's first fall picture often comes late (30 ms in a level-5 run); the next one
    on time must place the ticks, not wait for a third."""
    every = 9
    game = SyntheticGame(phase=3.00731, every=every, tick_frame=1)
    timing = learned(game, falls=0)
    first_tick = math.ceil((10.0 - game.tick(0)) / (every * FRAME))
    timing.see_fall(game.captured(game.tick(first_tick)) + 0.03, fall_step_s=every * FRAME)
    timing.see_fall(game.captured(game.tick(first_tick + 1)), fall_step_s=every * FRAME)
    ticks = timing.ticks(every * FRAME)
    assert ticks is not None
    assert -0.005 < phase_error(ticks, game.true_ticks_on_key_clock(), every * FRAME) < FRAME


def test_after_a_restart_of_gravity_only_the_new_schedules_falls_place_the_ticks() -> None:
    """Play starts or a new game: the game's gravity may have restarted at another phase, and
    falls of the old schedule must not pull the ticks early (the envelope takes the earliest)."""
    every = 18
    old = SyntheticGame(phase=3.00731, every=every, tick_frame=1)
    new = SyntheticGame(phase=3.00731, every=every, tick_frame=7)  # 6 frames (100 ms) later
    timing = learned(old)
    timing.restart_gravity()
    assert timing.ticks(every * FRAME) is None
    first_tick = math.ceil((12.0 - new.tick(0)) / (every * FRAME))
    for k in range(3):
        timing.see_fall(new.captured(new.tick(first_tick + k)), fall_step_s=every * FRAME)
    ticks = timing.ticks(every * FRAME)
    assert ticks is not None
    assert -0.005 < phase_error(ticks, new.true_ticks_on_key_clock(), every * FRAME) < FRAME


def test_spawn_after_a_drop_is_the_first_tick_it_acts_before_and_the_later_one_when_in_doubt() -> None:
    ticks = Ticks(anchor=1.0, period=0.05)
    assert ticks.spawn_after(1.02, margin_s=0.005) == pytest.approx(1.05)
    assert ticks.spawn_after(1.0475, margin_s=0.005) == pytest.approx(1.10)  # too close to 1.05 to tell
    assert ticks.spawn_after(1.052, margin_s=0.005) == pytest.approx(1.10)


def test_a_piece_left_to_gravity_lands_on_the_tick_after_its_last_fall_as_the_game_runs_it() -> None:
    game = Game(Rules(), FixedPieces("O"))
    spawned = game.iterate()  # the spawn tick
    assert spawned[0].kind == "spawned" and game.piece is not None
    spawn_y, ticks_run = game.piece.y, 0
    while game.piece is not None:
        lowest_y = game.piece.y
        ticks_run += 1
        landed = game.iterate()
    assert [event.kind for event in landed] == ["landed"]
    falls = spawn_y - lowest_y
    ticks = Ticks(anchor=1.0, period=0.05)
    spawn_t = 1.0 + 3 * 0.05 + 0.002  # a predicted spawn a little off the learned ticks
    assert ticks.landing(spawn_t, falls) == pytest.approx(1.0 + (3 + ticks_run) * 0.05)
    assert ticks_run == falls + 1


def test_a_drop_is_timed_just_after_a_tick_when_the_press_cycle_is_longer_than_the_fall_step() -> None:
    ticks = Ticks(anchor=1.0, period=0.05)
    t = ticks.drop_time(earliest=1.02, latest=2.0, next_key_after_s=0.062, margin_s=0.005, first_key_margin_s=0.004)
    assert t == pytest.approx(1.055)
    spawn = ticks.spawn_after(t, margin_s=0.005)
    assert spawn == pytest.approx(1.10) and t + 0.062 - spawn < 0.02  # the next first key comes 17 ms after the spawn
    assert ticks.drop_time(1.02, 1.04, 0.062, 0.005, 0.004) == 1.02  # no time to wait: at once


def test_a_slow_fall_step_lets_the_drop_go_at_once_unless_the_spawn_would_come_too_soon() -> None:
    ticks = Ticks(anchor=0.0, period=0.3)
    assert ticks.drop_time(0.1, 5.0, 0.062, 0.005, 0.004) == 0.1  # the spawn is 200 ms later: no wait
    late = ticks.drop_time(0.28, 5.0, 0.062, 0.005, 0.004)  # the spawn would come 20 ms after the drop
    assert late == pytest.approx(0.305)


def test_key_effects_pair_a_move_with_its_press_and_skip_presses_that_never_showed() -> None:
    effects = KeyEffects()
    effects.pressed("left", 1.00)  # blocked by a wall: never shows
    effects.pressed("rotate", 1.06)
    effects.pressed("left", 1.12)
    assert effects.seen((1, 5), (2, 5), 1.15) == 1.06
    assert effects.seen((2, 5), (2, 4), 1.21) == 1.00  # the oldest left: a late pairing, a high sample
    assert effects.seen((2, 4), (2, 3), 1.27) == 1.12
    assert effects.seen((2, 3), (2, 1), 1.30) is None  # two columns at once: no single key explains it
    assert effects.seen((2, 3), (2, 2), 1.33) is None  # no press left


def test_at_level_10_a_drop_goes_at_once_only_if_the_next_plan_reaches_the_relay_before_its_first_key() -> None:
    """The next piece's plan made ahead is sent when the relay reports the drop, once it is up (a
    30 ms hold): a drop timed as if the plan were at the relay then left the first key 20-28 ms
    after the spawn instead of 10."""
    ticks = Ticks(anchor=0.0, period=iteration_delay(10))
    plan_there = 0.030 + PRESS_OVERHEAD_S + AHEAD_ROUND_TRIP_S  # after the drop goes down
    for phase in (0.010, 0.011):
        assert ticks.drop_time(1.0 + phase, 5.0, plan_there, TICK_MARGIN_S, FIRST_KEY_MARGIN_S) == 1.0 + phase
    for phase in (0.015, 0.027, 0.045):
        drop = ticks.drop_time(1.0 + phase, 5.0, plan_there, TICK_MARGIN_S, FIRST_KEY_MARGIN_S)
        assert drop == pytest.approx(1.05 + TICK_MARGIN_S)
        assert drop + plan_there <= ticks.spawn_after(drop, TICK_MARGIN_S) + FIRST_KEY_MARGIN_S


def frames_from_last_tick_to_spawn_after_a_level_raising_drop() -> int:
    """The simulator's game at level 9 with 90 lines: an O dropped to complete a row (91 lines,
    level 10) a frame after a tick; how many frames after that tick the next piece spawns."""
    session = GameSession(GameOptions(level=9, sequence="fixed", pieces="O"))
    session.game.lines = 90
    session.game.board = Board.from_rows(["########.."], 10, 20)
    frame = last_tick = 0
    while session.game.piece is None:
        frame += 1
        session.step([])
    while session.game.piece.x < 10:  # its right column: the O's cells at x - 1 and x
        frame += 1
        session.step(["right"])
    while True:  # to the frame after a tick: the piece one row lower than the frame before
        y = session.game.piece.y
        frame += 1
        session.step([])
        if session.game.piece.y < y:
            last_tick = frame
            break
    frame += 1
    _, events = session.step(["drop"])
    assert [event.kind for event in events] == ["landed", "rows_cleared"] and session.game.level == 10
    while session.game.piece is None:
        frame += 1
        session.step([])
    return frame - last_tick


def test_after_a_drop_that_raises_the_level_the_next_piece_spawns_at_the_old_steps_tick() -> None:
    # A plan made ahead for the next piece starts just after its spawn: reckoned at the new
    # level's step (50 ms at 10) its first key went down before the spawn (9 -> 10) and was lost.
    old_step_frames = round(iteration_delay(9) / FRAME)
    assert frames_from_last_tick_to_spawn_after_a_level_raising_drop() == old_step_frames
    game = SyntheticGame(phase=0.0031, every=old_step_frames, tick_frame=2)
    timing = learned(game)
    k = 1000
    drop_t = game.tick(k) + 1.5 * FRAME  # a new-level tick (3 frames on) comes before the old one
    spawn = spawn_after_drop(timing, 9, drop_t)
    assert spawn is not None
    assert abs(spawn - (game.tick(k + 1) - CONTACT)) < FRAME / 2
