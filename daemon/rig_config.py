"""The rig's configuration (configs/gamerig.yaml): what the rig plays, and the camera, key output,
bus, watchdog and play policy that gamerigd and its services run with.

Every value is read and checked here, at start-up: unknown keys and bad values are ConfigErrors
naming the file, the dotted key and the reason, so a typo cannot fall back to a default. The game
keys (game, rules, initial_level, preview, player) and the camera and keys sections are required;
bus, watchdog and play, and the keys inside every section that have a default, may be left out.
The `keys` section is checked by hardware/keys/config.py and the camera source by
hardware/frames/urls.py, the same code that later opens them (nothing is opened here).

Tested by tests/unit/test_rig_config.py (the shipped configs load; every kind of bad value is an
error naming its key) and tests/integration/test_cli.py (`gamerigd --check-config`).
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gamerig.games.tetris.rules import MAX_HEIGHT, MAX_WIDTH, MIN_HEIGHT, MIN_WIDTH, Rules
from gamerig.hardware.frames.urls import NETWORK_SCHEMES, SourceUrlError, device_from_url
from gamerig.hardware.keys.config import KeyOutputConfig, load_key_output_config

from .bus import Endpoints, default_runtime_dir
from .bus_security import BusSecurity
from .calibration_store import default_path as default_calibration_path
from .config_errors import ConfigError, load_yaml
from .player_config import config_dir, load_player

GAMES = ("tetris",)
RULE_SETS = ("standard", "simplified")
LEVELS = (1, 10)  # Standard Tetris's first and last level
REQUIRED_TOP_KEYS = ("game", "rules", "initial_level", "preview", "player", "camera", "keys")
OPTIONAL_TOP_KEYS = ("bus", "watchdog", "play")
RULES_KEYS = ("name", "width", "height", "clear_top_row")
ENDPOINT_SCHEMES = ("ipc", "tcp")
#: Longest agreement filter worth configuring: at 30 fps, 10 frames is a third of a second of lag.
MAX_FILTER_K = 10
#: The key that starts the next game (play.new_game_after_s presses it after a game over).
NEW_GAME_KEY = "new_game"
#: play.new_game_after_s: long enough for the target to take a key after its game-over screen
#: appears, at most an hour.
MIN_NEW_GAME_AFTER_S, MAX_NEW_GAME_AFTER_S = 0.5, 3600.0


@dataclass(frozen=True)
class CameraConfig:
    """The frame source (a hardware/frames/urls.py string), the calibration file and the
    recognizer's agreement filter (frames that must agree before a board change is committed)."""

    source: str
    calibration: Path
    k: int = 2


@dataclass(frozen=True)
class CurveConfig:
    """CURVE keys for tcp:// endpoints: the server's secret key file and the allowed clients' public keys."""

    server_key: Path
    client_keys_dir: Path


@dataclass(frozen=True)
class BusConfig:
    """Where the bus lives. None: the default ipc:// endpoint in the runtime directory, which is
    $RUNTIME_DIRECTORY, else $XDG_RUNTIME_DIR/gamerig, else /tmp/gamerig-<uid> (bus.default_runtime_dir)."""

    runtime_dir: Path | None = None
    publish: str | None = None
    subscribe: str | None = None
    control: str | None = None
    curve: CurveConfig | None = None
    insecure: bool = False

    def resolved_runtime_dir(self) -> Path:
        """The configured runtime directory, else the environment's (not created here)."""
        return self.runtime_dir if self.runtime_dir is not None else default_runtime_dir()

    def endpoints(self) -> Endpoints:
        """The configured endpoints, the others ipc:// in the runtime directory."""
        default = Endpoints.default(self.resolved_runtime_dir())
        return Endpoints(
            self.publish or default.publish,
            self.subscribe or default.subscribe,
            self.control or default.control,
            self.insecure,
        )

    def security(self) -> BusSecurity | None:
        """The CURVE keys when configured (reading them may raise ConfigError naming the key file)."""
        return BusSecurity.load(self.curve.server_key, self.curve.client_keys_dir) if self.curve else None


@dataclass(frozen=True)
class WatchdogConfig:
    """The watchdog service's thresholds."""

    heartbeat_timeout_s: float = 1.0
    stale_frame_periods: int = 3
    mismatch_halt_count: int = 3
    resume_healthy_s: float = 0.5


@dataclass(frozen=True)
class PlayConfig:
    """Play policy: confirm the falling piece before drop; read the level off the screen; plan the
    next piece ahead and press its first key as it spawns (services/ai_ahead.py; with the preview)."""

    closed_loop: bool = True
    level_from_screen: bool = True
    plan_ahead: bool = True
    #: After a game over, press new_game once the final board has shown this long (None, the
    #: default when no key is wired to new_game: stay at the game-over screen until someone
    #: starts a game; services/ai_new_game.py).
    new_game_after_s: float | None = 5.0


