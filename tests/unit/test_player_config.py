"""Player files: the at_speed section is read, written back, and refused with the key named."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gamerig.daemon.config_errors import ConfigError
from gamerig.daemon.player_config import dump_player, load_player, parse_player

WEIGHTS = {"holes": -4.0, "landing_height": -1.0}


def write(tmp_path: Path, at_speed: object) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"name": "p", "weights": WEIGHTS, "at_speed": at_speed}))
    return path


def test_the_shipped_player_doubles_its_landing_height_weight_at_level_10_only() -> None:
    spec = load_player("gamerig")
    assert spec.at_level(9) is spec
    fast = spec.at_level(10)
    assert fast.weights["landing_height"] == 2 * spec.weights["landing_height"]
    assert {k: v for k, v in fast.weights.items() if k != "landing_height"} == {k: v for k, v in spec.weights.items() if k != "landing_height"}


def test_at_speed_survives_a_write_and_a_read(tmp_path: Path) -> None:
    spec = parse_player(write(tmp_path, {"from_level": 9, "weight_scales": {"landing_height": 1.5}}))
    dump_player(spec, tmp_path / "again.yaml", "a header")
    again = parse_player(tmp_path / "again.yaml")
    assert again.at_speed == spec.at_speed and again.at_speed is not None
    assert again.at_level(9).weights == {"holes": -4.0, "landing_height": -1.5}


@pytest.mark.parametrize(
    ("at_speed", "key"),
    [
        ([9], "at_speed"),
        ({"from_level": 9, "weight_scales": {"landing_height": 2}, "to_level": 10}, "at_speed.to_level"),
        ({"from_level": 11, "weight_scales": {"landing_height": 2}}, "at_speed.from_level"),
        ({"from_level": True, "weight_scales": {"landing_height": 2}}, "at_speed.from_level"),
        ({"from_level": 9, "weight_scales": {}}, "at_speed.weight_scales"),
        ({"from_level": 9, "weight_scales": {"height": 2}}, "at_speed.weight_scales.height"),
        ({"from_level": 9, "weight_scales": {"holes": -1}}, "at_speed.weight_scales.holes"),
    ],
)
def test_a_bad_at_speed_section_names_the_file_and_the_key(tmp_path: Path, at_speed: object, key: str) -> None:
    path = write(tmp_path, at_speed)
    with pytest.raises(ConfigError) as error:
        parse_player(path)
    assert error.value.path == path and error.value.key == key
