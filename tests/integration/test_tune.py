"""`gamerigctl tune` as a user runs it: a tiny tuning run written to a player file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gamerig.daemon.player_config import parse_player

pytestmark = pytest.mark.off_the_clock  # no deadlines: runs beside other tests (tests/conftest.py)

GAMERIGCTL = str(Path(sys.executable).with_name("gamerigctl"))
SMALL = ["--generations", "2", "--population", "6", "--games", "2", "--max-lines", "30",
         "--width", "6", "--height", "8", "--features", "holes,landing_height,row_transitions,column_transitions"]


def tune(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([GAMERIGCTL, "tune", "--name", "tiny", "--out", str(out), *SMALL, *extra],
                          capture_output=True, text=True, timeout=120)


def test_tuning_writes_a_loadable_player_and_is_reproducible_whatever_the_jobs(tmp_path: Path) -> None:
    first = tune(tmp_path / "a.yaml", "--seed", "3", "--jobs", "1")
    second = tune(tmp_path / "b.yaml", "--seed", "3", "--jobs", "2")
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    assert "generation   2:" in first.stdout
    spec = parse_player(tmp_path / "a.yaml")
    assert spec.name == "tiny" and set(spec.weights) == {"holes", "landing_height", "row_transitions", "column_transitions"}
    assert yaml.safe_load((tmp_path / "a.yaml").read_text()) == yaml.safe_load((tmp_path / "b.yaml").read_text())
    assert "gamerigctl tune" in (tmp_path / "a.yaml").read_text()  # the header tells how to reproduce it


def test_an_unknown_feature_is_a_clear_error(tmp_path: Path) -> None:
    result = subprocess.run([GAMERIGCTL, "tune", "--features", "holes,bogus", "--out", str(tmp_path / "x.yaml")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "bogus" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "x.yaml").exists()
