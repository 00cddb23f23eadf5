"""The target machine's keyboard: relay contacts in, debounced key edges out, read once per frame.

A relay closing a key switch bounces; a keyboard controller debounces eagerly: the first change of a
contact counts at once and further changes within ``debounce_ms`` after it are bounce.  If the
contact ends the window in the other state (a press shorter than the window), that change counts
at the window's end, when the controller samples again.  The game reads its keys once per frame
and acts on rising edges only, so :meth:`KeyboardModel.take_rising` returns the presses latched
since the last read.

A press can be dropped on purpose (fault injection): with ``drop_probability`` (a seeded RNG, so a
run repeats) the press and its release are logged with ``dropped=True`` and never reach the game.

Thread-safe: the relay board calls :meth:`contact` from its own thread, the game reads from the
frame loop.  All times are time.monotonic() seconds supplied by the callers; nothing here reads a
clock, so tests drive it with exact times.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class KeyEdge:
    """A debounced change of one key: ``t`` is the contact time of the change the keyboard accepted."""

    key: str
    pressed: bool
    t: float
    #: True for a press lost on purpose (and its release): the game never sees it.
    dropped: bool = False


@dataclass
class _Contact:
    raw: bool = False  # the switch as it is now, bounce included
    state: bool = False  # the debounced state
    window_end: float = float("-inf")  # changes before this time are bounce
    dropping: bool = False  # the current press was dropped


def _check_probability(p: float) -> float:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"drop probability must be in 0..1, got {p}")
    return float(p)


class KeyboardModel:
    """Debounced keys of the target machine; see the module docstring for the model."""

    def __init__(self, debounce_ms: float = 5.0, drop_probability: float = 0.0, seed: int = 0) -> None:
        if debounce_ms < 0:
            raise ValueError(f"debounce_ms must be >= 0, got {debounce_ms}")
        self._debounce = debounce_ms / 1000.0
        self._drop_probability = _check_probability(drop_probability)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._contacts: dict[str, _Contact] = {}
        self._edges: list[KeyEdge] = []
        self._pending: list[KeyEdge] = []  # accepted presses the game has not read yet

    def set_drop_probability(self, p: float) -> None:
        """From now on drop each press with probability ``p`` (0..1)."""
        with self._lock:
            self._drop_probability = _check_probability(p)

    def contact(self, key: str, closed: bool, t: float) -> None:
        """The switch of ``key`` closed (True) or opened (False) at time ``t``; call from any thread."""
        with self._lock:
            c = self._contacts.setdefault(key, _Contact())
            self._settle(key, c, t)
            c.raw = closed
            if t >= c.window_end and closed != c.state:
                self._accept(key, c, closed, t)

    def take_rising(self, frame_t: float) -> list[str]:
        """Keys pressed (and not dropped) at or before ``frame_t`` since the last call, in order."""
        return [e.key for e in self.take_rising_edges(frame_t)]

    def take_rising_edges(self, frame_t: float) -> list[KeyEdge]:
        """Like :meth:`take_rising`, with each press's edge (its contact time) for the ground truth."""
        with self._lock:
            for key, c in self._contacts.items():
                self._settle(key, c, frame_t)
            ready = sorted((e for e in self._pending if e.t <= frame_t), key=lambda e: e.t)
            self._pending = [e for e in self._pending if e.t > frame_t]
        return ready

    def edges(self, since: int = 0) -> list[KeyEdge]:
        """Every accepted edge so far (from index ``since``), dropped ones flagged, in the order accepted.

        A change settled at the end of a bounce window is accepted when the next call looks at
        the key, so across keys the order can differ slightly from contact-time order."""
        with self._lock:
            return self._edges[since:]

    def pressed(self) -> frozenset[str]:
        """Keys whose debounced state is down now."""
        with self._lock:
            return frozenset(k for k, c in self._contacts.items() if c.state)

    def _settle(self, key: str, c: _Contact, now: float) -> None:
        """A contact that ended its bounce window in the other state changes at the window's end."""
        if c.raw != c.state and c.window_end <= now:
            self._accept(key, c, c.raw, c.window_end)

    def _accept(self, key: str, c: _Contact, pressed: bool, t: float) -> None:
        c.state = pressed
        c.window_end = t + self._debounce
        if pressed:
            c.dropping = self._drop_probability > 0 and self._rng.random() < self._drop_probability
        edge = KeyEdge(key, pressed, t, dropped=c.dropping)
        self._edges.append(edge)
        if pressed and not c.dropping:
            self._pending.append(edge)
