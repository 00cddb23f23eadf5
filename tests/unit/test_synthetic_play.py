"""The synthetic play the vision bench films, checked against the rules it claims to follow."""

from __future__ import annotations

from functools import cache
from itertools import islice
from typing import Any

import numpy as np

from gamerig.daemon.player_config import load_player
from gamerig.games.tetris import synthetic_play
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.vision_bench import MAX_GAME_FRAMES


def _scene_play(careless: bool, seed: int = 1, **style: Any) -> list[synthetic_play.TruthFrame]:
    rng = np.random.default_rng(seed)
    defaults = dict(level=9, key_frames=2, hidden_spawn=True, clear_animation="white", flash_frames=4, careless=careless)
    play = synthetic_play.ScenePlay(load_player("dellacherie"), Rules(), seed, 40, synthetic_play.PlayStyle(**{**defaults, **style}), rng)
    return list(islice(play.frames(), MAX_GAME_FRAMES)) if careless else list(islice(play.frames(), 1500))


@cache
def _ai_play() -> list[synthetic_play.TruthFrame]:
    return _scene_play(careless=False)


def test_pieces_enter_at_the_top_and_move_one_step_at_a_time() -> None:
    frames = _ai_play()
    pieces = {f.piece_number for f in frames if f.shown.piece}
    assert len(pieces) >= 15
    for before, after in zip(frames, frames[1:]):
        if "spawn" in after.events:
            assert min(y for _, y in after.shown.falling) >= 20  # partly above the 20 visible rows
            assert not after.shown.whole_piece
        elif before.shown.piece and after.shown.piece and before.piece_number == after.piece_number:
            assert np.array_equal(before.shown.stack_ids, after.shown.stack_ids)  # only the piece moves
            old, new = set(before.shown.falling), set(after.shown.falling)
            if old != new:
                shifted = any(new == {(x + dx, y + dy) for x, y in old} for dx, dy in ((0, -1), (1, 0), (-1, 0)))
                turned = len(new) == 4 and bool(old & new)  # every orientation keeps the origin cell
                assert shifted or turned, f"{sorted(old)} -> {sorted(new)} is no single key or gravity step"


def test_full_rows_flash_then_collapse_and_the_colours_follow_the_stack() -> None:
    frames = _ai_play()
    clears = [i for i, f in enumerate(frames) if "rows_cleared" in f.events]
    assert clears
    for i in clears:
        flashing = frames[i : i + 4]
        assert all(f.kind == "line_clear" for f in flashing)
        full = flashing[0].accepted[0].all(axis=1)
        assert full.any() and flashing[0].shown.flash_rows == tuple(int(r) + 1 for r in np.flatnonzero(full))
        assert flashing[1].shown.flash_rows == ()  # the flash alternates with the rows' own look
        after = frames[i + 4]
        assert after.kind == "play" and np.array_equal(after.accepted[0], flashing[0].accepted[1])
        assert int(after.accepted[0].sum()) == int(flashing[0].accepted[0].sum()) - 10 * int(full.sum())
    for f in frames:
        assert f.shown.stack_ids.max() <= 7 and np.array_equal(f.shown.stack_ids > 0, f.shown.stack_ids.astype(bool))


def test_the_wipe_empties_full_rows_from_the_centre_out_before_they_collapse() -> None:
    frames = _scene_play(careless=False, clear_animation="wipe", flash_frames=5)
    clears = [i for i, f in enumerate(frames) if "rows_cleared" in f.events]
    assert clears
    for i in clears:
        wipe = frames[i : i + 5]
        full = np.flatnonzero(wipe[0].accepted[0].all(axis=1))
        shown = [f.shown.board()[full] for f in wipe]
        counts = [int(rows.sum()) for rows in shown]
        assert counts == sorted(counts, reverse=True) and counts[0] < 10 * len(full) and counts[-1] == 0
        assert not shown[0][:, 4:6].any() and shown[0][:, [0, 9]].all()  # the centre goes first


def test_a_careless_game_ends_and_the_well_fills_with_grey_from_the_bottom() -> None:
    frames = _scene_play(careless=True)
    ends = [i for i, f in enumerate(frames) if "game_over" in f.events]
    assert len(ends) == 1
    tail = frames[ends[0] :]
    assert all(f.kind == "game_over" for f in tail) and len(tail) > synthetic_play.GAME_OVER_HOLD_S * synthetic_play.FPS
    fills = [len(f.shown.flash_rows) for f in tail]
    assert fills == sorted(fills) and fills[-1] == 20 and all(f.shown.flash == "grey" for f in tail if f.shown.flash_rows)
    assert all(np.array_equal(f.accepted[0], tail[0].accepted[0]) for f in tail)  # the game's board no longer changes


def test_torn_frames_accept_the_old_and_the_new_board() -> None:
    frames = _ai_play()
    torn = synthetic_play.with_tears(frames, np.random.default_rng(0), 1.0)
    tears = [(i, f) for i, f in enumerate(torn) if f.kind == "tear"]
    assert len(tears) > 10
    for i, f in tears:
        assert f.torn_from is frames[i - 1].shown and 0 < f.tear_at < 1
        assert np.array_equal(f.accepted[0], frames[i].accepted[0]) and np.array_equal(f.accepted[1], frames[i - 1].accepted[0])
