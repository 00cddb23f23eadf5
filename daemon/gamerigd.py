"""`gamerigd`: the rig's supervisor (what systemd runs).

``gamerigd [--config PATH] [--paused]`` loads and validates the rig config, creates the private
runtime directory of the ipc:// bus, and runs daemon/supervisor.py: the bus proxy, the camera, ai,
relay and watchdog services, gamerigctl's control socket and systemd's notify protocol, until
SIGTERM, SIGINT or SIGHUP (exit 0, relays released first). ``gamerigd --check-config [PATH]`` only
validates a config. A bad config, an insecure tcp:// bus or a bus another gamerigd holds exits 2
with one line naming the problem, before anything starts.

Tested: --check-config by tests/integration/test_cli.py; the supervisor by
tests/integration/test_supervisor.py (stand-in services); the whole daemon with the real
services against the simulator by the rig's end-to-end tests.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

from .bus import EndpointInUse, ensure_runtime_dir
from .bus_security import InsecureBus
from .config_errors import ConfigError
from .rig_config import RigConfig, default_config_path, describe, load_rig_config
from .sd_notify import Notifier
from .supervisor import SERVICE_NAMES, Supervisor, Timeouts, run_until_signalled, service_command

#: Exit code for a bad configuration or an unavailable mode, as for usage errors.
USAGE_ERROR = 2
__all__ = ["RigConfig", "default_config_path", "describe", "load_rig_config", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gamerigd`` console script; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="gamerigd",
        description="The gamerig supervisor: runs the camera, ai, relay and watchdog services on a ZeroMQ bus.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('gamerig')}")
    parser.add_argument(
        "--config", type=Path, default=default_config_path(), metavar="PATH",
        help=f"the rig config (default: {default_config_path()})",
    )
    parser.add_argument(
        "--check-config", nargs="?", const=default_config_path(), type=Path, metavar="PATH",
        help=f"validate a rig config and exit (default: {default_config_path()})",
    )
    parser.add_argument("--paused", action="store_true", help="start paused (`gamerigctl play` starts play)")
    args = parser.parse_args(argv)
    try:
        if args.check_config is not None:
            config = load_rig_config(args.check_config)
            config.bus.security()  # the CURVE key files, if configured, must load too
            print(f"{args.check_config}: ok: {describe(config)}")
            return 0
        config = load_rig_config(args.config)
        supervisor = build_supervisor(config, "pause" if args.paused else "play")
        print(f"gamerigd: {config.path}: {describe(config)}", file=sys.stderr, flush=True)
        return run_until_signalled(supervisor)
    except (ConfigError, InsecureBus, EndpointInUse, RuntimeError) as exc:  # RuntimeError: the runtime dir
        print(f"gamerigd: error: {exc}", file=sys.stderr)
        return USAGE_ERROR


def build_supervisor(config: RigConfig, mode: str) -> Supervisor:
    """The supervisor for ``config``: its endpoints (runtime directory created, mode 0700), CURVE keys
    if configured, the four services' command lines and the heartbeat timeout."""
    endpoints = config.bus.endpoints()
    if any(endpoint.startswith("ipc://") for endpoint in (endpoints.publish, endpoints.subscribe, endpoints.control)):
        ensure_runtime_dir(config.bus.resolved_runtime_dir())
    return Supervisor(
        {name: service_command(name, endpoints, config.path.absolute()) for name in SERVICE_NAMES},
        endpoints,
        security=config.bus.security(),
        timeouts=Timeouts(heartbeat_s=config.watchdog.heartbeat_timeout_s),
        notifier=Notifier(),
        mode=mode,
    )
