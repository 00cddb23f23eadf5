"""The ai's planner for a piece planned ahead of its spawn: with its first fall known, a turn the
spawn row does not allow waits for that fall, and the column moves go first."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from gamerig.daemon.player_config import load_player
from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import DROP, FallingPiece, after_key
from gamerig.games.tetris.key_plan import Poses, check_keys
from gamerig.games.tetris.rules import Rules, iteration_delay
from gamerig.services.ai_lost_drop import poses_along
from gamerig.services.ai_planner import KeyPlan, Planner
from gamerig.services.ai_settings import AiSettings

RULES = Rules()
STEP = iteration_delay(5)
SPAWNED_T = FallingPiece("T", 1, RULES.spawn_x, RULES.spawn_y)
FLAT_ON_THE_FLOOR = FallingPiece("T", 3, 3, 1)  # two turns and three columns left


@pytest.fixture(scope="module")
def planner() -> Planner:
    settings = AiSettings(rules=RULES, initial_level=5, preview=True, player=load_player("gamerig"), key_interval_s=0.06)
    return Planner(settings, clock=lambda: 0.0)  # the predicted spawn is t = 0


def plan_ahead(planner: Planner, first_fall_s: tuple[float, float] | None) -> KeyPlan | None:
    return planner.keys_to(
        Board(10, 20), SPAWNED_T, FLAT_ON_THE_FLOOR, 5, 0.0, confirm_again=True, first_key_t=0.01, detour=True, key_latency_s=0.0,
        first_fall_s=first_fall_s,
    )


def test_a_turn_waits_for_the_known_first_fall_while_the_moves_go_first(planner: Planner) -> None:
    plan = plan_ahead(planner, (STEP - 0.009, STEP + 0.009))
    assert plan is not None
    assert plan.keys == ("left", "left", "left", "rotate", "rotate") and not plan.final  # the drop waits for a frame
    assert plan.down_s is not None
    assert plan.down_s[:3] == pytest.approx((0.01, 0.07, 0.13))  # at once, in the spawn row
    assert plan.down_s[3] == pytest.approx(STEP + 0.009) and plan.down_s[4] == pytest.approx(STEP + 0.069)


def test_without_a_known_first_fall_the_spawn_row_allows_no_such_plan(planner: Planner) -> None:
    assert plan_ahead(planner, None) is None  # an early fall or a late one breaks every key order



def test_turns_in_the_spawn_column_wait_for_the_first_fall(planner: Planner) -> None:
    """No step aside and back to press a key sooner: at this level the turns could not come before the fall anyway."""
    plan = planner.keys_to(
        Board(10, 20), SPAWNED_T, FallingPiece("T", 3, RULES.spawn_x, 1), 5, 0.0, confirm_again=True, first_key_t=0.01, detour=True,
        key_latency_s=0.0, first_fall_s=(STEP - 0.009, STEP + 0.009),
    )
    assert plan is not None and plan.keys == ("rotate", "rotate") and plan.down_s is not None
    assert plan.down_s[0] == pytest.approx(STEP + 0.009)


def test_a_piece_nothing_else_reaches_in_time_is_dropped_where_it_is(planner: Planner) -> None:
    low_t = FallingPiece("T", 2, 3, 6)
    decision = planner.drop_in_place(Board(10, 20), low_t, 5, 0.0)
    assert decision is not None and decision.plan.keys == ("drop",) and decision.plan.final
    floor_y = low_t.y - (min(y for _, y in low_t.cells()) - 1)  # its lowest cell on row 1
    assert (decision.placement.orientation, decision.placement.x, decision.placement.y) == (2, 3, floor_y)  # straight down
    assert {(x, y) for x in range(1, 11) for y in range(1, 21) if decision.predicted[x, y]} == set(low_t.moved(0, floor_y - low_t.y).cells())
    assert planner.drop_in_place(Board(10, 20), low_t, 5, -10.0) is None  # seen 10 s ago: it has landed by now
    # where it falls all the same, with no key: the prediction for a piece whose drop was lost too late
    assert planner.fall_in_place(Board(10, 20), low_t)[:2] == (decision.placement, decision.predicted)


def test_a_piece_left_to_fall_lands_on_the_stack_and_clears_its_rows(planner: Planner) -> None:
    stack = Board.from_rows(["." * 10] * 18 + ["####.#####"] * 2)
    upright_i = FallingPiece("I", 2, 5, 15)  # vertical, over the gap
    placement, predicted, cleared = planner.fall_in_place(stack, upright_i)
    assert cleared == 2 and (placement.orientation, placement.x) == (2, 5)
    assert {(x, y) for x in range(1, 11) for y in range(1, 21) if predicted[x, y]} == {(5, 1), (5, 2)}  # the I's top half is left


def test_a_placement_is_landed_again_on_a_stack_that_changed_under_it(planner: Planner) -> None:
    decision = planner.decide(Board(10, 20), FallingPiece("O", 1, RULES.spawn_x, RULES.spawn_y - 1), None, 5, 0.0)
    assert decision is not None
    stack = Board.from_rows(["." * 10] * 17 + ["#########."] * 3)
    moved = planner.landing(stack, decision.placement)
    assert moved is not None and (moved.rotations, moved.x) == (decision.placement.rotations, decision.placement.x)
    assert moved.y == decision.placement.y + 3  # on the three rows now under it


def test_keys_a_resyncs_stack_blocks_or_outlasts_are_no_longer_in_time(planner: Planner) -> None:
    plan = plan_ahead(planner, (STEP - 0.009, STEP + 0.009))  # three columns left, then two turns
    assert plan is not None and planner.still_in_time(Board(10, 20), plan)
    in_the_way = Board.from_rows(["...#......"] * 18 + ["." * 10] * 2)  # a column the moves cannot pass, over the target
    assert not planner.still_in_time(in_the_way, plan)
    raised = Board.from_rows(["." * 10] * 2 + ["#######..."] * 18)  # it lands on its first fall, before its turns
    assert not planner.still_in_time(raised, replace(plan, target=replace(plan.target, y=plan.target.y + 18)))
    assert planner.still_in_time(Board.from_rows(["." * 10] * 3 + ["#######..."] * 17), replace(plan, target=replace(plan.target, y=plan.target.y + 17)))


def test_a_closed_loop_plan_is_taken_only_where_the_confirmations_asked_for_fit(planner: Planner) -> None:
    # One column left, the piece two fall steps (0.6 s) above its landing: the move and one
    # confirmation (0.17 s) fit, a second confirmation does not.
    start = FallingPiece("T", 1, 5, 3)
    target = after_key(Board(10, 20), start.moved(-1, 0), DROP)
    once = planner.keys_to(Board(10, 20), start, target, 5, 0.0, confirm_again=True)
    twice = planner.keys_to(Board(10, 20), start, target, 5, 0.0, confirm_again=True, confirm_rounds=2)
    assert once is not None and once.keys == ("left",) and not once.final
    assert twice is not None and twice.keys == ("left", "drop") and twice.final  # open loop instead
    from_higher = planner.keys_to(Board(10, 20), start.moved(0, 1), target, 5, 0.0, confirm_again=True, confirm_rounds=2)
    assert from_higher is not None and not from_higher.final  # a step higher, both fit


def test_a_target_at_a_wall_gets_one_more_move_towards_it_so_a_lost_move_lands_it_there_all_the_same(planner: Planner) -> None:
    well = Board.from_rows(["." * 10] * 16 + ["#########."] * 4)
    start = FallingPiece("I", 2, RULES.spawn_x, 15)  # upright, four columns left of the well
    target = after_key(well, replace(start, x=10), DROP)
    plan = planner.keys_to(well, start, target, 5, 0.0, confirm_again=True)
    assert plan is not None and plan.keys == ("right",) * 5 and not plan.final
    for lost in range(len(plan.keys)):
        rest = poses_along(well, start, plan.keys[:lost] + plan.keys[lost + 1 :])[-1]
        assert (rest.orientation, rest.x) == (2, 10)
    inner = after_key(well, replace(start, x=9), DROP)  # one column short of the wall: no extra move
    plan = planner.keys_to(well, start, inner, 5, 0.0, confirm_again=True)
    assert plan is not None and plan.keys == ("right",) * 3
    floor, low = Board(10, 20), replace(start, y=4)  # four moves just fit before it lands on the floor; five would not
    plan = planner.keys_to(floor, low, after_key(floor, replace(low, x=10), DROP), 5, 0.0, confirm_again=False)
    assert plan is not None and plan.keys == ("right",) * 4 + ("drop",)
    # a row higher, seen 0.23 s ago: five moves would fit, but with no key to spare for the relay's cadence
    higher = replace(start, y=5)
    on_floor = after_key(floor, replace(higher, x=10), DROP)
    plan = planner.keys_to(floor, higher, on_floor, 5, -0.23, confirm_again=False)
    assert plan is not None and plan.keys == ("right",) * 4 + ("drop",)
    assert check_keys(Poses(floor, RULES), higher, ("right",) * 5 + ("drop",), on_floor, plan.timing).ok


def test_at_level_10_the_planner_keeps_the_pile_lower_than_at_level_9(planner: Planner) -> None:
    # The shipped player's at_speed: at level 10 a T goes flat onto the floor rather than up the steps.
    stairs = Board.from_rows(["#........#", "##.......#", "###......#", "#####....#"], 10, 20)
    lowered = FallingPiece("T", 1, RULES.spawn_x, RULES.spawn_y - 1)
    at_9, at_10 = (planner.decide(stairs, lowered, None, level, 0.0) for level in (9, 10))
    assert at_9 is not None and (at_9.placement.rotations, at_9.placement.x, at_9.placement.y) == (3, 4, 3)
    assert at_10 is not None and (at_10.placement.rotations, at_10.placement.x, at_10.placement.y) == (2, 7, 1)


def test_a_second_thought_knowing_the_piece_after_leaves_the_z_tower_unbuilt(planner: Planner) -> None:
    # From a seed-1 level-10 game the rig lost: planned without the piece after it, each Z of a run
    # went upright onto the step at column 3; knowing another Z comes, the player lays it flat.
    step = Board.from_rows(["##........", "##.#......", "#########."], 10, 20)
    blind = planner.player_at(10).choose(step, "Z", None).placement
    assert blind is not None and (blind.rotations, blind.x) == (1, 3)
    better = planner.second_thought(step, blind, "Z", 10)
    assert better is not None and (better.rotations, better.x) == (0, 5)
    assert planner.second_thought(step, better, "Z", 10) is None  # no second thought where the first stands


#: Run in a fresh interpreter (in this one other tests may have loaded the kernels already): after
#: the warm-up, planning pieces as play does must load or compile no kernel, which would hold up
#: the first piece in play by a second or more.
AFTER_WARM_UP = """
import json
from numba.core.registry import CPUDispatcher
from gamerig.daemon.player_config import load_player
from gamerig.games.tetris import kernel
from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import FallingPiece
from gamerig.games.tetris.rules import Rules
from gamerig.services.ai_planner import Planner
from gamerig.services.ai_settings import AiSettings

