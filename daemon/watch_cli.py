"""`gamerigctl watch`: a live terminal view of a running rig, from its bus.

    gamerigctl watch [--config PATH] [--once] [--fps N]

:class:`RigWatcher` subscribes to the rig's bus (through the rig config's bus section, like
every service) and keeps the newest of what the view needs: the camera's ``obs.frame`` (board and
falling piece), the ai's ``predict.board``, ``plan.keys`` and ``ai.state``, the relay's
``relay.state`` and ``relay.key``, the watchdog's ``wd.state`` and its halt / resync reasons,
``cam.state``.  :func:`format_view` draws the observed and the predicted board side by side
(daemon/terminal_view.py) with the current plan and the figures: pieces, lines, level, the
capture-to-first-key latency (the plan's spawn frame capture time to the relay's first key down,
p50/p99 over the last LATENCY_WINDOW pieces), deadline misses, mismatches, resyncs, halts.
The same view is what `make demo` (daemon/rig_demo.py) shows.

Nothing is asked of gamerigd: a watcher on the bus changes nothing.  With no daemon the view
says that nothing was heard; ``--once`` prints one view after ``--wait`` seconds and exits
(3 when nothing was heard, as for gamerigctl status without a daemon).

Tested through tests/integration/test_rig_end_to_end.py (the view of a playing rig).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import deque
from typing import Any

import numpy as np
import zmq

from .bus import Endpoints, Message, Subscriber
from .bus_security import BusSecurity
from .daemon_client import DAEMON_NOT_RUNNING
from .rig_config import default_config_path, load_rig_config
from .terminal_view import render_board, side_by_side

TOPICS = ("obs.frame", "predict.board", "plan.keys", "ai.state", "relay.state", "relay.key", "wd.", "cam.state")
LATENCY_WINDOW = 500
HOME, CLEAR_BELOW, CLEAR_SCREEN = "\x1b[H", "\x1b[J", "\x1b[2J"


class RigWatcher(threading.Thread):
    """Keeps the newest rig state heard on the bus (a daemon thread; :meth:`close` ends it)."""

    def __init__(self, endpoints: Endpoints, security: BusSecurity | None = None) -> None:
        super().__init__(name="rig-watcher", daemon=True)
        self._context = zmq.Context()
        self._subscriber = Subscriber(self._context, endpoints, TOPICS, security)
        self._lock = threading.Lock()
        self._done = threading.Event()
        self.latest: dict[str, dict[str, Any]] = {}
        self.events: deque[str] = deque(maxlen=5)  # the last halts, resumes and resyncs, with their reasons
        self.key_latency_s: deque[float] = deque(maxlen=LATENCY_WINDOW)
        self._seen_at: dict[str, float] = {}  # plan root -> its spawn frame's capture time
        self.messages = 0

    def run(self) -> None:
        while not self._done.is_set():
            message = self._subscriber.receive(0.05)
            if message is not None:
                with self._lock:
                    self._take(message)
        self._subscriber.close()
        self._context.term()

    def close(self) -> None:
        """Stop listening (joins the thread)."""
        self._done.set()
        if self.is_alive():
            self.join(2.0)

    def snapshot(self) -> tuple[dict[str, dict[str, Any]], list[str], list[float], int]:
        """A consistent copy: latest bodies by topic, recent events, latencies (s), messages heard."""
        with self._lock:
            return dict(self.latest), list(self.events), list(self.key_latency_s), self.messages

    def _take(self, message: Message) -> None:
        self.messages += 1
        topic, body = message.topic, message.body
        if topic == "plan.keys":
            root = str(body.get("plan_id", "")).split(".")[0]
            if root not in self._seen_at and isinstance(body.get("t_seen"), (int, float)):
                self._seen_at = {root: body["t_seen"]}  # only the current piece's is needed
        elif topic == "relay.key":
            root = str(body.get("plan_id", "")).split(".")[0]
            seen = self._seen_at.pop(root, None)
            if seen is not None and isinstance(body.get("down_t"), (int, float)):
                self.key_latency_s.append(body["down_t"] - seen)
            return
        elif topic in ("wd.halt", "wd.resume", "wd.resync"):
            reason = body.get("reason") or ""
            self.events.append(f"{time.strftime('%H:%M:%S')} {topic[3:]} {reason}".rstrip())
        self.latest[topic] = body


def board_cells(rows: list[str] | None, falling: list[list[int]] | None = None) -> np.ndarray | None:
    """Rows (top row first, '#' full) and falling [row, col] cells as terminal_view's cells array."""
    if not rows:
        return None
    cells = np.array([[ch == "#" for ch in row] for row in rows], dtype=np.uint8)
    for row, col in falling or ():
        if 0 <= row < cells.shape[0] and 0 <= col < cells.shape[1]:
            cells[row, col] = 1
    return cells[::-1]


