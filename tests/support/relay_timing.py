"""Measure key-press timing through the ADR2200 driver against the simulator's virtual board.

    .venv/bin/python tests/support/relay_timing.py [--presses N] [--baud 9600]

Prints, over N presses of the default 60 ms hold alternating two keys: the time from the driver
call to the relay contact closing on the board (roundtrip), the hold error as the board saw it
(contact open minus contact close minus 60 ms), and the driver's own timing_stats(). Board and
driver share one process, as in the simulator. The key edge inside the game (through the keyboard
model) is `gamerigctl bench keys`'s measurement, not this one.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from gamerig.hardware.keys import open_key_output
from gamerig.hardware.sim.relay_board import VirtualRelayBoard


def summary(values_ms: np.ndarray) -> str:
    return f"p50 {np.percentile(values_ms, 50):.2f}  p99 {np.percentile(values_ms, 99):.2f}  max {values_ms.max():.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=300)
    parser.add_argument("--baud", type=int, default=None, help="pace the virtual board like a UART at this rate")
    args = parser.parse_args()
    closes: list[float] = []
    opens: list[float] = []
    lock = threading.Lock()

    def contact(output: int, closed: bool, t: float) -> None:
        with lock:
            (closes if closed else opens).append(t)

    with tempfile.TemporaryDirectory() as folder:
        link = str(Path(folder) / "relay")
        with VirtualRelayBoard("adr2200", contact, link_path=link, baud=args.baud) as board:
            mapping = {"board": "adr2200", "port": board.path, "outputs": {"left": 0, "right": 1}}
            with open_key_output(mapping, "relay_timing") as keys:
                records = [keys.press(("left", "right")[n % 2]) for n in range(args.presses)]
                time.sleep(0.1)  # the last release reaches the board
                stats = keys.timing_stats()
    roundtrip = np.array([c - r.down_t for c, r in zip(closes, records)]) * 1e3
    board_hold_error = np.abs(np.array([o - c for c, o in zip(closes, opens)]) * 1e3 - 60.0)
    print(f"presses {args.presses}, baud {args.baud or 'unpaced'}")
    print(f"roundtrip (driver call -> contact closed): {summary(roundtrip)}")
    print(f"hold error at the board:                   {summary(board_hold_error)}")
    print(
        f"driver timing_stats: hold error p50 {stats.hold_error.p50_ms:.2f} p99 {stats.hold_error.p99_ms:.2f} "
        f"max {stats.hold_error.max_ms:.2f} ms; gap error p99 {stats.gap_error.p99_ms:.2f} ms; "
        f"jitter {stats.hold_jitter_ms:.2f} ms"
    )


if __name__ == "__main__":
    main()
