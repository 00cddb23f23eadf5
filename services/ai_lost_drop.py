"""After the drop was pressed: is the piece a frame shows the one in play, still falling because the
drop never reached the game (a dropped key press), or the next piece?

The ai's answer matters both ways.  Taking a still-falling piece for the next one plans it a second
time, on a board that already holds it, and moves it off the place it was steered to (with 2 %
dropped presses at level 5 this was 4 of the 9 wrong placements in 150 pieces).  Taking the next
piece for the old one leaves the next piece unplanned.

A frame shows the piece in play still falling when, after the drop had time to act and a new piece
time to spawn, it shows the same letter, lower than the piece was ever seen before the drop (a
camera that lost the piece can repeat it where it last saw it: no evidence of anything), and where
the next piece cannot be: the preview said the next piece is another letter, or the piece is not
in the spawn orientation and column, or it is lower than a piece spawned since the drop could have
fallen (only the last when a plan made ahead moves the next piece from its spawn at once: with the
next piece of the same letter a lost drop went unseen, the plan's keys moved the old piece a column
on, and three pieces in a row differed from their predictions).

While the drop was lost, the keys of the plan made ahead for the next piece went on moving this
one; the frame that shows it still falling was taken before the latest of them acted (the view
latency is two keys at the relay's cadence), so the drop is pressed again from the pose those keys
led to: from the frame's pose the moves back came one column short (a level-10 run lost its game
after three such landings).  The keys since the drop, applied to the pose the drop was pressed in,
give that pose (``pose_since_drop``) when the frame shows one of the poses along the way, or one
along their way with one of them lost as well (services/ai_lost_key.py's ``pose_since_lost_drop``);
else the keys the frame's time says it cannot show yet are applied to the frame's pose
(``pose_after``: the frame's time is known only to within a key, which put a piece one column too
far, and with a key lost, turned a piece twice).  The same
lag matters for a new piece planned from sight while keys are acting on it (after a halt, or a
discarded plan made ahead): ``keys_unseen_since_drop`` are the keys its plan starts after.  Pure:
the caller gives the times and keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import DROP, LEFT, RIGHT, ROTATE, FallingPiece, after_key
from gamerig.games.tetris.rules import Rules


@dataclass(frozen=True)
class DroppedPiece:
    """The piece in play once its drop key went down."""

    piece: str
    lowest_y: int  # the lowest row it was seen in before the drop
    drop_acted_t: float  # when the game had the drop (the key's down time plus the key latency)


def still_falling(
    dropped: DroppedPiece, seen: FallingPiece, t_state: float, next_piece: str | None, rules: Rules, fall_step_s: float,
    next_moved_at_once: bool = False,
) -> bool:
    """Whether ``seen`` (in a frame showing the game at ``t_state``) is the dropped piece, still
    falling: its drop was lost.  ``next_piece`` is the preview's letter when the drop went down (None:
    no preview); ``fall_step_s`` the game's gravity step at the current level;
    ``next_moved_at_once``: a plan made ahead moves the next piece from its spawn at once, so its
    pose tells nothing and only its height does."""
    since_drop = t_state - dropped.drop_acted_t
    if seen.kind != dropped.piece or since_drop <= fall_step_s or seen.y >= dropped.lowest_y:
        return False
    if next_piece is not None and next_piece != seen.kind:
        return True
    spawn_pose = seen.orientation == 1 and seen.x == rules.spawn_x
    rows_a_new_piece_fell = int(since_drop / fall_step_s) + 1
    return not ((spawn_pose or next_moved_at_once) and seen.y >= rules.spawn_y - rows_a_new_piece_fell)


def poses_along(board: Board, start: FallingPiece, keys: Sequence[str], above_allowed: bool = False) -> list[FallingPiece]:
    """The poses ``keys`` lead the piece through from ``start`` (``start`` first, then one per move
    or turn): each only if the piece fits there, as the game applies them; other keys and the
    falls meanwhile are left out.  ``above_allowed``: the sky above the well counts as open."""
    along = [start]
    for key in keys:
        if key in (LEFT, RIGHT, ROTATE):
            along.append(after_key(board, along[-1], key, above_allowed))
    return along


def pose_after(board: Board, seen: FallingPiece, keys: Sequence[str]) -> FallingPiece:
    """Where the piece ``seen`` is once ``keys`` acted (see :func:`poses_along`)."""
    return poses_along(board, seen, keys)[-1]


def keys_unseen_since_drop(recent_keys: Iterable[tuple[str, float]], t_state: float, key_latency_s: float) -> list[str]:
    """Of ``recent_keys`` ((key, down time), in the order pressed), those after the last drop that
    acted after ``t_state`` (a frame showing the game then cannot show them): the keys a new piece
    planned from that frame has had meanwhile.  Keys before the drop moved the piece before it."""
    unseen: list[str] = []
    for key, down_t in recent_keys:
        if key == DROP:
            unseen.clear()
        elif down_t + key_latency_s > t_state:
            unseen.append(key)
    return unseen


def last_key_since_drop(recent_keys: Iterable[tuple[str, float]]) -> float | None:
    """When the last of ``recent_keys`` ((key, down time), in the order pressed) after the last drop
    went down; None if no key followed the last drop."""
    last = None
    for key, down_t in recent_keys:
        last = None if key == DROP else down_t
    return last


def pose_since_drop(board: Board, seen: FallingPiece, at_drop: FallingPiece, keys: Sequence[str]) -> FallingPiece | None:
    """Where the piece is once ``keys`` (every key pressed since its lost drop, in order) acted,
    from ``at_drop`` (its pose when the drop went down), if the frame's pose ``seen`` is one of the
    poses along the way (the frame lags the keys by an unknown number of them); None if it is
    none (the piece was not where its plan put it): then only the frame's timing can tell."""
    along = poses_along(board, at_drop, keys)
    pose = along[-1]
    if all((p.orientation, p.x) != (seen.orientation, seen.x) for p in along):
        return None
    return FallingPiece(pose.kind, pose.orientation, pose.x, seen.y)
