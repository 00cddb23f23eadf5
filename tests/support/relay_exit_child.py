"""A child process that holds a key on a relay board and then ends in one of several ways.

Usage: relay_exit_child.py PORT SCENARIO. The parent (tests/integration/test_key_release_on_exit.py)
owns the virtual board on PORT, waits until the relay closes, then signals this process or lets it
run to its end. Scenarios:
  hold          down("left") and wait forever (a hung caller): the parent sends SIGTERM or SIGINT
  press         press("left", 5 s) and wait inside it: the parent sends a signal mid-press
  raise         press("left", 5 s) with a SIGUSR1 handler that raises: an exception mid-press
  chained       like hold, with a SIGTERM handler of its own installed first that exits with 7
  exit          down("left"), then sys.exit(3) without closing: interpreter exit must release
"""

from __future__ import annotations

import signal
import sys
import time
from types import FrameType

from gamerig.hardware.keys import open_key_output

LONG_S = 30.0


def raise_mid_press(signum: int, frame: FrameType | None) -> None:
    raise RuntimeError("boom mid-press")


def exit_seven(signum: int, frame: FrameType | None) -> None:
    print("own SIGTERM handler ran", flush=True)
    sys.exit(7)


def main(port: str, scenario: str) -> None:
    if scenario == "chained":
        signal.signal(signal.SIGTERM, exit_seven)
    if scenario == "raise":
        signal.signal(signal.SIGUSR1, raise_mid_press)
    keys = open_key_output(
        {"board": "adr2200", "port": port, "outputs": {"left": 0, "right": 1}, "max_hold_ms": 60_000},
        "child-keys.yaml",
    )
    if scenario in ("press", "raise"):
        keys.press("left", hold_ms=5_000)
    else:
        keys.down("left")
    if scenario == "exit":
        sys.exit(3)
    time.sleep(LONG_S)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
