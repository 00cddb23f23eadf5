"""One request from gamerigctl to the running gamerigd, for the commands that talk to it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import zmq

from .bus import ControlClient, DaemonNotRunning
from .rig_config import load_rig_config

#: Exit code of a command that needs the daemon when no daemon answers.
DAEMON_NOT_RUNNING = 3


def ask_daemon(config_path: Path, cmd: str, timeout_s: float, **args: Any) -> dict[str, Any] | None:
    """gamerigd's reply to ``cmd`` on the control socket the rig config names, or None after
    saying on stderr that no daemon answers."""
    bus = load_rig_config(config_path).bus
    context = zmq.Context()
    client = ControlClient(context, bus.endpoints(), timeout_s, bus.security())
    try:
        return client.request(cmd, **args)
    except DaemonNotRunning as exc:
        print(f"gamerigctl: {exc}", file=sys.stderr)
        return None
    finally:
        client.close()
        context.term()
