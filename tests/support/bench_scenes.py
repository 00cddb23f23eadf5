"""The frames find_well gets in one scene of `gamerigctl bench vision` (or of
tests/calibration_eval.py), to test the calibration on a scene it was measured on."""

from __future__ import annotations

import numpy as np

from gamerig.daemon.bench_vision import PLAYER
from gamerig.daemon.player_config import load_player
from gamerig.games.tetris import vision_bench


def calibration_shots(seed: int, scene: int, scenes: int = 220) -> tuple[list[np.ndarray], np.ndarray]:
    """The calibration frames of scene ``scene`` of a run with ``seed`` over ``scenes`` scenes
    (``calibration_eval.py --scenes``), and the well's true corners in them."""
    frames = vision_bench.FRAMES_PER_SCENE * scenes
    share = vision_bench.frame_shares(frames, vision_bench.scene_count(frames))[scene]
    played = vision_bench.scene_of(seed, load_player(PLAYER), scene, share)
    return played.run.calibration_shots(played.plays)
