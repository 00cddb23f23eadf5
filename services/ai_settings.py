"""What the ai service reads from the rig config, gathered into one small dataclass.

Keys read (daemon/rig_config.py validates them): ``rules`` (all), ``initial_level``, ``preview``,
``player``, ``keys.hold_ms`` and ``keys.gap_ms`` (the relay's press cadence, which the key plans are
simulated at) and ``play.closed_loop``, ``play.level_from_screen``, ``play.plan_ahead``.  The two latencies below are
not in the config yet: they are the simulator's figures (a camera 3 frames behind at 60 Hz plus
recognition; a key edge reaches the game at its next 60 Hz frame after the board's debounce) and
belong in the config's ``play`` section once a real rig has measured its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gamerig.daemon.player_config import load_player
from gamerig.daemon.rig_config import RigConfig, load_rig_config
from gamerig.games.tetris.players import PlayerSpec
from gamerig.games.tetris.rules import Rules

#: From the glass to a frame's t_capture: what a frame shows happened this long before it.  On the
#: simulator (3 frames of camera latency, MJPEG over HTTP, the filter's second agreeing frame) the
#: first frame showing a key's effect had a t_capture 100-105 ms after the game acted on it; with
#: 60 ms the closed loop confirmed on frames from before its last key and corrected a good move.
VIEW_LATENCY_S = 0.105
#: From a relay's close command to the game acting on the key (wire, debounce, the game's frame).
KEY_LATENCY_S = 0.03
#: Closed loop: from the last move key reaching the game to a camera frame that shows it being
#: on the bus (view latency, a frame period, recognition) and the drop key reaching the game.
CONFIRM_DELAY_S = VIEW_LATENCY_S + 0.035 + KEY_LATENCY_S


@dataclass(frozen=True)
class AiSettings:
    """The ai service's configuration; times in seconds."""

    rules: Rules
    initial_level: int
    preview: bool
    player: PlayerSpec
    key_interval_s: float  # keys.hold_ms + keys.gap_ms
    key_hold_s: float = 0.03  # keys.hold_ms
    closed_loop: bool = True
    level_from_screen: bool = True
    plan_ahead: bool = False
    view_latency_s: float = VIEW_LATENCY_S
    key_latency_s: float = KEY_LATENCY_S
    confirm_delay_s: float = CONFIRM_DELAY_S
    new_game_after_s: float | None = None  # play.new_game_after_s (None: never press new_game)

    @classmethod
    def from_config(cls, config: RigConfig) -> AiSettings:
        """The settings of a loaded rig config."""
        return cls(
            rules=config.rules,
            initial_level=config.initial_level,
            preview=config.preview,
            player=load_player(config.player),
            key_interval_s=(config.keys.hold_ms + config.keys.gap_ms) / 1000.0,
            key_hold_s=config.keys.hold_ms / 1000.0,
            closed_loop=config.play.closed_loop,
            level_from_screen=config.play.level_from_screen,
            plan_ahead=config.play.plan_ahead,
            new_game_after_s=config.play.new_game_after_s,
        )

    @classmethod
    def from_file(cls, path: Path) -> AiSettings:
        """Load and validate the rig config at ``path`` (ConfigError naming the key if it is bad)."""
        return cls.from_config(load_rig_config(path))
