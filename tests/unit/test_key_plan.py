"""Key plans against gravity (games/tetris/key_plan.py): keys that reach their placement at every
gravity phase, plans rejected when the piece would land first, and the drop deadline."""

from __future__ import annotations

import random

import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import FallingPiece, Game, NotDefinedByRules, after_key
from gamerig.games.tetris.key_plan import KeyTiming, Poses, check_keys, keys_between, plan_keys
from gamerig.games.tetris.placements import enumerate_placements
from gamerig.games.tetris.rules import Rules, iteration_delay
from gamerig.games.tetris.sequence import FixedPieces, RandomPieces

RULES = Rules()
SPAWN_T = FallingPiece("T", 1, RULES.spawn_x, RULES.spawn_y)


def play_at(board: Board, start: FallingPiece, keys: tuple[str, ...], timing: KeyTiming, first_fall: float) -> list[tuple[int, int]] | None:
    """The engine, driven event by event in time order: the landed cells, or None if a key came
    after the piece had landed."""
    game = Game(RULES, FixedPieces(start.kind), board=board)
    game.piece = start
    events = sorted([(t, 1, k) for t, k in zip(timing.key_times(keys), keys)] + [(first_fall + i * timing.fall_step_s, 0, "") for i in range(500)])
    landed = None
    for _, is_key, key in events:
        if landed is not None:
            return None if is_key else landed
        happened = game.press(key) if is_key else game.iterate()  # type: ignore[arg-type]
        for event in happened:
            if event.kind == "landed":
                landed = sorted(event.cells)
    return landed


def test_keys_between_puts_lead_moves_before_the_turns() -> None:
    assert keys_between(SPAWN_T, 3, 9) == ("rotate", "rotate", "right", "right", "right", "drop")
    assert keys_between(SPAWN_T, 3, 9, lead=2) == ("right", "right", "rotate", "rotate", "right", "drop")
    assert keys_between(SPAWN_T, 1, 6, drop=False) == ()
    assert keys_between(FallingPiece("T", 4, 3, 10), 1, 1) == ("rotate", "left", "left", "drop")  # 4 -> 1 wraps


def test_slow_level_travels_in_the_spawn_row_and_turns_after_the_first_fall() -> None:
    board = Board(10, 20)
    target = FallingPiece("T", 2, 1, 2)
    timing = KeyTiming(first_key_s=0.05, key_interval_s=0.12, fall_step_s=iteration_delay(1))
    # turning first cannot work: at the spawn row the turned T reaches above the board
    blocked = check_keys(Poses(board, RULES), SPAWN_T, keys_between(SPAWN_T, 2, 1), target, timing)
    assert not blocked.ok and not blocked.late
    verdict = plan_keys(Poses(board, RULES), SPAWN_T, target, timing)
    assert verdict.ok, verdict.reason
    assert verdict.keys[0] == "left" and verdict.keys[-1] == "drop"
    for first_fall in (0.001, 0.1, 0.3, 0.499):
        assert play_at(board, SPAWN_T, verdict.keys, timing, first_fall) == sorted(target.cells())


def test_fast_level_rejects_keys_that_cannot_finish_before_the_piece_lands() -> None:
    board = Board(10, 20)
    low = FallingPiece("T", 1, 6, 5)  # already far down at level 10 (50 ms a row)
    target = FallingPiece("T", 1, 2, 2)
    timing = KeyTiming(first_key_s=0.05, key_interval_s=0.12, fall_step_s=iteration_delay(10))
    verdict = plan_keys(Poses(board, RULES), low, target, timing)
    assert not verdict.ok and verdict.late
    assert "lands before key" in verdict.reason
    assert play_at(board, low, verdict.keys, timing, 0.01) is None  # the engine agrees: keys after landing


def test_a_failure_at_some_gravity_phases_only_is_caught() -> None:
    # an O one row above its resting row falls at phi and lands at phi + step; a key at 0.15
    # is in time only if phi > 0.05
    board = Board(10, 20)
    start = FallingPiece("O", 1, 6, 3)
    timing = KeyTiming(first_key_s=0.15, key_interval_s=0.03, fall_step_s=0.1)
    keys = ("right", "drop")
    assert play_at(board, start, keys, timing, 0.09) is not None
    assert play_at(board, start, keys, timing, 0.01) is None
    verdict = check_keys(Poses(board, RULES), start, keys, FallingPiece("O", 1, 7, 2), timing)
    assert not verdict.ok and "lands before key 1" in verdict.reason
    assert verdict.land_s == pytest.approx(0.1)  # the earliest gravity can land it


