"""gamerigctl and gamerigd as a user meets them: installed console scripts run as real processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.off_the_clock  # no deadlines: runs beside other tests (tests/conftest.py)

SCRIPTS = Path(sys.executable).parent

#: The shipped rig config with another player: every section a rig config has.
VALID_RIG_CONFIG: dict[str, Any] = {
    **yaml.safe_load((Path(__file__).parents[2] / "configs" / "gamerig.yaml").read_text()),
    "player": "dellacherie",
}


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPTS / script), *args], capture_output=True, text=True, timeout=120)


def assert_one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """Exit 2 with a single stderr line and no traceback; returns that line."""
    assert proc.returncode == 2, proc
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def listed_commands(help_text: str) -> set[str]:
    """Names in argparse's subcommand listing (indented name, then its help)."""
    return set(re.findall(r"^ {4}(\w+) {2,}\S", help_text, re.MULTILINE))


def test_help_lists_every_command_of_this_build() -> None:
    proc = run("gamerigctl", "--help")
    assert proc.returncode == 0
    assert {"demo", "players", "bench", "tune"} <= listed_commands(proc.stdout)


def test_bench_offers_the_ai_benchmark() -> None:
    proc = run("gamerigctl", "bench", "--help")
    assert proc.returncode == 0
    assert "ai" in listed_commands(proc.stdout)


def test_no_arguments_prints_help_and_exits_2() -> None:
    proc = run("gamerigctl")
    assert proc.returncode == 2
    assert "demo" in listed_commands(proc.stderr)


def test_unknown_subcommand_exits_2() -> None:
    proc = run("gamerigctl", "fly")
    assert proc.returncode == 2
    assert "invalid choice: 'fly'" in proc.stderr


def test_players_json_lists_the_shipped_players_with_descriptions() -> None:
    proc = run("gamerigctl", "players", "--json")
    assert proc.returncode == 0, proc.stderr
    players = {p["name"]: p for p in json.loads(proc.stdout)}
    assert {"dellacherie", "bcts"} <= set(players)
    assert all(p["description"] for p in players.values())
    assert players["dellacherie"]["tie_break"] == "priority"


def test_players_table_shows_name_and_description() -> None:
    proc = run("gamerigctl", "players")
    assert proc.returncode == 0
    assert re.search(r"^dellacherie +Dellacherie", proc.stdout, re.MULTILINE)


def test_bad_board_size_is_a_one_line_error() -> None:
    line = assert_one_line_error(run("gamerigctl", "demo", "--player", "dellacherie", "--width", "3"))
    assert "width must be 4..200, got 3" in line


def test_unknown_player_is_a_one_line_error_naming_the_known_ones() -> None:
    line = assert_one_line_error(run("gamerigctl", "demo", "--player", "nosuch"))
    assert "no player named 'nosuch'" in line
    assert "dellacherie" in line


def test_check_config_accepts_the_shipped_config() -> None:
    proc = run("gamerigd", "--check-config")
    assert proc.returncode == 0, proc.stderr
    assert "gamerig.yaml: ok:" in proc.stdout


def test_check_config_accepts_a_valid_file(tmp_path: Path) -> None:
    path = tmp_path / "rig.yaml"
    path.write_text(yaml.safe_dump(VALID_RIG_CONFIG))
    proc = run("gamerigd", "--check-config", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "standard rules 10 x 20 (top row never clears)" in proc.stdout
    assert "player dellacherie" in proc.stdout


@pytest.mark.parametrize(
    ("section", "key", "value", "named_key"),
    [
        ("rules", "widht", 10, "rules.widht"),  # a typo is an unknown key, not a silent default
        ("rules", "height", "twenty", "rules.height"),
        ("rules", "name", "tetris99", "rules.name"),
        (None, "initial_level", 11, "initial_level"),
        (None, "preview", "yes please", "preview"),
        (None, "player", "nosuch", "player"),
        (None, "colour", "red", "colour"),
        ("camera", "source", "ftp://camera", "camera.source"),
        ("keys", "hold_ms", 10, "keys.hold_ms"),
        ("watchdog", "heartbeat_timeout", 1.0, "watchdog.heartbeat_timeout"),
        ("bus", "insecure", "maybe", "bus.insecure"),
    ],
)
def test_check_config_rejects_a_bad_key_naming_file_and_key(
    tmp_path: Path, section: str | None, key: str, value: Any, named_key: str
) -> None:
    config = json.loads(json.dumps(VALID_RIG_CONFIG))  # deep copy
    (config[section] if section else config)[key] = value
    path = tmp_path / "rig.yaml"
    path.write_text(yaml.safe_dump(config))
    line = assert_one_line_error(run("gamerigd", "--check-config", str(path)))
    assert f"{path}: {named_key}:" in line


def test_check_config_rejects_a_missing_key(tmp_path: Path) -> None:
    config = {k: v for k, v in VALID_RIG_CONFIG.items() if k != "preview"}
    path = tmp_path / "rig.yaml"
    path.write_text(yaml.safe_dump(config))
    line = assert_one_line_error(run("gamerigd", "--check-config", str(path)))
    assert line.endswith(f"{path}: preview: missing")


def test_check_config_rejects_broken_yaml_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "rig.yaml"
    path.write_text("game: tetris\n  rules: [\n")
    line = assert_one_line_error(run("gamerigd", "--check-config", str(path)))
    assert f"{path}: not valid YAML:" in line and "line 2" in line


def test_versions_are_reported() -> None:
    for script in ("gamerigd", "gamerigctl"):
        proc = run(script, "--version")
        assert proc.returncode == 0
        assert re.fullmatch(rf"{script} \d+\.\d+\.\d+\n", proc.stdout)
