"""The look of a fit's columns, as a cue that the fit stands a column off a well drawn in a fill
of its own (``calibration._filled_instead``).

Many games draw the well as a plain rectangle in a colour of its own (white paper, a dark
panel) over a background of another look (a tint, stripes, a picture).  When the stack leaves
the column at one end of the well empty, a fit a column off can score as well by its lattice,
more when a box beside the well lends it a wall: seed 0's paper scene 150 of `gamerigctl bench
vision` took the preview box's edge for its wall.  Such a fit holds at one end a column of the
background, looking like the column beyond it, while its other columns, and the column beyond
its other end, look like the well's fill: it should move a column towards that other end.

A cell's look is its mean colour at nine inner points, its median over the frames (a falling
piece is outvoted); a column's look is the median of its cells' (the stack is outvoted unless
it fills half the column).  The fill differs from the background by little on a pale skin
(paper: 0.01-0.04 in recognition's relative colour distance, while the well's columns differ
from each other by 0.001-0.005), so the test is relative to how alike the fill's columns are.
Over the 440 scenes of `gamerigctl bench vision` at seeds 0 and 1 the cue spoke on one fit, the
paper scene a column off, and on no true well (nor did it at 2.5 times); at 4 times it missed
one of tests/unit/test_calibration_fill.py's scenes.

Pure: numpy and OpenCV.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from .cell_points import inside_cells
from .recognition import relative_distance

#: Where a cell's look is sampled (cell units): its centre and eight points around it.
_INNER_POINTS = np.array([[u, v] for u in (0.3, 0.5, 0.7) for v in (0.3, 0.5, 0.7)])
#: A column differs from the fill when it is this many times further from the fill's look than
#: the farthest of the columns that look like the fill...
_DIFFERS_TIMES = 3.0
#: ...and at least this far (recognition's relative colour distance).  A well of paper on a page
#: of nearly its white differs by 0.01 or more.
_DIFFERS_AT_LEAST = 0.005
#: The end column and the column beyond it are the same background when they are nearer each
#: other than this share of the end column's distance from the fill.
_SAME_BACKGROUND = 0.5


def column_looks(frames: Sequence[np.ndarray], homography: np.ndarray, cols: int, rows: int) -> np.ndarray:
    """The look (BGR) of each column of the lattice ``homography`` (cell units to frame) from one
    beyond its left end to one beyond its right: (cols + 2) x 3."""
    points = inside_cells(homography, np.arange(-1, cols + 1), rows, _INNER_POINTS)
    per_frame = [
        cv2.remap(frame, points[..., 0], points[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        .reshape(rows, cols + 2, len(_INNER_POINTS), 3).mean(axis=2)
        for frame in frames
    ]
    return np.median(np.median(np.stack(per_frame), axis=0), axis=0)


def column_move(frames: Sequence[np.ndarray], homography: np.ndarray, cols: int, rows: int) -> int:
    """-1 or +1 when the lattice ``homography`` stands a column right or left of a well drawn in
    a fill of its own (it should move that way), else 0 (see the module docstring)."""
    looks = column_looks(frames, homography, cols, rows)
    distance = relative_distance(looks, np.median(looks[1:-1], axis=0))
    # (the end column, the one beyond it, the columns that should look like the fill, the move)
    for end, beyond, fill, move in ((cols, cols + 1, slice(0, cols), -1), (1, 0, slice(2, cols + 2), 1)):
        differs = min(distance[end], distance[beyond]) > max(_DIFFERS_TIMES * distance[fill].max(), _DIFFERS_AT_LEAST)
        if differs and relative_distance(looks[end], looks[beyond]) <= _SAME_BACKGROUND * distance[end]:
            return move
    return 0