@dataclass(frozen=True)
class RigConfig:
    """The whole rig config. ``path`` is the file it was read from (services re-read it)."""

    game: str
    rules: Rules
    initial_level: int
    preview: bool
    player: str
    camera: CameraConfig
    keys: KeyOutputConfig
    bus: BusConfig
    watchdog: WatchdogConfig
    play: PlayConfig
    path: Path


def default_config_path() -> Path:
    """configs/gamerig.yaml in the config folder ($GAMERIG_CONFIG_DIR or the project's configs/)."""
    return config_dir() / "gamerig.yaml"


def load_rig_config(path: Path) -> RigConfig:
    """Read and validate the rig config; every problem is a ConfigError naming the file and the key."""
    path = Path(path)
    check = _Checker(path)
    top = check.section(load_yaml(path), "", REQUIRED_TOP_KEYS, OPTIONAL_TOP_KEYS)
    rules = check.section(top["rules"], "rules", RULES_KEYS)
    keys = load_key_output_config(top["keys"], path, section="keys")
    return RigConfig(
        game=check.choice(top["game"], "game", GAMES),
        rules=Rules(
            check.choice(rules["name"], "rules.name", RULE_SETS),
            check.integer(rules["width"], "rules.width", MIN_WIDTH, MAX_WIDTH),
            check.integer(rules["height"], "rules.height", MIN_HEIGHT, MAX_HEIGHT),
            check.boolean(rules["clear_top_row"], "rules.clear_top_row"),
        ),
        initial_level=check.integer(top["initial_level"], "initial_level", *LEVELS),
        preview=check.boolean(top["preview"], "preview"),
        player=_player(top["player"], path),
        camera=_camera(check, top["camera"]),
        keys=keys,
        bus=_bus(check, top.get("bus", {})),
        watchdog=_watchdog(check, top.get("watchdog", {})),
        play=_play(check, top.get("play", {}), NEW_GAME_KEY in keys.outputs),
        path=path,
    )


def describe(config: RigConfig) -> str:
    """One line saying what the config asks for."""
    rules = config.rules
    top_row = "clears" if rules.clear_top_row else "never clears"
    return (
        f"{config.game}, {rules.name} rules {rules.width} x {rules.height} (top row {top_row}), "
        f"initial level {config.initial_level}, preview {'on' if config.preview else 'off'}, "
        f"player {config.player}, camera {config.camera.source}, keys {config.keys.board}"
        + (f" on {config.keys.port}" if config.keys.port else "")
    )


def _camera(check: _Checker, data: Any) -> CameraConfig:
    section = check.section(data, "camera", ("source",), ("calibration", "k"))
    source = section["source"]
    if not isinstance(source, str):
        raise ConfigError(check.path, "camera.source", f"must be a frame source string, got {source!r}")
    try:
        device_from_url(source)
        _check_network_port(source)
    except SourceUrlError as exc:
        raise ConfigError(check.path, "camera.source", exc.problem) from exc
    calibration = section.get("calibration")
    return CameraConfig(
        source=source,
        calibration=check.path_value(calibration, "camera.calibration") if calibration is not None
        else default_calibration_path(),
        k=check.integer(section.get("k", CameraConfig.k), "camera.k", 1, MAX_FILTER_K),
    )


