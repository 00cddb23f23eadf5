"""systemd/gamerig.service passes `systemd-analyze verify` with an empty stderr.

verify exits 0 even for bad values and unknown keys (it only prints "..., ignoring"), so stderr is
what is checked; ExecStart must exist, so the unit is checked with its install path replaced by
this checkout's gamerigd (hardware.md section 6). Not tested here: running it under a real systemd.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "gamerig.service"
INSTALLED_GAMERIGD = "/opt/gamerig/.venv/bin/gamerigd"
GAMERIGD = Path(sys.executable).with_name("gamerigd")

pytestmark = [
    pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"),
    pytest.mark.off_the_clock,  # no deadlines: runs beside other tests (tests/conftest.py)
]


def verify(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    unit = tmp_path / "gamerig.service"
    unit.write_text(text)
    return subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)


def local_unit() -> str:
    text = UNIT.read_text()
    assert f"ExecStart={INSTALLED_GAMERIGD} " in text
    return text.replace(INSTALLED_GAMERIGD, str(GAMERIGD))


def test_the_unit_verifies_without_a_word_on_stderr(tmp_path: Path) -> None:
    result = verify(tmp_path, local_unit())
    assert result.stderr == ""
    assert result.returncode == 0


def test_a_typo_would_be_caught(tmp_path: Path) -> None:
    """The check above can fail: verify reports a misspelt key on stderr (and still exits 0)."""
    result = verify(tmp_path, local_unit().replace("DeviceAllow=char-ttyUSB", "DeviceAlow=char-ttyUSB"))
    assert "DeviceAlow" in result.stderr


def test_the_unit_has_the_settings_the_rig_relies_on() -> None:
    settings = {line.strip() for line in UNIT.read_text().splitlines() if "=" in line and not line.startswith("#")}
    for setting in (
        "Type=notify",
        "Restart=on-failure",
        "RestartPreventExitStatus=2",  # a bad config: no restart loop
        "KillMode=mixed",  # SIGTERM to gamerigd alone, so it releases the relays before the services stop
        "DynamicUser=yes",
        "SupplementaryGroups=dialout video",
        "ProtectSystem=strict",
        "DevicePolicy=closed",
        "DeviceAllow=char-ttyUSB rw",
        "DeviceAllow=char-ttyACM rw",
        "DeviceAllow=char-video4linux rw",
        "RuntimeDirectory=gamerig",
        "RuntimeDirectoryMode=0700",
        "StateDirectory=gamerig",
        "CacheDirectory=gamerig",
        "Environment=NUMBA_CACHE_DIR=/var/cache/gamerig",  # numba cannot cache beside read-only code
    ):
        assert setting in settings, setting
    assert any(line.startswith("WatchdogSec=") for line in settings)
    assert "PrivateDevices=yes" not in settings  # it would hide /dev/ttyUSB0 and /dev/video0
