"""The rig config: the shipped files load, defaults fill optional sections, and every bad value or
unknown key is a ConfigError naming the file and the dotted key."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gamerig.daemon.config_errors import ConfigError
from gamerig.daemon.rig_config import (
    BusConfig,
    PlayConfig,
    WatchdogConfig,
    default_config_path,
    load_rig_config,
)

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SIM_CONFIG = CONFIGS / "gamerig-sim.yaml"

MINIMAL: dict[str, Any] = {
    "game": "tetris",
    "rules": {"name": "standard", "width": 10, "height": 20, "clear_top_row": False},
    "initial_level": 1,
    "preview": True,
    "player": "dellacherie",
    "camera": {"source": "http://127.0.0.1:8080/stream.mjpg"},
    "keys": {"board": "adr2200", "port": "/dev/ttyUSB0", "outputs": {"left": 0, "right": 1, "rotate": 2, "drop": 3}},
}


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "rig.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def with_value(dotted: str, value: Any) -> dict[str, Any]:
    """MINIMAL with one dotted key set (sections created as needed)."""
    data = copy.deepcopy(MINIMAL)
    *parents, last = dotted.split(".")
    node = data
    for name in parents:
        node = node.setdefault(name, {})
    node[last] = value
    return data


def test_the_shipped_config_loads_with_every_section() -> None:
    config = load_rig_config(default_config_path())
    assert config.camera.source.startswith("v4l2:///dev/video0")
    assert config.camera.calibration == CONFIGS / "calibration.yaml"
    assert config.keys.board == "adr2200" and config.keys.outputs["drop"] == 3
    assert config.bus == BusConfig()
    assert config.watchdog == WatchdogConfig() and config.play == PlayConfig()
    assert config.path == default_config_path()


def test_the_sim_config_loads_once_its_stream_port_is_filled_in(tmp_path: Path) -> None:
    text = SIM_CONFIG.read_text().replace("SIM_STREAM_PORT", "45123")
    path = tmp_path / "gamerig-sim.yaml"
    path.write_text(text)
    config = load_rig_config(path)
    assert config.camera.source == "http://127.0.0.1:45123/stream.mjpg"
    assert config.keys.port == "/tmp/gamerig-sim-relay"
    assert config.initial_level == 5 and config.preview


def test_the_unfilled_sim_config_names_its_placeholder() -> None:
    with pytest.raises(ConfigError) as error:
        load_rig_config(SIM_CONFIG)
    assert error.value.key == "camera.source"
    assert "SIM_STREAM_PORT" in error.value.reason


def test_optional_sections_take_their_defaults(tmp_path: Path) -> None:
    config = load_rig_config(write(tmp_path, MINIMAL))
    assert config.bus == BusConfig() and config.watchdog == WatchdogConfig()
    assert config.play == PlayConfig(new_game_after_s=None)  # MINIMAL wires no new_game key
    assert config.camera.k == 2


def test_the_next_game_is_started_by_default_only_where_a_key_is_wired_to_new_game(tmp_path: Path) -> None:
    assert load_rig_config(write(tmp_path, MINIMAL)).play.new_game_after_s is None
    wired = with_value("keys.outputs.new_game", 4)
    assert load_rig_config(write(tmp_path, wired)).play.new_game_after_s == PlayConfig().new_game_after_s == 5.0
    wired["play"] = {"new_game_after_s": None}
    assert load_rig_config(write(tmp_path, wired)).play.new_game_after_s is None


def test_relative_paths_are_relative_to_the_config_file(tmp_path: Path) -> None:
    data = with_value("camera.calibration", "cal/rig.yaml")
    data["bus"] = {"runtime_dir": "run", "curve": {"server_key": "keys/server.key_secret", "client_keys_dir": "/etc/k"}}
    config = load_rig_config(write(tmp_path, data))
    assert config.camera.calibration == tmp_path / "cal/rig.yaml"
    assert config.bus.runtime_dir == tmp_path / "run"
    assert config.bus.curve is not None and config.bus.curve.server_key == tmp_path / "keys/server.key_secret"
    assert config.bus.curve.client_keys_dir == Path("/etc/k")


@pytest.mark.parametrize(
    ("dotted", "value", "reason"),
    [
        ("camera.sourse", "x", "unknown key"),
        ("camera.source", "ftp://host/x", "unknown scheme 'ftp'"),
        ("camera.source", "v4l2:///dev/video0?fps=fast", "option fps='fast'"),
        ("camera.source", "http://cam:80a/x", "is not a number"),
        ("camera.source", 42, "must be a frame source string"),
        ("camera.k", 0, "from 1 to 10"),
        ("camera.calibration", "", "must be a file path"),
        ("keys.hold_ms", 10, "at least 30"),
        ("keys.colour", "red", "unknown key"),
        ("bus.publish", "udp://x", "must be ipc://PATH or tcp://HOST:PORT"),
        ("bus.publish", "tcp://0.0.0.0:5555", "needs bus.curve keys"),
        ("bus.control", "ipc://", "must be ipc://PATH"),
        ("bus.insecure", "yes", "true or false"),
        ("bus.curve", "keys/", "expected a mapping with keys server_key, client_keys_dir"),
        ("bus.curve.server_key", 5, "must be a file path"),
        ("bus.speed", 1, "unknown key"),
        ("watchdog.heartbeat_timeout_s", 0, "seconds from 0.1 to 60"),
        ("watchdog.stale_frame_periods", 2.5, "whole number"),
        ("watchdog.mismatch_halt_count", True, "whole number"),
        ("watchdog.resume_healthy_s", -1, "seconds from 0 to 60"),
        ("watchdog.halt", 1, "unknown key"),
        ("play.closed_loop", "on", "true or false"),
        ("play.plan_ahead", 1, "true or false"),
        ("play.openloop", True, "unknown key"),
        ("play.new_game_after_s", 0.1, "seconds from 0.5 to 3600"),
        ("play.new_game_after_s", 5, "needs a 'new_game' key in keys.outputs"),
        ("initial_level", 11, "from 1 to 10"),
        ("rules.widht", 10, "unknown key"),
        ("player", "nosuch", "no player named 'nosuch'"),
    ],
)
def test_a_bad_value_names_file_key_and_reason(tmp_path: Path, dotted: str, value: Any, reason: str) -> None:
    if dotted == "bus.curve.server_key":
        data = with_value("bus.curve", {"server_key": value, "client_keys_dir": "k"})
    else:
        data = with_value(dotted, value)
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as error:
        load_rig_config(path)
    assert error.value.path == path
    assert error.value.key == dotted, str(error.value)
    assert reason in error.value.reason


@pytest.mark.parametrize("section", ["camera", "keys"])
def test_camera_and_keys_are_required(tmp_path: Path, section: str) -> None:
    data = {key: value for key, value in MINIMAL.items() if key != section}
    with pytest.raises(ConfigError, match=f"{section}: missing"):
        load_rig_config(write(tmp_path, data))


def test_a_section_that_is_not_a_mapping_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        load_rig_config(write(tmp_path, with_value("watchdog", [1, 2])))
    assert error.value.key == "watchdog"


def test_tcp_is_accepted_with_curve_or_insecure(tmp_path: Path) -> None:
    insecure = with_value("bus.publish", "tcp://10.0.0.2:5555")
    insecure["bus"]["insecure"] = True
    assert load_rig_config(write(tmp_path, insecure)).bus.publish == "tcp://10.0.0.2:5555"
    curved = with_value("bus.subscribe", "tcp://10.0.0.2:5556")
    curved["bus"]["curve"] = {"server_key": "s", "client_keys_dir": "c"}
    assert load_rig_config(write(tmp_path, curved)).bus.subscribe == "tcp://10.0.0.2:5556"


def test_the_runtime_dir_is_the_configured_one_else_the_environments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNTIME_DIRECTORY", "/run/gamerig")
    assert BusConfig().resolved_runtime_dir() == Path("/run/gamerig")
    assert BusConfig(runtime_dir=Path("/srv/rig")).resolved_runtime_dir() == Path("/srv/rig")


def test_endpoints_default_to_ipc_in_the_runtime_dir_unless_configured() -> None:
    endpoints = BusConfig(runtime_dir=Path("/srv/rig"), publish="tcp://10.0.0.2:5555", insecure=True).endpoints()
    assert endpoints.publish == "tcp://10.0.0.2:5555" and endpoints.insecure
    assert endpoints.subscribe == "ipc:///srv/rig/bus-sub" and endpoints.control == "ipc:///srv/rig/control"
