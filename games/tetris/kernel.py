"""The compiled hot path: placement search, piece landing and board features.

Everything a player does thousands of times per piece lives here, compiled by
numba.  Why a compiled kernel, measured on this machine (2 shared cores, 10 x 20,
Standard rules, Dellacherie weights): the fastest pure-Python player we could
write (int-bitmask rows, incremental features, per-piece generated code, 10 x 20
only) made 18,900 one-piece pieces/s against this kernel's 22,900 before its
current optimisations (43,600 now); its two-piece decisions took 2.0 ms at p99
in play but 8.0 ms on crowded boards, past the 5 ms budget (this kernel: 3.0 ms),
and the one-piece expectation over the seven next pieces needs 7x those
replies.  The kernel also serves every board size, 4 x 4 to 200 x 400, with one
plain loop-based implementation instead of width-specific bit tricks.

Conventions: ``cells[y, x]`` with 0-based y from the bottom and 0-based x;
pieces and orientations are 0-based indices (kind 0..6 = O I S Z L J T,
orientation r = number of counter-clockwise rotations from spawn).  The public
API in :mod:`.placements` and :mod:`.players` translates to 1-based game terms.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .pieces import ORIENTATIONS, PIECE_NAMES

# ---- piece tables -------------------------------------------------------------

N_KINDS = 7


def _shape_table() -> tuple[np.ndarray, np.ndarray]:
    shapes = np.zeros((N_KINDS, 4, 4, 2), dtype=np.int64)
    counts = np.zeros(N_KINDS, dtype=np.int64)
    for k, name in enumerate(PIECE_NAMES):
        table = ORIENTATIONS[name]
        counts[k] = len(table)
        for r in range(4):
            for c, (dx, dy) in enumerate(table[r % len(table)]):
                shapes[k, r, c, 0] = dx
                shapes[k, r, c, 1] = dy
    return shapes, counts


SHAPES, ORIENT_COUNT = _shape_table()

# ---- feature vector -----------------------------------------------------------

#: Names of the features, in the order of the vector the kernels fill.
FEATURE_NAMES = (
    "landing_height",  # 0.5 * (lowest + highest row of the placed piece), 1-based, before clearing
    "eroded_cells",  # rows cleared x cells of the piece in those rows
    "row_transitions",  # filled/empty changes along rows, walls filled, all H rows
    "column_transitions",  # filled/empty changes along columns, floor filled, sky empty
    "holes",  # empty cells below the top filled cell of their column
    "wells",  # Dellacherie's cumulative wells (each flanked empty cell adds its empty run below)
    "hole_depth",  # per column with a hole: filled cells above its lowest hole
    "rows_with_holes",  # rows holding at least one hole
    "rows_cleared",  # rows this placement completed
    "pile_height",  # highest filled row after clearing
    "ceiling_pressure",  # sum over columns of how far they reach into the top 6 rows
    "unreachable",  # (piece, orientation, column) moves the stack blocks at the spawn, all 7 pieces
    "blocked_spawns",  # pieces that could not even spawn (the game would end if one came)
)
N_FEATURES = len(FEATURE_NAMES)

# Candidate buffer columns.
C_ROT, C_X, C_Y = 0, 1, 2
MAX_CANDIDATES = 4 * 200  # orientations x columns on the widest board

NEG_INF = -1e300


@njit(cache=True)
def fits(cells, kind, rot, x, y):
    """True if the piece lies inside the board and overlaps nothing (origin x, y 0-based)."""
    h, w = cells.shape
    for c in range(4):
        cx = x + SHAPES[kind, rot, c, 0]
        cy = y + SHAPES[kind, rot, c, 1]
        if cx < 0 or cx >= w or cy < 0 or cy >= h:
            return False
        if cells[cy, cx] != 0:
            return False
    return True


@njit(cache=True)
def drop_row(cells, kind, rot, x, y):
    """Row where a piece at (x, y) comes to rest when dropped straight down."""
    while fits(cells, kind, rot, x, y - 1):
        y -= 1
    return y


@njit(cache=True)
def horizontal_extent(kind, rot):
    """Leftmost and rightmost column offsets of a piece's cells."""
    lo = 0
    hi = 0
    for c in range(4):
        lo = min(lo, SHAPES[kind, rot, c, 0])
        hi = max(hi, SHAPES[kind, rot, c, 0])
    return lo, hi


@njit(cache=True)
def reachable_span(cells, kind, rot, x, y):
    """Leftmost and rightmost origin columns reachable from (x, y) one column at a time."""
    left = x
    while fits(cells, kind, rot, left - 1, y):
        left -= 1
    right = x
    while fits(cells, kind, rot, right + 1, y):
        right += 1
    return left, right


