"""A one-line progress bar for long commands (benchmarks, tuning), drawn only on a terminal.

When the stream is not a terminal (a pipe, a file, a test) the bar writes nothing,
so scripts reading a command's output never see it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

#: Redraw at most this often: a terminal gains nothing from faster updates.
MIN_REDRAW_S = 0.1
BAR_WIDTH = 24
#: Carriage return, then erase to the end of the line, so a shorter line leaves no debris.
_REDRAW = "\r\x1b[K"


def format_duration(seconds: float) -> str:
    """Seconds as H:MM:SS, or M:SS under an hour."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_progress(label: str, done: int, total: int, elapsed_s: float, details: str = "") -> str:
    """The bar's text: label, done/total, a bar, the percentage, caller's details, and an ETA.

    The ETA assumes the remaining units take as long on average as the finished ones.
    """
    fraction = done / total if total else 1.0
    filled = int(BAR_WIDTH * fraction)
    bar = "#" * filled + "-" * (BAR_WIDTH - filled)
    if done >= total:
        eta = f"done in {format_duration(elapsed_s)}"
    elif done:
        eta = f"ETA {format_duration(elapsed_s * (total - done) / done)}"
    else:
        eta = "ETA --:--"
    parts = [f"{label} {done}/{total}", f"[{bar}]", f"{fraction:4.0%}", details, eta]
    return "  ".join(part for part in parts if part)


class ProgressBar:
    """Redraws one status line in place on ``stream`` (stderr by default) if it is a terminal.

    Use as a context manager; call ``update`` as often as convenient (redraws are
    rate-limited; pass ``force=True`` for the final state); leaving the block ends the line.
    """

    def __init__(
        self,
        label: str,
        total: int,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.clock = clock
        self.started = clock()
        self._last_draw = -MIN_REDRAW_S
        self._drawn = False

    @property
    def elapsed_s(self) -> float:
        """Seconds since the bar was created."""
        return self.clock() - self.started

    def update(self, done: int, details: str = "", force: bool = False) -> None:
        """Show ``done`` of ``total`` with the caller's figures (e.g. "1,234 lines  16,000 pieces/s")."""
        if not self.enabled:
            return
        now = self.clock()
        if not force and now - self._last_draw < MIN_REDRAW_S:
            return
        self._last_draw = now
        self.stream.write(_REDRAW + format_progress(self.label, done, self.total, now - self.started, details))
        self.stream.flush()
        self._drawn = True

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
