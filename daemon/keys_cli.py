"""`gamerigctl keys`: make the CURVE key pairs a tcp:// bus needs (bus_security.generate_keys).

Writes DIR/server.key(_secret), DIR/client.key(_secret) and DIR/authorized_clients/client.key;
refuses to overwrite existing keys.  The daemon's config then points bus.curve.server_key at
DIR/server.key_secret and bus.curve.client_keys_dir at DIR/authorized_clients; a remote host gets
server.key (public only) and client.key_secret.  Exit codes: 0 written, 1 keys exist or cannot be
written.  Tested in tests/integration/test_bus_security.py (the CLI's keys secure a real bus).
"""

from __future__ import annotations

import argparse
import json
import sys

from .bus_security import generate_keys
from .player_config import config_dir


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `keys` to gamerigctl."""
    parser = subparsers.add_parser(
        "keys", help="generate the CURVE keys of a tcp:// bus", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--dir", default=None, help="where to write the keys (default: the config folder's curve/)")
    parser.add_argument("--json", action="store_true", help="print the written files as a JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Generate the keys and say where they are."""
    directory = args.dir if args.dir is not None else config_dir() / "curve"
    try:
        files = generate_keys(directory)
    except (FileExistsError, OSError) as exc:
        print(f"gamerigctl keys: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({role: str(path) for role, path in files.items()}, indent=2))
        return 0
    print(f"server key (daemon host only):   {files['server_secret']}")
    print(f"server public key (every host):  {files['server']}")
    print(f"client key (service hosts):      {files['client_secret']}")
    print(f"allowed client keys:             {files['authorized_clients']}")
    print("config: bus.curve: {server_key: <server key>, client_keys_dir: <allowed client keys>}")
    return 0
