"""The backend protocol every key-output device implements, and the error it raises.

Outputs are numbered from zero everywhere outside a board's protocol module (output 0 = ADR2200 K0 =
Numato relay 0 = KMtronic relay 01 = LCUS channel 01); each protocol translates to its own numbering.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol


class KeyOutputError(RuntimeError):
    """A key output failed; the message says which device, which output and why."""


class Outputs(Protocol):
    """A device with numbered on/off outputs: relay contacts or virtual keys."""

    name: str
    """Device kind and where it is, for messages: e.g. "adr2200 /dev/pts/5"."""

    def set(self, output: int, on: bool) -> None:
        """Close (on=True) or open one output; raise KeyOutputError (or a subclass) on failure."""
        ...

    def release_all(self) -> None:
        """Open every output; best effort, never raises, even on a dead port."""
        ...

    def read_back(self) -> frozenset[int] | None:
        """The outputs the device reports as closed, or None if the device cannot report."""
        ...

    def close(self) -> None:
        """Release every output, then let go of the device."""
        ...


def wired_codes(
    wiring: Mapping[int, str], table: Mapping[str, int | str], convert: Callable[[int | str], int], what: str, option: str
) -> dict[int, int]:
    """Output -> device code (``what``: a key code, a keysym) for every wired output, each key name
    looked up in ``table`` and checked by ``convert``; a ValueError names the key and the config
    ``option`` to give its code in."""
    codes = {}
    for output, key in wiring.items():
        if key not in table:
            raise ValueError(f"key {key!r} (output {output}) has no {what}: give one in {option}")
        try:
            codes[output] = convert(table[key])
        except ValueError as exc:
            raise ValueError(f"key {key!r}: {exc}") from None
    return codes
