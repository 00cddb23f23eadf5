"""The game's level as its gravity shows it: the fall step measured from the camera's frames.

The ai's level decides every deadline and the gravity ticks that plans made ahead are timed to.
With no level on the screen it was the initial level raised by the lines the ai itself counted,
from its own predictions; every piece that landed elsewhere than predicted (a lost key press, a
deadline miss) could leave that count a few lines off, and at a level boundary the ai then
timed its keys to the wrong fall step: in a run with 2 % dropped presses, one level too low at
level 8 (0.2 s steps against 0.15 s) had the next pieces' first keys pressed before they spawned,
mismatch after mismatch, and the game was lost.

So the step is measured (services/ai_model.py weighs it against the lines): when the same piece
shows one row lower in two fall pictures in a row (consecutive rows: no tick missed between
them), their interval is a sample of the step.  The median of the last SAMPLES samples, once
MIN_SAMPLES are in and all agree with it, names the level whose step (``rules.iteration_delay``)
is nearest.  Samples are capture times, which bursts of frames jitter
by a frame or two; the levels' steps are 50 ms apart, which a median of several tells apart.
Pure: the caller gives the times.
"""

from __future__ import annotations

from collections import deque
from statistics import median

from gamerig.games.tetris.engine import MAX_LEVEL, MIN_LEVEL
from gamerig.games.tetris.rules import iteration_delay

#: Intervals the estimate is the median of, and how many it needs: few, so a new level takes
#: over within a piece or two (at level 5-7 a piece shows one or two intervals before its drop;
#: with 9 and 5, timing stayed a level behind for several pieces after each level change).
SAMPLES = 5
MIN_SAMPLES = 3
#: Every sample must lie within this share of the median: at level 10 (50 ms, three frames) a
#: picture a frame or two late makes intervals of 33-83 ms, whose median can name level 9 (a bench
#: run at level 10 lost its game when it did), so there the estimate abstains.
AGREEMENT = 0.25
#: Two fall pictures further apart than this are not taken as consecutive ticks (the slowest step is 0.5 s).
MAX_INTERVAL_S = 0.6


class FallStep:
    """The fall step from pictures of a piece falling row by row; see the module docstring."""

    def __init__(self) -> None:
        self._intervals: deque[float] = deque(maxlen=SAMPLES)
        self._last: tuple[str, int, float] | None = None  # the latest fall picture: piece, row, t_capture
        self._level: int | None = None  # the samples' estimate, kept: the ai asks for it at every turn of its loop

    def see_fall(self, piece: str, row: int, t_capture: float) -> None:
        """The frame of ``t_capture`` first showed ``piece`` fallen to ``row``."""
        last = self._last
        if last is not None and last[0] == piece and last[1] == row + 1 and 0.0 < t_capture - last[2] <= MAX_INTERVAL_S:
            self._intervals.append(t_capture - last[2])
            self._level = self._estimate()
        self._last = (piece, row, t_capture)

    def forget(self) -> None:
        """Drop the samples: the level may just have changed (see services/ai_model.py)."""
        self._intervals.clear()
        self._last = self._level = None

    def level(self) -> int | None:
        """The level whose fall step the recent falls show; None until enough were seen."""
        return self._level

    def _estimate(self) -> int | None:
        if len(self._intervals) < MIN_SAMPLES:
            return None
        step = median(self._intervals)
        if any(abs(interval - step) > AGREEMENT * step for interval in self._intervals):
            return None  # pictures a frame or two late at a fast level: the lines' count decides
        return min(range(MIN_LEVEL, MAX_LEVEL + 1), key=lambda level: abs(iteration_delay(level) - step))
