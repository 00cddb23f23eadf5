"""Player specs from YAML files under configs/players/."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from gamerig.games.tetris.players import FEATURE_NAMES, AtSpeed, PlayerSpec

from .config_errors import ConfigError, load_yaml

#: The project's config folder in a source checkout or editable install.
SOURCE_CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
ALLOWED_KEYS = {"name", "description", "tie_break", "lookahead", "weights", "expect_top", "expect_rows", "at_speed"}
AT_SPEED_KEYS = {"from_level", "weight_scales"}


def config_dir() -> Path:
    """Where configs live: $GAMERIG_CONFIG_DIR, else the project's configs/ folder."""
    return Path(os.environ.get("GAMERIG_CONFIG_DIR", SOURCE_CONFIG_DIR))


def players_dir() -> Path:
    """Folder of player YAML files."""
    return config_dir() / "players"


def available_players() -> list[str]:
    """Names of the players that have a YAML file."""
    return sorted(p.stem for p in players_dir().glob("*.yaml"))


def load_player(name_or_path: str) -> PlayerSpec:
    """Load a player by name (configs/players/NAME.yaml) or by path to a YAML file."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = players_dir() / f"{name_or_path}.yaml"
        if not path.exists():
            known = ", ".join(available_players()) or "none"
            raise ConfigError(path, None, f"no player named {name_or_path!r} (known: {known})")
    return parse_player(path)


def parse_player(path: Path) -> PlayerSpec:
    """Read and validate one player file; every problem names the file and the key."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(path, None, "expected a mapping with name, weights, tie_break, lookahead")
    unknown = sorted(set(data) - ALLOWED_KEYS)
    if unknown:
        raise ConfigError(path, unknown[0], f"unknown key (allowed: {', '.join(sorted(ALLOWED_KEYS))})")
    weights = data.get("weights")
    if not isinstance(weights, dict) or not weights:
        raise ConfigError(path, "weights", "must be a non-empty mapping of feature name to number")
    for feature, value in weights.items():
        if feature not in FEATURE_NAMES:
            raise ConfigError(path, f"weights.{feature}", f"unknown feature (known: {', '.join(FEATURE_NAMES)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(path, f"weights.{feature}", f"must be a number, got {value!r}")
    tie_break = data.get("tie_break", "first")
    if tie_break not in ("priority", "first"):
        raise ConfigError(path, "tie_break", f"must be 'priority' or 'first', got {tie_break!r}")
    lookahead = data.get("lookahead", 1)
    if lookahead not in (1, 2) or isinstance(lookahead, bool):
        raise ConfigError(path, "lookahead", f"must be 1 or 2, got {lookahead!r}")
    search = {}
    for key in ("expect_top", "expect_rows"):
        value = data.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(path, key, f"must be a whole number >= 0, got {value!r}")
        search[key] = value
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise ConfigError(path, "name", "must be a non-empty string")
    return PlayerSpec(
        name=name,
        weights={k: float(v) for k, v in weights.items()},
        tie_break=tie_break,
        lookahead=lookahead,
        description=str(data.get("description", "")),
        at_speed=_at_speed(data.get("at_speed"), path),
        **search,
    )


def _at_speed(data: Any, path: Path) -> AtSpeed | None:
    """The optional ``at_speed`` section: ``from_level`` (1-10) and ``weight_scales`` (feature: factor)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ConfigError(path, "at_speed", "must be a mapping with from_level and weight_scales")
    unknown = sorted(set(data) - AT_SPEED_KEYS)
    if unknown:
        raise ConfigError(path, f"at_speed.{unknown[0]}", f"unknown key (allowed: {', '.join(sorted(AT_SPEED_KEYS))})")
    level = data.get("from_level")
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 10:
        raise ConfigError(path, "at_speed.from_level", f"must be a level 1-10, got {level!r}")
    scales = data.get("weight_scales")
    if not isinstance(scales, dict) or not scales:
        raise ConfigError(path, "at_speed.weight_scales", "must be a non-empty mapping of feature name to factor")
    for feature, value in scales.items():
        key = f"at_speed.weight_scales.{feature}"
        if feature not in FEATURE_NAMES:
            raise ConfigError(path, key, f"unknown feature (known: {', '.join(FEATURE_NAMES)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(path, key, f"must be a number >= 0, got {value!r}")
    return AtSpeed(level, {k: float(v) for k, v in scales.items()})


def dump_player(spec: PlayerSpec, path: Path, header: str = "") -> None:
    """Write a player spec as YAML, with an optional comment header (e.g. how it was tuned)."""
    body = {
        "name": spec.name,
        "description": spec.description,
        "tie_break": spec.tie_break,
        "lookahead": spec.lookahead,
        "expect_top": spec.expect_top,
        "expect_rows": spec.expect_rows,
        "weights": {k: round(float(v), 6) for k, v in spec.weights.items()},
    }
    if spec.at_speed is not None:
        body["at_speed"] = {"from_level": spec.at_speed.from_level, "weight_scales": dict(spec.at_speed.weight_scales)}
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    path.write_text(comment + yaml.safe_dump(body, sort_keys=False))
