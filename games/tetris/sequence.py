"""Where pieces come from: a seeded PRNG, a fixed sequence, or alternating S and Z."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

from .pieces import PIECE_NAMES

_MASK64 = (1 << 64) - 1


class SplitMix64:
    """A small, portable 64-bit PRNG (Steele, Lea and Flood's SplitMix64).

    Chosen so any implementation (Python here, a C or numba port, another
    language on the target machine) reproduces a game from its seed exactly.
    """

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK64

    def next_u64(self) -> int:
        """The next 64-bit value."""
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A value in 0..n-1 (the top 31 bits modulo n, like ``rand() % n``)."""
        return (self.next_u64() >> 33) % n


class PieceSource(Protocol):
    """A piece sequence: ``next()`` takes a piece, ``peek()`` shows the one after it."""

    def next(self) -> str:
        """Take the next piece."""
        ...

    def peek(self) -> str:
        """The piece ``next()`` will return, without taking it."""
        ...


class _Buffered(ABC):
    """Keeps one piece of look-ahead so peek() is free and never changes the sequence."""

    def __init__(self) -> None:
        self._ahead: str | None = None

    @abstractmethod
    def _produce(self) -> str:
        """Generate the piece after the buffered one."""

    def next(self) -> str:
        """Take the next piece."""
        piece = self.peek()
        self._ahead = None
        return piece

    def peek(self) -> str:
        """The piece next() will return."""
        if self._ahead is None:
            self._ahead = self._produce()
        return self._ahead


class RandomPieces(_Buffered):
    """Standard Tetris's i.i.d. uniform pieces: pieceIndex = 1 + r mod 7 -> O I S Z L J T."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed = seed
        self.rng = SplitMix64(seed)

    def _produce(self) -> str:
        return PIECE_NAMES[self.rng.below(7)]


class FixedPieces(_Buffered):
    """A given sequence, e.g. "SZTI", repeated forever (or once, then exhausted)."""

    def __init__(self, pieces: str, repeat: bool = True) -> None:
        super().__init__()
        bad = sorted(set(pieces) - set(PIECE_NAMES))
        if not pieces or bad:
            raise ValueError(f"a fixed sequence needs pieces from {PIECE_NAMES}, got {pieces!r}")
        self.pieces = pieces
        self.repeat = repeat
        self.position = 0

    def _produce(self) -> str:
        if self.position >= len(self.pieces):
            if not self.repeat:
                raise IndexError("the fixed piece sequence is exhausted")
            self.position = 0
        piece = self.pieces[self.position]
        self.position += 1
        return piece


class AlternatingSZ(FixedPieces):
    """Burgiel's unwinnable S/Z game: S, Z, S, Z, ..."""

    def __init__(self) -> None:
        super().__init__("SZ")


def make_source(kind: str, seed: int = 0, pieces: str = "") -> PieceSource:
    """Build a source by name: 'random' (seeded), 'fixed' (with ``pieces``) or 'sz'."""
    if kind == "random":
        return RandomPieces(seed)
    if kind == "fixed":
        return FixedPieces(pieces)
    if kind == "sz":
        return AlternatingSZ()
    raise ValueError(f"unknown piece sequence {kind!r}; expected random, fixed or sz")
