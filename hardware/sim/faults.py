"""Faults given on the simulator's command line, checked at once and applied at their time.

A fault is written ``NAME[=VALUE][@SECONDS|@PIECESp]``: ``freeze=2@10`` freezes the camera for 2 s,
10 s after start; ``freeze=1@200p`` freezes it for 1 s when the 200th piece since start appears;
``drop=0.2`` drops a fifth of the key presses from the start; ``clear@5`` clears the board at 5 s.
:data:`TARGET_FAULTS` lists the target's own faults; the relay board's (a stuck relay, a serial
unplug) are added the same way by whoever assembles the simulator, as another :class:`FaultKind`
table and the matching actions.  Timers, and the watcher of the piece count, run in daemon threads.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gamerig.games.tetris.pieces import PIECE_NAMES

from .target import Target

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FaultKind:
    """A fault's help text and how its value is read (raising ValueError with the reason)."""

    help: str
    convert: Callable[[str | None], object]


#: How often the piece count is looked at for faults due at a piece: well under a frame.
PIECE_POLL_S = 0.005


@dataclass(frozen=True)
class Fault:
    """One parsed fault: what, with which value, how many seconds after start (or at which piece)."""

    name: str
    value: object
    at: float
    at_piece: int | None = None  # when this many pieces have appeared since start (``at`` is 0 then)


def _seconds(text: str | None) -> float:
    value = float(_needed(text))
    if not value > 0:
        raise ValueError(f"needs a positive number of seconds, got {text}")
    return value


def _probability(text: str | None) -> float:
    value = float(_needed(text))
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"needs a probability in 0..1, got {text}")
    return value


def _rows(text: str | None) -> int:
    value = int(_needed(text))
    if value < 1:
        raise ValueError(f"needs a row count >= 1, got {text}")
    return value


def _piece(text: str | None) -> str:
    if text not in tuple(PIECE_NAMES):
        raise ValueError(f"needs a piece, one of {', '.join(PIECE_NAMES)}, got {text}")
    return text


def _nothing(text: str | None) -> None:
    if text is not None:
        raise ValueError(f"takes no value, got {text}")


def _needed(text: str | None) -> str:
    if text is None:
        raise ValueError("needs a value (NAME=VALUE)")
    return text


TARGET_FAULTS: Mapping[str, FaultKind] = {
    "freeze": FaultKind("freeze=SECONDS: the camera repeats its last frame", _seconds),
    "black": FaultKind("black=SECONDS: the camera sends black frames", _seconds),
    "disconnect": FaultKind("disconnect=SECONDS: the camera drops off the network", _seconds),
    "drop": FaultKind("drop=P: each key press is lost with probability P", _probability),
    "junk": FaultKind("junk=ROWS: junk rows push the pile up", _rows),
    "place": FaultKind("place=PIECE: calibration, put a piece at the top", _piece),
    "clear": FaultKind("clear: calibration, empty the board", _nothing),
}


def parse_fault(spec: str, kinds: Mapping[str, FaultKind] = TARGET_FAULTS) -> Fault:
    """Read ``NAME[=VALUE][@SECONDS|@PIECESp]``; a ValueError names the fault and says what is wrong."""
    body, _, at_text = spec.strip().partition("@")
    name, has_value, value_text = body.partition("=")
    kind = kinds.get(name)
    if kind is None:
        raise ValueError(f"fault {spec!r}: unknown fault {name!r}; known: {', '.join(kinds)}")
    try:
        value = kind.convert(value_text if has_value else None)
    except ValueError as error:
        raise ValueError(f"fault {spec!r}: {name} {error} ({kind.help})") from None
    if at_text.endswith("p"):
        if not at_text[:-1].isdigit() or int(at_text[:-1]) < 1:
            raise ValueError(f"fault {spec!r}: @PIECESp needs a whole number of pieces >= 1, got {at_text}")
        return Fault(name, value, 0.0, int(at_text[:-1]))
    try:
        at = float(at_text) if at_text else 0.0
    except ValueError:
        raise ValueError(f"fault {spec!r}: @ needs seconds after start (@10) or a piece (@200p), got {at_text}") from None
    if at < 0:
        raise ValueError(f"fault {spec!r}: the time after start must be >= 0 s, got {at_text}")
    return Fault(name, value, at)


def target_actions(target: Target) -> dict[str, Callable[[Any], None]]:
    """How each of :data:`TARGET_FAULTS` is applied to ``target`` (values as their kinds convert them)."""
    return {
        "freeze": target.freeze_camera,
        "black": target.black_frames,
        "disconnect": target.disconnect_camera,
        "drop": target.set_drop_probability,
        "junk": target.add_junk_rows,
        "place": target.place_piece,
        "clear": lambda _: target.clear_board(),
    }


class FaultSchedule:
    """Applies faults at their times (or pieces) after :meth:`start`; :meth:`cancel` stops the ones
    still due.  ``pieces`` counts the pieces that have appeared (needed only for faults at a piece)."""

    def __init__(self, faults: list[Fault], actions: Mapping[str, Callable[[Any], None]], pieces: Callable[[], int] | None = None) -> None:
        missing = sorted({f.name for f in faults} - set(actions))
        if missing:
            raise ValueError(f"no action for the faults {', '.join(missing)}")
        self._actions = actions
        self._timers = [threading.Timer(f.at, _apply, args=(f, actions[f.name])) for f in faults if f.at_piece is None]
        for timer in self._timers:
            timer.daemon = True
        self._at_pieces = sorted((f for f in faults if f.at_piece is not None), key=lambda f: f.at_piece or 0)
        if self._at_pieces and pieces is None:
            raise ValueError("faults at a piece need the simulator's piece count")
        self._pieces = pieces
        self._cancelled = threading.Event()

    def start(self) -> FaultSchedule:
        """Start the clock: each fault fires its seconds (or pieces) from now."""
        for timer in self._timers:
            timer.start()
        if self._at_pieces and self._pieces is not None:
            watcher = threading.Thread(target=self._watch_pieces, args=(self._pieces, self._pieces()), name="sim-faults-pieces", daemon=True)
            watcher.start()
        return self

    def cancel(self) -> None:
        """Cancel the faults not applied yet."""
        self._cancelled.set()
        for timer in self._timers:
            timer.cancel()

    def _watch_pieces(self, pieces: Callable[[], int], at_start: int) -> None:
        due = list(self._at_pieces)
        while due and not self._cancelled.wait(PIECE_POLL_S):
            seen = pieces() - at_start
            while due and seen >= (due[0].at_piece or 0):
                fault = due.pop(0)
                _apply(fault, self._actions[fault.name])


def _apply(fault: Fault, action: Callable[[Any], None]) -> None:
    """Apply a scheduled fault; one the simulator refuses then (a piece that does not fit) is logged."""
    try:
        action(fault.value)
    except ValueError as error:
        log.warning("fault %s at %.1f s not applied: %s", fault.name, fault.at, error)