def _check_network_port(url: str) -> None:
    """urls.py hands network URLs to FFmpeg verbatim; a port that is not a number would only fail
    there, at every reconnect, so it is caught here."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme.lower() in NETWORK_SCHEMES:
        try:
            parts.port
        except ValueError:
            raise SourceUrlError(url, f"the port in {parts.netloc!r} is not a number from 1 to 65535") from None


def _bus(check: _Checker, data: Any) -> BusConfig:
    keys = ("runtime_dir", "publish", "subscribe", "control", "curve", "insecure")
    section = check.section(data, "bus", (), keys)
    runtime = section.get("runtime_dir")
    endpoints = {name: _endpoint(check, section.get(name), f"bus.{name}") for name in ("publish", "subscribe", "control")}
    curve = _curve(check, section["curve"]) if section.get("curve") is not None else None
    insecure = check.boolean(section.get("insecure", False), "bus.insecure")
    for name, endpoint in endpoints.items():
        if endpoint and endpoint.startswith("tcp://") and curve is None and not insecure:
            raise ConfigError(
                check.path, f"bus.{name}",
                "a tcp:// endpoint needs bus.curve keys (or bus.insecure: true on a trusted network)",
            )
    return BusConfig(
        runtime_dir=check.path_value(runtime, "bus.runtime_dir") if runtime is not None else None,
        curve=curve,
        insecure=insecure,
        **endpoints,
    )


def _endpoint(check: _Checker, value: Any, key: str) -> str | None:
    if value is None:
        return None
    scheme = value.split("://", 1)[0] if isinstance(value, str) and "://" in value else None
    if scheme not in ENDPOINT_SCHEMES or not value.split("://", 1)[1]:
        raise ConfigError(check.path, key, f"must be ipc://PATH or tcp://HOST:PORT (or null for the default), got {value!r}")
    return value


def _curve(check: _Checker, data: Any) -> CurveConfig:
    section = check.section(data, "bus.curve", ("server_key", "client_keys_dir"))
    return CurveConfig(
        server_key=check.path_value(section["server_key"], "bus.curve.server_key"),
        client_keys_dir=check.path_value(section["client_keys_dir"], "bus.curve.client_keys_dir"),
    )


def _watchdog(check: _Checker, data: Any) -> WatchdogConfig:
    defaults = WatchdogConfig()
    keys = ("heartbeat_timeout_s", "stale_frame_periods", "mismatch_halt_count", "resume_healthy_s")
    section = check.section(data, "watchdog", (), keys)
    return WatchdogConfig(
        heartbeat_timeout_s=check.seconds(
            section.get("heartbeat_timeout_s", defaults.heartbeat_timeout_s), "watchdog.heartbeat_timeout_s", 0.1, 60.0
        ),
        stale_frame_periods=check.integer(
            section.get("stale_frame_periods", defaults.stale_frame_periods), "watchdog.stale_frame_periods", 1, 100
        ),
        mismatch_halt_count=check.integer(
            section.get("mismatch_halt_count", defaults.mismatch_halt_count), "watchdog.mismatch_halt_count", 1, 100
        ),
        resume_healthy_s=check.seconds(
            section.get("resume_healthy_s", defaults.resume_healthy_s), "watchdog.resume_healthy_s", 0.0, 60.0
        ),
    )


def _play(check: _Checker, data: Any, new_game_wired: bool) -> PlayConfig:
    """The play section; new_game_after_s defaults to null when no key is wired to new_game."""
    defaults = PlayConfig()
    section = check.section(data, "play", (), ("closed_loop", "level_from_screen", "plan_ahead", "new_game_after_s"))
    new_game_after_s = section.get("new_game_after_s", defaults.new_game_after_s if new_game_wired else None)
    if new_game_after_s is not None:
        new_game_after_s = check.seconds(new_game_after_s, "play.new_game_after_s", MIN_NEW_GAME_AFTER_S, MAX_NEW_GAME_AFTER_S)
        if not new_game_wired:
            raise ConfigError(check.path, "play.new_game_after_s", f"needs a {NEW_GAME_KEY!r} key in keys.outputs (or null)")
    return PlayConfig(
        closed_loop=check.boolean(section.get("closed_loop", defaults.closed_loop), "play.closed_loop"),
        level_from_screen=check.boolean(
            section.get("level_from_screen", defaults.level_from_screen), "play.level_from_screen"
        ),
        plan_ahead=check.boolean(section.get("plan_ahead", defaults.plan_ahead), "play.plan_ahead"),
        new_game_after_s=new_game_after_s,
    )


def _player(value: Any, path: Path) -> str:
    """A player name that loads, so a typo shows up now rather than when play starts."""
    if not isinstance(value, str) or not value:
        raise ConfigError(path, "player", f"must be a player name, got {value!r}")
    try:
        load_player(value)
    except ConfigError as exc:
        raise ConfigError(path, "player", str(exc)) from exc
    return value


class _Checker:
    """Value checks that name the file and the dotted key in their errors."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def section(
        self, data: Any, name: str, required: tuple[str, ...], optional: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """A mapping with all of ``required`` and nothing outside ``required + optional``."""
        allowed = required + optional
        if not isinstance(data, dict):
            raise ConfigError(self.path, name or None, f"expected a mapping with keys {', '.join(allowed)}")
        prefix = f"{name}." if name else ""
        for key in data:
            if key not in allowed:
                raise ConfigError(self.path, f"{prefix}{key}", f"unknown key (allowed: {', '.join(allowed)})")
        for key in required:
            if key not in data:
                raise ConfigError(self.path, f"{prefix}{key}", "missing")
        return data

    def choice(self, value: Any, key: str, choices: tuple[str, ...]) -> str:
        if value not in choices:
            raise ConfigError(self.path, key, f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def integer(self, value: Any, key: str, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(self.path, key, f"must be a whole number from {low} to {high}, got {value!r}")
        return value

    def seconds(self, value: Any, key: str, low: float, high: float) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise ConfigError(self.path, key, f"must be a number of seconds from {low:g} to {high:g}, got {value!r}")
        return float(value)

    def boolean(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise ConfigError(self.path, key, f"must be true or false, got {value!r}")
        return value

    def path_value(self, value: Any, key: str) -> Path:
        """A file path; a relative one is relative to the config file's folder, ~ is expanded."""
        if not isinstance(value, str) or not value:
            raise ConfigError(self.path, key, f"must be a file path, got {value!r}")
        return self.path.parent / Path(value).expanduser()
