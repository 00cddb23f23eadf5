"""`gamerigctl sim`: run the virtual target machine standalone until Ctrl-C or SIGTERM.

Prints where everything is: the camera's MJPEG stream URL (open it like an IP camera), the serial
path of the virtual relay board (a stable symlink to its pty, opened like /dev/ttyUSB0), the
control URL (POST /fault, GET /truth /edges /received: hardware/sim/control.py) and the key-output
config that drives the board (the default matches configs/sim.yaml).  With --json, one JSON line.

Bad options (an unknown skin, a malformed fault, a level out of range, a link path that is not
ours to take) exit 2 with the reason before anything starts.  SIGTERM and SIGINT stop the machine
cleanly (the board's symlink removed, ports closed) and exit 0.

Tested by tests/integration/test_sim_cli.py with real subprocesses and signals.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from typing import Any

import yaml

from gamerig.games.tetris.skins import skin as skin_by_name
from gamerig.hardware.sim.faults import parse_fault
from gamerig.hardware.sim.game_session import GameOptions
from gamerig.hardware.sim.machine import FAULTS, Machine, MachineOptions, prefer_the_board
from gamerig.hardware.sim.target import TargetOptions

PROG = "gamerigctl sim"
USAGE_ERROR = 2
#: Where the board's pty is linked by default; configs/sim.yaml names the same path.
DEFAULT_LINK = "/tmp/gamerig-sim-relay"
BOARDS = ("adr2200", "numato", "kmtronic", "lcus")
#: How often the main thread looks at the machine while it waits for a signal.
WATCH_S = 0.5


def run(args: argparse.Namespace) -> int:
    """Run the simulator from parsed arguments until a signal; returns the exit code."""
    stop = threading.Event()  # set by SIGTERM/SIGINT, even one arriving while the machine is built
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            machine = Machine(machine_options(args))
        except (ValueError, OSError) as error:  # OSError: a --truth or --link path that cannot be made
            print(f"{PROG}: error: {error}", file=sys.stderr)
            return USAGE_ERROR
        prefer_the_board()
        with machine:
            info = describe(machine)
            print(json.dumps(info) if args.json else format_info(info), flush=True)
            while not stop.wait(WATCH_S):
                if machine.target.failure is not None:
                    print(f"{PROG}: the simulator failed: {machine.target.failure}", file=sys.stderr)
                    return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def machine_options(args: argparse.Namespace) -> MachineOptions:
    """The machine the command line asks for; ValueError names the bad option and why."""
    skin_by_name(args.skin)  # the skin's own error lists the known ones
    faults = tuple(parse_fault(spec, FAULTS) for spec in args.fault)
    link = os.path.abspath(args.link)
    _check_link(link)
    game = GameOptions(level=args.level, preview=args.preview, seed=args.seed)
    target = TargetOptions(game=game, skin=args.skin, camera_seed=args.seed, truth_path=args.truth)
    return MachineOptions(target=target, board=args.board, link_path=link, faults=faults)


def _check_link(link: str) -> None:
    """Refuse a link path that is not a symlink, or whose pty is alive (another simulator's)."""
    if not os.path.lexists(link):
        return
    if not os.path.islink(link):
        raise ValueError(f"--link {link} exists and is not a symlink; refusing to replace it")
    if os.path.exists(link):
        raise ValueError(
            f"--link {link} points at {os.readlink(link)}, which exists: another simulator is running "
            "(stop it, or pass another --link)"
        )


def describe(machine: Machine) -> dict[str, Any]:
    """What a user of the running machine needs: URLs, the serial path, the key-output config."""
    return {
        "stream_url": machine.target.url,
        "serial_path": machine.board.path,
        "pty": os.path.realpath(machine.board.path),
        "board": machine.options.board,
        "control_url": machine.control.url,
        "key_config": machine.key_config(),
        "pid": os.getpid(),
    }


def format_info(info: dict[str, Any]) -> str:
    """The human-readable start-up message."""
    snippet = yaml.safe_dump(info["key_config"], sort_keys=False).rstrip().replace("\n", "\n    ")
    return "\n".join(
        [
            f"stream:  {info['stream_url']}   (open it like an IP camera)",
            f"serial:  {info['serial_path']}   ({info['board']} board on {info['pty']})",
            f"control: {info['control_url']}   (POST /fault, GET /truth /edges /received)",
            "key output config:",
            f"    {snippet}",
            "Ctrl-C or SIGTERM stops the simulator.",
        ]
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `sim` to gamerigctl's commands."""
    parser = subparsers.add_parser(
        "sim",
        help="run the virtual target machine (game, camera stream, relay board)",
        description=(
            "Run the virtual target machine until Ctrl-C or SIGTERM: Standard Tetris filmed and"
            " streamed as MJPEG over HTTP, and a virtual relay board on a pseudo-terminal wired to"
            " its keys (output 0 left, 1 right, 2 rotate, 3 drop, 4 new_game, 5 pause)."
        ),
    )
    parser.add_argument("--level", type=int, default=1, help="starting level 1..10 (default 1)")
    parser.add_argument("--preview", action="store_true", help="show the next piece")
    parser.add_argument("--skin", default="elektronika1986", help="screen skin (default elektronika1986)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the piece sequence and the camera (default 0)")
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME[=VALUE][@SECONDS|@PIECESp]",
        help="inject a fault, SECONDS after start or when the PIECESth piece since start appears (repeatable): "
        + "; ".join(kind.help for kind in FAULTS.values()),
    )
    parser.add_argument("--board", choices=BOARDS, default="adr2200", help="the relay board's protocol (default adr2200)")
    parser.add_argument("--link", default=DEFAULT_LINK, help=f"symlink to the board's pty (default {DEFAULT_LINK})")
    parser.add_argument("--truth", metavar="FILE", help="write the ground truth to FILE as JSON lines")
    parser.add_argument("--json", action="store_true", help="print the start-up information as one JSON line")
    parser.set_defaults(func=run)
