"""The synthetic renderer draws what the board says, where its ground truth says."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.render import render
from gamerig.games.tetris.skins import SKINS, held_out_skins, skin, tuning_skins

T_CELLS = [(4, 18), (5, 18), (6, 18), (5, 17)]


def _scene(seed: int) -> tuple[Board, np.ndarray]:
    rng = np.random.default_rng(seed)
    cells = np.zeros((20, 10), dtype=np.uint8)
    cells[:8] = rng.random((8, 10)) < 0.6
    ids = cells * rng.integers(1, 9, size=cells.shape)
    return Board(cells=cells), ids


def _changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.astype(int) - b.astype(int)).sum(axis=2) > 0


@pytest.mark.parametrize("sk", SKINS, ids=lambda s: s.name)
def test_filled_cells_are_drawn_where_the_board_says_and_nowhere_else(sk):
    sk = dataclasses.replace(sk, ghost=False)  # the ghost is drawn where no cell is: see below
    board, ids = _scene(1)
    screen = render(board, sk, falling=T_CELLS, falling_piece="T", stack_ids=ids, seed=5)
    empty = render(Board(), sk, seed=5)
    assert screen.colour_ids[17, 3] == screen.colour_ids[16, 4] == 7  # the T, Fahey index 7
    changed = _changed(screen.image, empty.image)
    c = screen.cell_px
    for y in range(1, 21):
        for x in range(1, 11):
            cx, cy = screen.cell_centre(x, y)
            patch = changed[int(cy - c / 2 + 1) : int(cy + c / 2), int(cx - c / 2 + 1) : int(cx + c / 2)]
            filled = screen.colour_ids[y - 1, x - 1] != 0
            assert patch.any() == filled, f"cell ({x}, {y}) filled={filled} but drawn={patch.any()}"


@pytest.mark.parametrize("sk", [s for s in SKINS if s.cell_style in ("flat", "bevel", "glossy")], ids=lambda s: s.name)
def test_solid_cells_show_the_piece_colour_at_their_centre(sk):
    board, ids = _scene(2)
    screen = render(board, sk, stack_ids=ids)
    empty = render(Board(), sk)
    for y, x in zip(*np.nonzero(ids)):
        cx, cy = screen.cell_centre(int(x) + 1, int(y) + 1)
        centre = screen.image[int(cy), int(cx)].astype(int)
        assert np.abs(centre - empty.image[int(cy), int(cx)]).sum() > 40


@pytest.mark.parametrize("sk", SKINS, ids=lambda s: s.name)
def test_well_corners_enclose_exactly_the_drawn_cells(sk):
    full = render(Board(cells=np.ones((20, 10), dtype=np.uint8)), sk)
    empty = render(Board(), sk)
    ys, xs = np.nonzero(_changed(full.image, empty.image))
    (left, top), _, (right, bottom), _ = full.well_corners
    slack = sk.cell_gap + full.cell_px // 6  # outlines and brackets start a little inside the cell
    assert 0 <= xs.min() - (left + 0.5) <= slack and 0 <= (right - 0.5) - xs.max() <= slack
    assert 0 <= ys.min() - (top + 0.5) <= slack and 0 <= (bottom - 0.5) - ys.max() <= slack
    assert right - left == 10 * full.cell_px and bottom - top == 20 * full.cell_px


@pytest.mark.parametrize("sk", [s for s in SKINS if s.preview is not None], ids=lambda s: s.name)
def test_next_piece_is_drawn_inside_the_preview_box(sk):
    with_next = render(Board(), sk, next_piece="I")
    without = render(Board(), sk)
    ys, xs = np.nonzero(_changed(with_next.image, without.image))
    (left, top), _, (right, bottom), _ = with_next.preview_corners
    assert xs.size and left < xs.min() and xs.max() < right and top < ys.min() and ys.max() < bottom
    assert with_next.next_piece == "I"


@pytest.mark.parametrize("sk", SKINS, ids=lambda s: s.name)
def test_flash_rows_paint_every_cell_of_the_row_or_blank_it(sk):
    board, ids = _scene(4)
    plain = render(board, sk, stack_ids=ids, seed=5)
    white = render(board, sk, stack_ids=ids, seed=5, flash_rows=(2, 3), flash_colour=(255, 255, 255))
    blank = render(board, sk, stack_ids=ids, seed=5, flash_rows=(2, 3))
    empty = render(Board(), sk, seed=5)
    c = plain.cell_px
    for y in range(1, 21):
        for x in range(1, 11):
            cx, cy = (int(v) for v in plain.cell_centre(x, y))
            cell = (slice(cy - c // 2 + 1, cy + c // 2), slice(cx - c // 2 + 1, cx + c // 2))
            if y in (2, 3):
                assert (white.image[cell] == 255).all(axis=2).any(), f"cell ({x}, {y}) not flashed"
                assert np.array_equal(blank.image[cell], empty.image[cell]), f"cell ({x}, {y}) not blanked"
            else:
                assert np.array_equal(white.image[cell], plain.image[cell])
    assert not white.colour_ids[1:3].any() and np.array_equal(white.colour_ids[3:], plain.colour_ids[3:])


def test_a_ghost_piece_outlines_where_the_piece_would_land_over_empty_cells():
    flat = skin("flat_modern")
    assert flat.ghost
    board = Board.from_rows(["#...#.....", "#.#.##...#"], height=20)
    falling = [(2, 18), (3, 18), (3, 17), (4, 17)]  # a Z over a gap for each of its columns
    screen = render(board, flat, falling=falling, falling_piece="Z")
    plain = render(board, dataclasses.replace(flat, ghost=False), falling=falling, falling_piece="Z")
    assert np.array_equal(screen.colour_ids, plain.colour_ids)  # no cell of the game's board
    changed = _changed(screen.image, plain.image)
    c = screen.cell_px
    drawn = set()
    for y in range(1, 21):
        for x in range(1, 11):
            cx, cy = screen.cell_centre(x, y)
            if changed[int(cy - c / 2 + 1) : int(cy + c / 2), int(cx - c / 2 + 1) : int(cx + c / 2)].any():
                drawn.add((x, y))
            assert not changed[int(cy) - 2 : int(cy) + 3, int(cx) - 2 : int(cx) + 3].any()  # an outline: the middle stays
    # dropped, the Z's right column (x 4) meets the stack at row 2, a row higher than x 2 and 3 would
    assert drawn == {(2, 3), (3, 3), (3, 2), (4, 2)}


def test_falling_cells_above_the_well_are_not_drawn():
    flat = dataclasses.replace(skin("flat_modern"), ghost=False)
    entering = render(Board(), flat, falling=[(4, 20), (5, 20), (5, 21), (6, 21)], falling_piece="S")
    visible_half = render(Board(), flat, falling=[(4, 20), (5, 20)], falling_piece="S")
    assert np.array_equal(entering.image, visible_half.image)
    assert int((entering.colour_ids > 0).sum()) == 2


def test_rendering_is_deterministic_for_a_seed():
    board, ids = _scene(3)
    picture = skin("picture")
    a = render(board, picture, stack_ids=ids, score=10, lines=1, seed=7)
    b = render(board, picture, stack_ids=ids, score=10, lines=1, seed=7)
    c = render(board, picture, stack_ids=ids, score=10, lines=1, seed=8)
    assert np.array_equal(a.image, b.image)
    assert not np.array_equal(a.image, c.image)


def test_skin_set_is_varied_and_keeps_some_out_of_tuning():
    assert len(SKINS) >= 8 and len({s.name for s in SKINS}) == len(SKINS)
    assert len(held_out_skins()) >= 2 and len(tuning_skins()) >= 6
    assert {s.cell_style for s in SKINS} == {"flat", "bevel", "outline", "brackets", "glossy"}
    assert {s.background.kind for s in SKINS} == {"solid", "vgradient", "checker", "picture"}
    assert any(len(set(s.piece_colours[:7])) == 1 for s in SKINS)  # a monochrome game
    assert any(s.border is None for s in SKINS) and any(s.preview is None for s in SKINS)


def test_bad_input_gets_a_specific_error():
    flat = skin("flat_modern")
    with pytest.raises(ValueError, match="outside a 10-wide board"):
        render(Board(), flat, falling=[(11, 5)], falling_piece="I")
    with pytest.raises(ValueError, match="needs its letter"):
        render(Board(), flat, falling=[(1, 5)])
    with pytest.raises(ValueError, match="next piece must be one of"):
        render(Board(), flat, next_piece="Q")
    with pytest.raises(ValueError, match=r"flash rows must be 1..20, got \(0,\)"):
        render(Board(), flat, flash_rows=(0,))
    with pytest.raises(ValueError, match="exactly on the filled cells"):
        render(Board(), flat, stack_ids=np.ones((20, 10), dtype=np.int8))
    with pytest.raises(ValueError, match="unknown skin 'nope'; known skins: elektronika1986"):
        skin("nope")
