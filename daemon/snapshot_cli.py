"""`gamerigctl snapshot [--out PNG] [--json]`: what the camera sees beside what the rig believes.

Asks the running gamerigd (``snapshot`` on the control socket); gamerigd asks the camera service
(``ctl.snapshot``), which answers with its newest frame as a downscaled JPEG and its newest
observation (``cam.snapshot``), and gamerigd adds the latest ``predict.board`` (the board the ai
expects after its current placement), ``ai.state`` and ``wd.state``.  The PNG shows, left to
right: the camera frame (doubled in size), the observed board with the falling piece (orange),
and the predicted board, where a cell that differs from the observed stack is outlined in red;
a caption line says what the rig believes (synced, pieces, halted and why).

Exit codes: 0 written, 1 the daemon answered without a frame (the camera has none yet, or did
not answer in time), 2 bad usage or config, 3 no daemon running.

Tested by tests/integration/test_snapshot_calibrate_live.py against gamerigd, its real services
and the simulator; what the PNG looks like is not checked beyond its size and the two boards.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from .rig_config import default_config_path
from .daemon_client import DAEMON_NOT_RUNNING, ask_daemon

FAILED = 1
#: gamerigd waits up to 5 s for the camera (supervisor.Timeouts.snapshot_s); this much longer here.
SNAPSHOT_TIMEOUT_S = 8.0
CELL_PX = 14
MARGIN_PX = 12
CAPTION_PX = 40
FULL = (150, 150, 150)
FALLING = (0, 140, 255)
EMPTY = (40, 40, 40)
DIFFERS = (0, 0, 255)
TEXT = (230, 230, 230)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `snapshot` to gamerigctl's commands."""
    parser = subparsers.add_parser(
        "snapshot", help="write a PNG of what the camera sees and what the rig believes",
        description="Ask the running gamerigd for the camera's newest frame and observation and the ai's"
        " predicted board, and write them side by side as a PNG. Exit 0 written, 1 no frame, 3 no daemon.",
    )
    parser.add_argument("--out", default="snapshot.png", help="PNG to write (default: %(default)s)")
    parser.add_argument("--config", default=default_config_path(), help="the rig config naming the bus (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the boards and the PNG's path)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Ask for a snapshot and write the annotated PNG; returns the exit code."""
    reply = ask_daemon(args.config, "snapshot", SNAPSHOT_TIMEOUT_S)
    if reply is None:
        return DAEMON_NOT_RUNNING
    if not reply.get("ok") or not reply.get("jpeg_b64"):
        print(f"gamerigctl snapshot: no frame: {reply.get('error') or 'the camera has no frame yet'}", file=sys.stderr)
        return FAILED
    frame = cv2.imdecode(np.frombuffer(base64.b64decode(reply["jpeg_b64"]), np.uint8), cv2.IMREAD_COLOR)
    if frame is None:
        print("gamerigctl snapshot: the camera's JPEG cannot be decoded", file=sys.stderr)
        return FAILED
    predicted = (reply.get("predict") or {}).get("board")
    picture = annotated(frame, reply.get("board"), reply.get("falling"), predicted, caption(reply))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not cv2.imwrite(str(out), picture):
        print(f"gamerigctl snapshot: error: cannot write {out}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({
            "png": str(out), "width": picture.shape[1], "height": picture.shape[0], "observed": reply.get("board"),
            "falling": reply.get("falling"), "predicted": predicted, "ai": reply.get("ai"), "watchdog": reply.get("watchdog"),
        }))
    else:
        print(f"wrote {out} ({caption(reply)})")
    return 0


def caption(reply: dict[str, Any]) -> str:
    """One line: what the rig believes."""
    ai, watchdog = reply.get("ai") or {}, reply.get("watchdog") or {}
    parts = [
        "observed board" if reply.get("board") is not None else "no board observed",
        f"ai {'synced' if ai.get('synced') else 'not synced'}, {ai.get('pieces', '?')} pieces",
        f"halted: {watchdog.get('reason')}" if watchdog.get("halted") else "playing" if watchdog else "watchdog not heard",
    ]
    return "; ".join(parts)


def annotated(
    frame: np.ndarray, observed: list[str] | None, falling: dict[str, Any] | None, predicted: list[str] | None, text: str
) -> np.ndarray:
    """The frame (doubled), the observed board with its falling piece, the predicted board, a caption."""
    frame = cv2.resize(frame, (frame.shape[1] * 2, frame.shape[0] * 2), interpolation=cv2.INTER_LINEAR)
    rows = len(observed or predicted or [""] * 20)
    cols = len((observed or predicted or ["." * 10])[0])
    board_w, board_h = cols * CELL_PX, rows * CELL_PX
    width = frame.shape[1] + 2 * (board_w + 2 * MARGIN_PX)
    height = max(frame.shape[0], board_h + 2 * MARGIN_PX + 16) + CAPTION_PX
    picture = np.zeros((height, width, 3), np.uint8)
    picture[: frame.shape[0], : frame.shape[1]] = frame
    falling_cells = {tuple(cell) for cell in (falling or {}).get("cells", [])}
    left = frame.shape[1] + MARGIN_PX
    _board(picture, (left, MARGIN_PX + 16), "observed", observed, falling_cells, None, rows, cols)
    left += board_w + 2 * MARGIN_PX
    _board(picture, (left, MARGIN_PX + 16), "predicted", predicted, set(), observed, rows, cols)
    cv2.putText(picture, text, (MARGIN_PX, height - CAPTION_PX // 2), cv2.FONT_HERSHEY_SIMPLEX, 0.5, TEXT, 1, cv2.LINE_AA)
    return picture


def _board(
    picture: np.ndarray, origin: tuple[int, int], title: str, board: list[str] | None,
    falling: set[tuple[int, int]], compare: list[str] | None, rows: int, cols: int,
) -> None:
    x0, y0 = origin
    cv2.putText(picture, title if board is not None else f"{title}: none", (x0, y0 - 4),
                cv2.FONT_HERSHEY_SIMPLEX, 0.45, TEXT, 1, cv2.LINE_AA)
    for row in range(rows):
        for col in range(cols):
            full = board is not None and board[row][col] == "#"
            colour = FALLING if (row, col) in falling else FULL if full else EMPTY
            top_left = (x0 + col * CELL_PX, y0 + row * CELL_PX)
            bottom_right = (top_left[0] + CELL_PX - 2, top_left[1] + CELL_PX - 2)
            cv2.rectangle(picture, top_left, bottom_right, colour, -1)
            if board is not None and compare is not None and (compare[row][col] == "#") != full:
                cv2.rectangle(picture, top_left, bottom_right, DIFFERS, 2)