@njit(cache=True)
def landing_row(cells, heights, kind, rot, x, y):
    """Where a piece at (x, y) lands when dropped: from the column heights when it is
    above every column it covers (all cells above a column's top are empty), else
    by stepping down."""
    land = -1000
    for c in range(4):
        need = heights[x + SHAPES[kind, rot, c, 0]] - SHAPES[kind, rot, c, 1]
        if need > land:
            land = need
    if land <= y:
        return land
    return drop_row(cells, kind, rot, x, y)


@njit(cache=True)
def column_heights(cells, heights):
    """Fill heights[x] with 1 + the row of the top filled cell (0 if empty); return the max."""
    h, w = cells.shape
    top = 0
    for x in range(w):
        hx = 0
        for y in range(h - 1, -1, -1):
            if cells[y, x] != 0:
                hx = y + 1
                break
        heights[x] = hx
        if hx > top:
            top = hx
    return top


@njit(cache=True)
def standard_candidates(cells, kind, heights, out):
    """Placements reachable under Fahey's rules; returns their count, -1 if the spawn is blocked.

    The piece spawns at (W/2, H-1) 0-based, is moved after falling one row:
    rotations first (each must fit), then single-column translations (each
    must fit), then dropped.  Rows of ``out`` are (rotations, x, landing y),
    ordered by rotations then x ascending, which is Fahey's search order.  A
    piece that cannot fall one row lands where it spawned.  ``heights`` are
    the board's column heights.
    """
    h, w = cells.shape
    sx = w // 2
    sy = h - 1
    if not fits(cells, kind, 0, sx, sy):
        return -1
    my = sy - 1
    if not fits(cells, kind, 0, sx, my):
        out[0, C_ROT] = 0
        out[0, C_X] = sx
        out[0, C_Y] = sy
        return 1
    n = 0
    for r in range(ORIENT_COUNT[kind]):
        if r > 0 and not fits(cells, kind, r, sx, my):
            break
        left, right = reachable_span(cells, kind, r, sx, my)
        for x in range(left, right + 1):
            out[n, C_ROT] = r
            out[n, C_X] = x
            out[n, C_Y] = landing_row(cells, heights, kind, r, x, my)
            n += 1
    return n


@njit(cache=True)
def simplified_candidates(cells, kind, heights, out):
    """Every orientation and column dropped from above (the research literature's game).

    Landing rows may lie above the board: such a placement ends the game and
    callers skip it.  ``heights`` are the board's column heights.  Returns the count.
    """
    h, w = cells.shape
    n = 0
    for r in range(ORIENT_COUNT[kind]):
        lo, hi = horizontal_extent(kind, r)
        for x in range(-lo, w - hi):
            y = -1000
            for c in range(4):
                need = heights[x + SHAPES[kind, r, c, 0]] - SHAPES[kind, r, c, 1]
                if need > y:
                    y = need
            out[n, C_ROT] = r
            out[n, C_X] = x
            out[n, C_Y] = y
            n += 1
    return n


@njit(cache=True)
def piece_top(kind, rot, y):
    """Highest 0-based row a piece with origin row y occupies."""
    top = -1000
    for c in range(4):
        top = max(top, y + SHAPES[kind, rot, c, 1])
    return top


@njit(cache=True)
def place(src, dst, kind, rot, x, y, clearable):
    """Copy src to dst, add the piece, collapse full rows below ``clearable``.

    Returns (rows cleared, eroded piece cells, landing height x 2); landing
    height is doubled so it stays an integer (0.5 * (ymin + ymax), 1-based).
    """
    h, w = src.shape
    dst[:, :] = src
    ymin = 1000
    ymax = -1000
    for c in range(4):
        cy = y + SHAPES[kind, rot, c, 1]
        dst[cy, x + SHAPES[kind, rot, c, 0]] = 1
        ymin = min(ymin, cy)
        ymax = max(ymax, cy)
    # Fahey's collapse: scan upward from the piece's lowest row to the last
    # clearable row, re-checking a row after removing it.  A full top row that
    # the quirk left in place is pulled down into reach and removed with it.
    lines = 0
    eroded = 0
    row = ymin
    while row < clearable:
        empty = True
        full = True
        for cx in range(w):
            if dst[row, cx] == 0:
                full = False
            else:
                empty = False
        if empty:  # nothing above an empty row
            break
        if not full:
            row += 1
            continue
        original = row + lines  # every row removed so far was below this one
        for c in range(4):
            if y + SHAPES[kind, rot, c, 1] == original:
                eroded += 1
        lines += 1
        for r2 in range(row, h - 1):
            dst[r2, :] = dst[r2 + 1, :]
        dst[h - 1, :] = 0
    return lines, lines * eroded, ymin + ymax + 2


