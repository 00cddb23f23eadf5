"""While a part's keys are still being pressed: does a frame show that one of them was lost?

A frame lags the keys by an unknown number of them (the view latency is about two keys at the
relay's cadence), so a pose that some first keys of the part lead to is no evidence of anything:
the closed loop waits for a frame taken after the last key, and then for frames to agree.  A pose
that no first keys lead to, but that the keys lead to with one of them left out, is evidence that
that key never reached the game (a dropped press), and it comes early: a lost first move shows as
soon as the first turn after it does.  The piece then ends where the keys without it lead, and the
correction can follow the part's last key at once instead of a view latency and the closed loop's
evidence later (at level 10, 50 ms a row, that is the difference between steering a piece home
and letting it land off target).

Poses are compared by orientation and column only: the piece falls meanwhile.  The keys are
applied where the part began (the sky above the well is open: a piece in its spawn row may reach
above it, and its turns were timed for after its first fall), so a move that a lower piece would
find blocked does not make the pose look wrong.  Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from gamerig.games.tetris.board import Board
from gamerig.games.tetris.engine import DROP, FallingPiece

from .ai_lost_drop import pose_since_drop, poses_along


def end_if_one_key_lost(board: Board, start: FallingPiece, keys: Sequence[str], seen: FallingPiece) -> FallingPiece | None:
    """Where ``keys`` (a part's moves and turns, pressed from ``start``) leave the piece if the pose
    ``seen`` shows that one of them was lost; None when ``seen`` lies on the keys' own way (no
    evidence: a lagging frame shows an earlier pose there), when no single lost key explains it, or
    when the keys that could have been lost lead to different places.  The end has ``seen``'s row."""
    moves = [key for key in keys if key != DROP]
    shown = (seen.orientation, seen.x)
    if shown in {(pose.orientation, pose.x) for pose in poses_along(board, start, moves, above_allowed=True)}:
        return None
    ends = set()
    for lost in range(len(moves)):
        way = poses_along(board, start, moves[:lost] + moves[lost + 1 :], above_allowed=True)
        if shown in {(pose.orientation, pose.x) for pose in way[lost + 1 :]}:
            ends.add((way[-1].orientation, way[-1].x))
    if len(ends) != 1:
        return None
    orientation, x = ends.pop()
    return FallingPiece(seen.kind, orientation, x, seen.y)


def pose_since_lost_drop(board: Board, at_drop: FallingPiece, since: Sequence[str], seen: FallingPiece) -> FallingPiece | None:
    """Where the keys pressed since a lost drop (``since``, from ``at_drop``) put the piece, when
    the frame's pose ``seen`` lies on their way (:func:`.ai_lost_drop.pose_since_drop`) or on
    their way with one of them lost as well (the end of that way); None if neither.  A level-10
    run lost its game so: the drop and the next key (L) were lost, a turn acted, and the frame
    showed the turn; from the frame's time the turn looked still to come, so the piece was taken
    for turned twice and dropped flat across a well."""
    now = pose_since_drop(board, seen, at_drop, since)
    return now if now is not None else end_if_one_key_lost(board, at_drop, since, seen)