def format_view(latest: dict[str, dict[str, Any]], events: list[str], latency_s: list[float], heard: int) -> list[str]:
    """The live view's lines: observed and predicted boards side by side, then the figures."""
    if not heard:
        return ["nothing heard on the bus yet (is gamerigd running with this config?)"]
    frame = latest.get("obs.frame", {})
    falling = frame.get("falling") or {}
    observed = board_cells(frame.get("board"), falling.get("cells"))
    predicted = board_cells(latest.get("predict.board", {}).get("board"))
    blocks = [
        ["observed (camera)", *(render_board(observed) if observed is not None else ["(no board)"])],
        ["predicted (ai)", *(render_board(predicted) if predicted is not None else ["(no prediction)"])],
    ]
    lines = side_by_side(blocks)
    ai, wd, relay, cam = (latest.get(t, {}) for t in ("ai.state", "wd.state", "relay.state", "cam.state"))
    plan = latest.get("plan.keys", {})
    counters = wd.get("counters", {})
    lines.append(
        f"camera: {frame.get('status', '-')} {frame.get('reason') or ''}  calibration {frame.get('calibration', '-')}"
        f"  fps {_number(cam.get('fps'))}  next {frame.get('next_piece') or '-'}"
    )
    lines.append(
        f"plan {plan.get('plan_id', '-')}: {plan.get('piece', '-')} orientation {plan.get('orientation', '-')} "
        f"x {plan.get('x', '-')}  keys {' '.join(plan.get('keys', [])) or '-'}"
    )
    lines.append(
        f"game: pieces {ai.get('pieces', '-')}  lines {ai.get('lines', '-')}  level {ai.get('level', '-')}"
        f"  synced {ai.get('synced', '-')}"
    )
    lines.append(
        f"capture->first key: p50 {_ms(latency_s, 0.5)}  p99 {_ms(latency_s, 0.99)} ms ({len(latency_s)} pieces)"
        f"   deadline misses {counters.get('deadline_misses', ai.get('deadline_misses', '-'))}"
    )
    lines.append(
        f"watchdog: {'HALTED ' + str(wd.get('reason')) if wd.get('halted') else 'ok'}  mismatches "
        f"{counters.get('mismatches', '-')}  resyncs {counters.get('resyncs', '-')}  halts {counters.get('halts', '-')}"
        f"  stale {counters.get('stale_frames', '-')}  max halt {_number(wd.get('max_halt_s'))} s"
    )
    closed = [key for key, on in (relay.get("outputs") or {}).items() if on]
    lines.append(f"relay: link {relay.get('link', '-')}  safe {relay.get('safe', '-')}  closed {' '.join(closed) or 'none'}")
    lines.extend(events)
    return lines


def _number(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _ms(values: list[float], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000:.0f}"


def draw(lines: list[str], out: Any = sys.stdout) -> None:
    """Redraw in place on a terminal (cursor home, lines, clear the rest)."""
    out.write(HOME + "\n".join(line + "\x1b[K" for line in lines) + "\n" + CLEAR_BELOW)
    out.flush()


def run(args: argparse.Namespace) -> int:
    """Show the view until Ctrl-C (or once with --once)."""
    bus = load_rig_config(args.config).bus
    watcher = RigWatcher(bus.endpoints(), bus.security())
    watcher.start()
    try:
        if args.once:
            time.sleep(args.wait)
            snapshot = watcher.snapshot()
            print("\n".join(format_view(*snapshot)))
            return 0 if snapshot[3] else DAEMON_NOT_RUNNING
        sys.stdout.write(CLEAR_SCREEN)
        while True:
            draw(format_view(*watcher.snapshot()))
            time.sleep(1.0 / args.fps)
    except KeyboardInterrupt:
        return 0
    finally:
        watcher.close()


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `watch` to gamerigctl's commands."""
    parser = subparsers.add_parser(
        "watch", help="live view of the running rig: observed and predicted boards, plan, timings",
        description="Watch the running rig on its bus: the board the camera sees beside the one the ai "
        "predicts, the current plan, the game and the watchdog's figures. Ctrl-C ends it.",
    )
    parser.add_argument("--config", default=default_config_path(), help="the rig config naming the bus (default: %(default)s)")
    parser.add_argument("--fps", type=float, default=10.0, help="redraws per second (default 10)")
    parser.add_argument("--once", action="store_true", help="print one view after --wait seconds and exit")
    parser.add_argument("--wait", type=float, default=1.0, help="with --once: seconds to listen first (default 1)")
    parser.set_defaults(func=run)
