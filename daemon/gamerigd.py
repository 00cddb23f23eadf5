"""`gamerigd`: the rig's supervisor.

This build validates the rig configuration; the supervisor and its services
(camera, ai, relay, watchdog) are not part of it yet.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any


from gamerig.games.tetris.rules import MAX_HEIGHT, MAX_WIDTH, MIN_HEIGHT, MIN_WIDTH, Rules

from .config_errors import ConfigError, load_yaml
from .player_config import config_dir, load_player

#: Exit code for a bad configuration or an unavailable mode, as for usage errors.
USAGE_ERROR = 2
GAMES = ("tetris",)
RULE_SETS = ("standard", "simplified")
LEVELS = (1, 10)  # Standard Tetris's first and last level
TOP_KEYS = ("game", "rules", "initial_level", "preview", "player")
RULES_KEYS = ("name", "width", "height", "clear_top_row")


@dataclass(frozen=True)
class RigConfig:
    """What the rig plays and with which player."""

    game: str
    rules: Rules
    initial_level: int
    preview: bool
    player: str


def default_config_path() -> Path:
    """configs/gamerig.yaml in the config folder ($GAMERIG_CONFIG_DIR or the project's configs/)."""
    return config_dir() / "gamerig.yaml"


def load_rig_config(path: Path) -> RigConfig:
    """Read and validate the rig config; every problem is a ConfigError naming the file and the key."""
    data = load_yaml(path)
    top = _section(data, path, "", TOP_KEYS)
    rules = _section(top["rules"], path, "rules.", RULES_KEYS)
    game = _choice(top["game"], path, "game", GAMES)
    rule_set = _choice(rules["name"], path, "rules.name", RULE_SETS)
    return RigConfig(
        game=game,
        rules=Rules(
            rule_set,
            _int(rules["width"], path, "rules.width", MIN_WIDTH, MAX_WIDTH),
            _int(rules["height"], path, "rules.height", MIN_HEIGHT, MAX_HEIGHT),
            _bool(rules["clear_top_row"], path, "rules.clear_top_row"),
        ),
        initial_level=_int(top["initial_level"], path, "initial_level", *LEVELS),
        preview=_bool(top["preview"], path, "preview"),
        player=_player(top["player"], path),
    )


def _section(data: Any, path: Path, prefix: str, keys: Sequence[str]) -> dict[str, Any]:
    """A mapping with exactly ``keys``: unknown and missing keys are both errors."""
    if not isinstance(data, dict):
        where = prefix.rstrip(".") or None
        raise ConfigError(path, where, f"expected a mapping with keys {', '.join(keys)}")
    for key in data:
        if key not in keys:
            raise ConfigError(path, f"{prefix}{key}", f"unknown key (allowed: {', '.join(keys)})")
    for key in keys:
        if key not in data:
            raise ConfigError(path, f"{prefix}{key}", "missing")
    return data


def _player(value: Any, path: Path) -> str:
    """A player name that loads, so a typo shows up now rather than when play starts."""
    if not isinstance(value, str) or not value:
        raise ConfigError(path, "player", f"must be a player name, got {value!r}")
    try:
        load_player(value)
    except ConfigError as exc:
        raise ConfigError(path, "player", str(exc)) from exc
    return value


def _choice(value: Any, path: Path, key: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ConfigError(path, key, f"must be one of {', '.join(choices)}, got {value!r}")
    return value


def _int(value: Any, path: Path, key: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(path, key, f"must be a whole number from {low} to {high}, got {value!r}")
    return value


def _bool(value: Any, path: Path, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(path, key, f"must be true or false, got {value!r}")
    return value


def describe(config: RigConfig) -> str:
    """One line saying what the config asks for."""
    rules = config.rules
    top_row = "clears" if rules.clear_top_row else "never clears"
    return (
        f"{config.game}, {rules.name} rules {rules.width} x {rules.height} (top row {top_row}), "
        f"initial level {config.initial_level}, preview {'on' if config.preview else 'off'}, "
        f"player {config.player}"
    )


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