@njit(cache=True)
def reach_counts(cells):
    """Moves the stack blocks for a piece about to spawn, summed over the 7 pieces.

    Returns (blocked moves, pieces that cannot spawn).  A move is an
    (orientation, column) pair that is inside the board; it is blocked when the
    Standard Tetris path (fall one row, rotate, translate) cannot reach it.
    """
    h, w = cells.shape
    sx = w // 2
    my = h - 2
    blocked_moves = 0
    blocked_spawns = 0
    for kind in range(N_KINDS):
        total = 0
        for r in range(ORIENT_COUNT[kind]):
            lo, hi = horizontal_extent(kind, r)
            total += w - (hi - lo)
        if not fits(cells, kind, 0, sx, h - 1):
            blocked_spawns += 1
            blocked_moves += total
            continue
        if not fits(cells, kind, 0, sx, my):
            blocked_moves += total - 1
            continue
        reached = 0
        for r in range(ORIENT_COUNT[kind]):
            if r > 0 and not fits(cells, kind, r, sx, my):
                break
            left, right = reachable_span(cells, kind, r, sx, my)
            reached += right - left + 1
        blocked_moves += total - reached
    return blocked_moves, blocked_spawns


@njit(cache=True)
def board_features(cells, heights, feats):
    """Fill the board-only features of a settled board (all but landing height, eroded, rows cleared)."""
    settled_features(cells, heights, column_heights(cells, heights), feats)


@njit(cache=True)
def settled_features(cells, heights, top, feats):
    """board_features given the board's column heights and pile height."""
    h, w = cells.shape
    # row transitions: rows above the pile count 2 each
    rowt = 2 * (h - top)
    rows_with_holes = 0
    for y in range(top):
        prev = 1
        hole_row = False
        for x in range(w):
            cur = cells[y, x]
            if cur != prev:
                rowt += 1
            prev = cur
            if cur == 0 and y < heights[x]:
                hole_row = True
        if prev == 0:
            rowt += 1
        if hole_row:
            rows_with_holes += 1
    colt = 0
    holes = 0
    hole_depth = 0
    wells = 0
    for x in range(w):
        hx = heights[x]
        # one pass down the column: holes, hole depth, and transitions with the
        # sky above (+1 from the top cell) and the filled floor below
        colt += 1
        prev = 1
        filled_above = 0
        depth_here = 0
        for y in range(hx - 1, -1, -1):
            cur = cells[y, x]
            if cur != prev:
                colt += 1
            prev = cur
            if cur != 0:
                filled_above += 1
            else:
                holes += 1
                depth_here = filled_above
        if prev == 0:
            colt += 1
        hole_depth += depth_here
        # wells: sum the empty run below each flanked empty cell (walls are filled)
        lh = h if x == 0 else heights[x - 1]
        rh = h if x == w - 1 else heights[x + 1]
        limit = min(lh, rh)  # above the lower neighbour no cell is flanked
        run = 0
        for y in range(limit):
            if cells[y, x] != 0:
                run = 0
                continue
            run += 1
            left = 1 if x == 0 else cells[y, x - 1]
            right = 1 if x == w - 1 else cells[y, x + 1]
            if left != 0 and right != 0:
                wells += run
    pressure = 0
    zone = h - 6
    for x in range(w):
        if heights[x] > zone:
            pressure += heights[x] - zone
    feats[2] = rowt
    feats[3] = colt
    feats[4] = holes
    feats[5] = wells
    feats[6] = hole_depth
    feats[7] = rows_with_holes
    feats[9] = top
    feats[10] = pressure
    if top > h - 4:  # only a stack reaching the rows a moving piece sweeps can block moves
        unreachable, blocked = reach_counts(cells)
    else:
        unreachable, blocked = 0, 0
    feats[11] = unreachable
    feats[12] = blocked


@njit(cache=True)
def placement_features(src, dst, heights, kind, rot, x, y, clearable, feats):
    """Place a piece on a copy and fill the full feature vector; returns rows cleared."""
    base = np.empty_like(heights)
    column_heights(src, base)
    return features_after(src, dst, base, heights, kind, rot, x, y, clearable, feats)


@njit(cache=True)
def features_after(src, dst, base, heights, kind, rot, x, y, clearable, feats):
    """placement_features given ``base``, the column heights of ``src``.

    Without a line clear the new heights follow from the piece alone, which
    saves rescanning every column for each of the dozens of candidates.
    """
    lines, eroded, lh2 = place(src, dst, kind, rot, x, y, clearable)
    feats[0] = 0.5 * lh2
    feats[1] = eroded
    feats[8] = lines
    if lines:
        top = column_heights(dst, heights)
    else:
        top = 0
        for cx in range(heights.shape[0]):
            heights[cx] = base[cx]
        for c in range(4):
            cx = x + SHAPES[kind, rot, c, 0]
            cy = y + SHAPES[kind, rot, c, 1] + 1
            if cy > heights[cx]:
                heights[cx] = cy
        for cx in range(heights.shape[0]):
            if heights[cx] > top:
                top = heights[cx]
    settled_features(dst, heights, top, feats)
    return lines


