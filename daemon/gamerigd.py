"""`gamerigd`: the rig's supervisor.

This build validates the rig configuration; the supervisor and its services
(camera, ai, relay, watchdog) are not part of it yet.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path


from .config_errors import ConfigError
from .rig_config import RigConfig, default_config_path, describe, load_rig_config

#: Exit code for a bad configuration or an unavailable mode, as for usage errors.
USAGE_ERROR = 2
__all__ = ["RigConfig", "default_config_path", "describe", "load_rig_config", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gamerigd`` console script; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="gamerigd",
        description="The gamerig supervisor. This build only validates the rig configuration.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('gamerig')}")
    parser.add_argument(
        "--check-config", nargs="?", const=default_config_path(), type=Path, metavar="PATH",
        help=f"validate a rig config and exit (default: {default_config_path()})",
    )
    args = parser.parse_args(argv)
    if args.check_config is None:
        print(
            "gamerigd: the supervisor and its services (camera, ai, relay, watchdog) are not part of this "
            "build yet; use `gamerigd --check-config` to validate a config, `gamerigctl demo` to watch the AI play",
            file=sys.stderr,
        )
        return USAGE_ERROR
    try:
        config = load_rig_config(args.check_config)
    except ConfigError as exc:
        print(f"gamerigd: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    print(f"{args.check_config}: ok: {describe(config)}")
    return 0
