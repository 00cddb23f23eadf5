"""`gamerigctl status [--json]` and `gamerigctl play | pause | stop`: ask the running gamerigd.

The daemon is found through the rig config's bus section (--config, default configs/gamerig.yaml),
so both sides agree on the control endpoint. When no gamerigd answers, one line says so and the
exit code is DAEMON_NOT_RUNNING (3), so scripts can tell "not running" from a bad config (2).

Tested by tests/integration/test_supervisor.py: status (table and --json) and pause against a
supervisor with stand-in services, and exit code 3 with no daemon.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .daemon_client import DAEMON_NOT_RUNNING, ask_daemon
from .rig_config import default_config_path

#: Exit code when gamerigd is not running (2 is a usage or config error).
MODE_COMMANDS = {
    "play": "start or resume play",
    "pause": "pause play (the relays go safe; state is kept)",
    "stop": "stop play: the rig's safe state (all relays released, nothing planned)",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `status`, `play`, `pause` and `stop` to gamerigctl's commands."""
    status = subparsers.add_parser(
        "status", help="show the running rig: services, game, watchdog, relays",
        description="Ask the running gamerigd for its status.",
    )
    _common(status)
    status.set_defaults(func=run_status)
    for command, summary in MODE_COMMANDS.items():
        parser = subparsers.add_parser(command, help=summary, description=f"Ask the running gamerigd to {summary}.")
        _common(parser)
        parser.set_defaults(func=run_mode, mode=command)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default=default_config_path(), help="the rig config naming the bus (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the daemon's reply as JSON")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds to wait for the daemon (default 2)")


def run_status(args: argparse.Namespace) -> int:
    """Print the daemon's status; 0 when every service is alive, 1 when not, 3 when no daemon."""
    reply = ask_daemon(args.config, "status", args.timeout)
    if reply is None:
        return DAEMON_NOT_RUNNING
    print(json.dumps(reply, indent=2) if args.json else format_status(reply))
    return 0 if reply.get("daemon", {}).get("healthy") else 1


def run_mode(args: argparse.Namespace) -> int:
    """Send play, pause or stop; 0 when the daemon accepted it."""
    reply = ask_daemon(args.config, args.mode, args.timeout)
    if reply is None:
        return DAEMON_NOT_RUNNING
    if args.json:
        print(json.dumps(reply))
    elif reply.get("ok"):
        print(f"gamerigd: mode {reply['mode']}")
    else:
        print(f"gamerigctl: error: {reply.get('error')}", file=sys.stderr)
    return 0 if reply.get("ok") else 1


def format_status(status: dict[str, Any]) -> str:
    """The status reply as a terminal table."""
    daemon = status["daemon"]
    lines = [
        f"gamerigd pid {daemon['pid']}, up {_duration(daemon['uptime_s'])}, mode {daemon['mode']}, "
        + ("all services alive" if daemon["healthy"] else "NOT all services alive"),
        f"{'service':<9} {'state':<13} {'pid':>7} {'uptime':>8} {'restarts':>8}  message",
    ]
    for name, service in status["services"].items():
        lines.append(
            f"{name:<9} {service['state']:<13} {service['pid'] or '-':>7} {_duration(service['uptime_s']):>8} "
            f"{service['restarts']:>8}  {service['message']}"
        )
        if service["stats"]:
            lines.append(f"{'':<9} {_pairs(service['stats'])}")
    for view in ("game", "watchdog", "relay", "camera", "bus"):
        body = status.get(view)
        lines.append(f"{view}: {_pairs(body) if body else 'nothing heard yet'}")
    return "\n".join(lines)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s"


def _pairs(values: dict[str, Any]) -> str:
    """key=value pairs on one line; nested mappings flattened with dots, boards left out."""
    parts = []
    for key, value in values.items():
        if isinstance(value, dict):
            parts.extend(f"{key}.{pair}" for pair in _pairs(value).split(", ") if pair)
        elif isinstance(value, list):
            continue  # boards and key lists: `gamerigctl watch` shows them
        else:
            parts.append(f"{key}={round(value, 3) if isinstance(value, float) else value}")
    return ", ".join(parts)