@njit(cache=True)
def rate(feats, weights):
    """Linear rating of a feature vector."""
    s = 0.0
    for i in range(feats.shape[0]):
        s += feats[i] * weights[i]
    return s


@njit(cache=True)
def priority(w, rot, x):
    """Fahey's Dellacherie tie-break: far from the centre, then left of it, then fewer rotations."""
    sx = w // 2
    p = 100 * abs(x - sx) - rot
    if x < sx:
        p += 10
    return p


@njit(cache=True)
def candidates(cells, kind, standard, heights, out):
    """Placements of a piece under either rule set (see the two functions above).

    Leaves the board's column heights in ``heights``.
    """
    column_heights(cells, heights)
    if standard:
        return standard_candidates(cells, kind, heights, out)
    return simplified_candidates(cells, kind, heights, out)


@njit(cache=True)
def rate_candidates(cells, kind, standard, clearable, weights, use_priority, out, ratings, scratch, base, heights, feats):
    """Rate every placement; returns (count, index of the best, its rating).

    Placements that end the game (simplified rules: sticking out above the
    board) rate -inf.  Ties: with ``use_priority`` Fahey's priority decides,
    otherwise the first found wins.  Count -1 means the piece cannot spawn.
    """
    h, w = cells.shape
    n = candidates(cells, kind, standard, base, out)
    best = -1
    best_rating = NEG_INF
    best_prio = -(1 << 30)
    for i in range(n):
        r = out[i, C_ROT]
        x = out[i, C_X]
        y = out[i, C_Y]
        if piece_top(kind, r, y) >= h:
            ratings[i] = NEG_INF
            continue
        features_after(cells, scratch, base, heights, kind, r, x, y, clearable, feats)
        v = rate(feats, weights)
        ratings[i] = v
        if best < 0 or v > best_rating:
            best = i
            best_rating = v
            if use_priority:
                best_prio = priority(w, r, x)
        elif use_priority and v == best_rating:
            p = priority(w, r, x)
            if p > best_prio:
                best = i
                best_prio = p
    return n, best, best_rating


@njit(cache=True)
def best_reply(cells, kind, standard, clearable, weights, out, ratings, scratch, base, heights, feats):
    """Rating of the best placement of ``kind`` on ``cells``; -inf if it cannot spawn or place."""
    n, best, rating = rate_candidates(cells, kind, standard, clearable, weights, False, out, ratings, scratch, base, heights, feats)
    return rating if best >= 0 else NEG_INF


#: What a next piece that cannot be placed is worth in an expectation: finite, so the
#: chance of losing is weighed against the other pieces, but below any real rating.
LOSS = -1e9
ANY_PIECE = -1


@njit(cache=True)
def reply_values(cells, kind, next_kind, standard, clearable, weights, out, order, start, stop, values, out2, ratings2, after, scratch, base, heights, feats):
    """Value first placements ``order[start:stop]`` (rows of ``out``) by the next piece's reply.

    value = the first placement's move terms (landing height, eroded cells,
    rows cleared) + the rating of the next piece's best placement on the board
    it leaves.  With ``next_kind`` known that is one best reply (-inf if it
    cannot be placed); with ``ANY_PIECE`` it is the mean over the seven
    equally likely pieces, a lost game counting ``LOSS``.
    """
    for j in range(start, stop):
        i = order[j]
        lines, eroded, lh2 = place(cells, after, kind, out[i, C_ROT], out[i, C_X], out[i, C_Y], clearable)
        if next_kind >= 0:
            reply = best_reply(after, next_kind, standard, clearable, weights, out2, ratings2, scratch, base, heights, feats)
        else:
            reply = 0.0
            for k in range(N_KINDS):
                r = best_reply(after, k, standard, clearable, weights, out2, ratings2, scratch, base, heights, feats)
                reply += (LOSS if r == NEG_INF else r) / N_KINDS
        if reply == NEG_INF:
            values[i] = NEG_INF
        else:
            values[i] = weights[0] * 0.5 * lh2 + weights[1] * eroded + weights[8] * lines + reply


@njit(cache=True)
def settle(cells, kind, rot, x, y, clearable, heights):
    """Land a chosen placement in place; returns (rows cleared, pile height after)."""
    lines, _, _ = place(cells, cells, kind, rot, x, y, clearable)
    return lines, column_heights(cells, heights)
