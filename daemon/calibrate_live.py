"""`gamerigctl calibrate` without ``--source``: calibrate through the running daemon's camera service.

The camera service owns the camera (a V4L2 device opens once), so the live calibration runs there
(``ctl.calibrate``, services/camera_calibrate.py): gamerigd forwards the request, the camera
collects its frames spread over a few seconds, fits the well (found, or refined from
``--corners`` / ``--rect``), learns the empty look, writes the calibration YAML, its reference
frame and the annotated PNG, and starts using the new calibration at once.  This command sends
the request and prints the camera's answer.  ``--out`` and ``--png`` are made absolute here, as
the camera service runs in another working directory; without ``--out`` the camera writes the
config's ``camera.calibration``.

Exit codes: 0 calibrated, 1 the calibration failed (the camera's reason is printed), 2 bad
usage or config, 3 no daemon running.

Tested by tests/integration/test_snapshot_calibrate_live.py against gamerigd with its real
services on the simulator (a good calibration written and used, a refused one reported, no daemon).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .daemon_client import DAEMON_NOT_RUNNING, ask_daemon

FAILED = 1
#: gamerigd waits up to 30 s for the camera's answer (supervisor.Timeouts.calibrate_s); this much longer here.
CALIBRATE_TIMEOUT_S = 35.0


def run(args: argparse.Namespace) -> int:
    """Ask the daemon's camera to calibrate on its live frames; returns the exit code."""
    request: dict[str, Any] = {
        "out": str(Path(args.out).resolve()) if args.out else None,
        "png": str(Path(args.png).resolve()) if args.png else None,
    }
    rough = args.corners if args.corners is not None else args.rect
    if rough is not None:
        request["corners"] = rough.tolist()
    if args.frames is not None:
        request["frames"] = args.frames
    if args.every is not None:
        request["every_s"] = args.every
    reply = ask_daemon(args.config, "calibrate", CALIBRATE_TIMEOUT_S, **request)
    if reply is None:
        return DAEMON_NOT_RUNNING
    ok = bool(reply.get("ok"))
    if args.json:
        print(json.dumps({key: reply.get(key) for key in ("ok", "message", "corners", "error")}))
    elif ok:
        print(reply.get("message"))
    else:
        print(f"gamerigctl calibrate: {reply.get('message') or reply.get('error')}", file=sys.stderr)
    return 0 if ok else FAILED
