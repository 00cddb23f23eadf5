"""`gamerigctl demo` as a user runs it: into a pipe, and on a real pseudo-terminal stopped by Ctrl-C."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

GAMERIGCTL = str(Path(sys.executable).parent / "gamerigctl")
HOME = "\x1b[H"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Generous: the first run on a fresh clone compiles the AI kernels before playing.
DEADLINE_S = 180


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    command = [GAMERIGCTL, "demo", "--player", "dellacherie", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=DEADLINE_S)


def test_piped_demo_prints_plain_lines_and_stops_at_max_pieces() -> None:
    proc = demo("--max-pieces", "200", "--pieces-per-second", "0")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout
    lines = proc.stdout.splitlines()
    assert "game 1 started (seed 1)" in lines
    assert re.fullmatch(r"game 1 ended \(max pieces\): \d+ lines, 200 pieces, score \d+", lines[-2])
    assert re.fullmatch(r"demo: 1 game, 200 pieces, best \d+ lines \(dellacherie, standard 10 x 20, seeds 1\.\.1\)", lines[-1])


def test_piped_demo_prints_a_status_line_every_second() -> None:
    # 150 pieces at 100 pieces/s take at least 1.5 s, so at least one periodic line is due.
    proc = demo("--max-pieces", "150", "--pieces-per-second", "100")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^game 1  seed 1  lines \d+  level \d+  score \d+  pieces \d+  pieces/s [\d.]+  best \d+$", proc.stdout, re.MULTILINE)


def test_piped_demo_restarts_a_lost_game_with_the_next_seed() -> None:
    # A 6 x 6 board is lost within a few dozen pieces.
    proc = demo("--width", "6", "--height", "6", "--seed", "7", "--max-pieces", "60", "--pieces-per-second", "0")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^game 1 ended \(game over\)", proc.stdout, re.MULTILINE)
    assert "game 2 started (seed 8)" in proc.stdout
    assert re.search(r"^demo: \d+ games, 60 pieces, best \d+ lines \(dellacherie, standard 6 x 6, seeds 7\.\.\d+\)$", proc.stdout, re.MULTILINE)


def read_until(fd: int, done: Callable[[str], bool], deadline: float) -> str:
    """Read a pty master until ``done(text so far)``, the child closes it, or the deadline passes."""
    text = ""
    while not done(text) and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child exited and closed the terminal
            break
        if not chunk:
            break
        text += chunk.decode(errors="replace")
    return text


def complete_frames(text: str) -> list[list[str]]:
    """Every fully drawn frame (between two home-cursor codes) as plain lines."""
    frames = text.split(HOME)[1:-1]
    return [ANSI.sub("", frame).replace("\r", "").splitlines() for frame in frames]


def board_with_pieces_drawn(text: str) -> bool:
    return any(
        sum(line.startswith("<!") and "[]" in line for line in frame) > 0 for frame in complete_frames(text)
    )


def test_terminal_demo_draws_the_board_and_exits_0_on_ctrl_c() -> None:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))  # rows, columns
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [GAMERIGCTL, "demo", "--player", "dellacherie", "--preview"],
        stdin=slave, stdout=slave, stderr=slave, env=env,
    )
    os.close(slave)
    try:
        deadline = time.monotonic() + DEADLINE_S
        shown = read_until(master, board_with_pieces_drawn, deadline)
        assert board_with_pieces_drawn(shown), shown[-2000:]
        frame = [f for f in complete_frames(shown) if any("[]" in line for line in f)][-1]
        board_rows = [line for line in frame if re.match(r"<!( \.|\[\]){10}!>", line)]
        assert len(board_rows) == 20
        assert any(line.startswith("<!" + "=" * 20 + "!>") for line in frame)
        assert any(re.search(r"lines +\d+$", line) for line in frame)
        assert any(line.rstrip().endswith("next") for line in frame)

        proc.send_signal(signal.SIGINT)
        rest = read_until(master, lambda text: False, deadline)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert "Traceback" not in rest
    assert "\x1b[?25h" in rest  # the cursor is given back
    assert re.search(r"demo: 1 games?, \d+ pieces, best \d+ lines", ANSI.sub("", rest))