def test_land_s_is_the_earliest_gravity_landing_and_bounds_the_drop() -> None:
    board = Board(10, 20)
    start = FallingPiece("O", 1, 6, 20)  # rests at y = 2: 18 falls, the 19th iteration lands it
    step = iteration_delay(5)
    verdict = check_keys(Poses(board, RULES), start, ("drop",), FallingPiece("O", 1, 6, 2), KeyTiming(0.05, 0.12, step))
    assert verdict.ok and verdict.land_s == pytest.approx(18 * step)
    late = check_keys(Poses(board, RULES), start, ("drop",), FallingPiece("O", 1, 6, 2), KeyTiming(18 * step + 0.01, 0.12, step))
    assert not late.ok and "after the piece lands" in late.reason


def test_verdicts_agree_with_the_engine_on_random_piles() -> None:
    rng = random.Random(5)
    source = RandomPieces(11)
    checked = 0
    for _ in range(25):
        game = Game(RULES, source, initial_level=1)
        for _ in range(rng.randrange(4, 14)):  # a random pile: pieces dropped straight down where they spawn, moved a bit
            game.iterate()
            if game.over:
                break
            for _ in range(rng.randrange(0, 5)):
                game.press(rng.choice(("left", "right", "rotate")))
            game.press("drop")
        if game.over:
            continue
        board = game.board
        piece = source.next()
        start = FallingPiece(piece, 1, RULES.spawn_x, RULES.spawn_y)
        level = rng.randrange(1, 11)
        timing = KeyTiming(first_key_s=rng.uniform(0.0, 0.1), key_interval_s=0.12, fall_step_s=iteration_delay(level))
        placements = enumerate_placements(board, piece, RULES)
        for placement in rng.sample(placements, min(3, len(placements))):
            target = FallingPiece(piece, placement.orientation, placement.x, placement.y)
            verdict = plan_keys(Poses(board, RULES), start, target, timing)
            for first_fall in (rng.uniform(0, timing.fall_step_s) for _ in range(4)):
                landed = play_at(board, start, verdict.keys, timing, first_fall)
                if verdict.ok:
                    assert landed == sorted(placement.cells()), (piece, placement, verdict, first_fall)
                    checked += 1
    assert checked > 100


def test_a_known_first_fall_and_a_turn_wait_plan_a_turn_from_the_spawn_row() -> None:
    """Planned ahead: the piece spawns on a gravity tick, so its first fall comes a step later
    (give or take 10 ms); its turn waits for that fall, the moves before it need not."""
    board = Board(10, 20)
    step = iteration_delay(5)
    target = FallingPiece("T", 3, 3, 1)  # flat side down on the floor
    known = KeyTiming(first_key_s=0.01, key_interval_s=0.06, fall_step_s=step, first_fall_s=(step - 0.01, step + 0.01))
    keys = keys_between(SPAWN_T, 3, 3, lead=3)  # left x3 in the spawn row, then the two turns
    assert not check_keys(Poses(board, RULES), SPAWN_T, keys, target, known).ok  # the turns come at 0.19 s, before the fall
    waiting = KeyTiming(0.01, 0.06, step, first_fall_s=(step - 0.01, step + 0.01), turn_not_before_s=step + 0.02)
    assert waiting.key_times(keys)[:5] == pytest.approx([0.01, 0.07, 0.13, step + 0.02, step + 0.08])
    verdict = check_keys(Poses(board, RULES), SPAWN_T, keys, target, waiting)
    assert verdict.ok, verdict.reason
    for first_fall in (step - 0.009, step, step + 0.009):
        assert play_at(board, SPAWN_T, keys, waiting, first_fall) == sorted(target.cells())
    # the same keys with the first fall unknown: an early fall lets the first turn act in row 19 ... or not at all
    unknown = KeyTiming(0.01, 0.06, step, turn_not_before_s=step + 0.02)
    assert check_keys(Poses(board, RULES), SPAWN_T, keys, target, unknown).ok == all(
        play_at(board, SPAWN_T, keys, unknown, f) == sorted(target.cells()) for f in (0.001, 0.1, 0.2, step)
    )


def test_a_first_fall_interval_must_be_an_interval() -> None:
    with pytest.raises(ValueError, match="first fall"):
        KeyTiming(0.0, 0.06, 0.3, first_fall_s=(0.3, 0.2))


def test_poses_keep_their_own_copy_of_the_board_and_tell_it_from_others() -> None:
    board = Board(10, 20)
    poses = Poses(board, RULES)
    on_the_floor = poses.key(SPAWN_T, "drop")
    board[6, 1] = 1  # the caller's board changes after: the outcomes computed on the old one must not be reused
    assert poses.key(SPAWN_T, "drop") == on_the_floor == after_key(Board(10, 20), SPAWN_T, "drop")
    assert poses.fall(on_the_floor) is None and poses.fall(SPAWN_T) == SPAWN_T.moved(0, -1)
    assert not poses.on(board) and poses.on(Board(10, 20))


def test_poses_exist_only_under_the_standard_rules() -> None:
    with pytest.raises(NotDefinedByRules, match="Standard Tetris"):
        Poses(Board(10, 20), Rules(name="simplified"))