rules = Rules()
dispatchers = {name: f for name, f in vars(kernel).items() if isinstance(f, CPUDispatcher)}
loaded = lambda: {name: len(f.signatures) for name, f in dispatchers.items()}
planner = Planner(AiSettings(rules=rules, initial_level=10, preview=True, player=load_player("gamerig"), key_interval_s=0.06))
planner.warm_up()
warm = loaded()
board = Board(rules.width, rules.height)
for kind, next_piece in (("J", "T"), ("S", None), ("I", "O")):
    decision = planner.decide(board, FallingPiece(kind, 1, rules.spawn_x, rules.spawn_y - 1), next_piece, 10, planner.clock())
    board = decision.predicted
    planner.landing(board, decision.placement)
planner.drop_in_place(board, FallingPiece("O", 1, rules.spawn_x, rules.spawn_y - 1), 10, planner.clock())
print(json.dumps({"warm": warm, "after": loaded()}))
"""


def test_after_the_warm_up_planning_in_play_loads_no_kernel() -> None:
    run = subprocess.run([sys.executable, "-c", AFTER_WARM_UP], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    loaded = json.loads(run.stdout.splitlines()[-1])
    assert loaded["after"] == loaded["warm"], {name: n for name, n in loaded["after"].items() if n != loaded["warm"][name]}
    assert sum(loaded["warm"].values()) >= 5  # the kernels really are numba's and were loaded
