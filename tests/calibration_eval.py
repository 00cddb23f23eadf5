"""Measure find_well alone on the scenes `gamerigctl bench vision` films: the bench itself, run
with its recognition part switched off, so scene for scene it is the same calibration test
(`--scenes N` matches `gamerigctl bench vision --frames 100N`: FRAMES_PER_SCENE is 100) in a
fraction of the time.

    .venv/bin/python tests/calibration_eval.py [--scenes 220] [--seed 0]

Prints per-skin success (worst corner within CORNER_TOLERANCE_PX), how often find_well gave
None, the median worst-corner error of the wells it returned and its CPU time per call.

Seeds 0 and 1 are the scenes find_well's cues were developed on (99.3% found); seeds 2 and 3,
run once on 2026-12-07 to check that, found 97.3%, and their misses were then looked at.  Seeds
4 and up have not been run: check a change on them before tuning on them, so that the figure
still says how the calibration does on scenes it has not seen.
"""

from __future__ import annotations

import argparse
import time

import cv2
import numpy as np

from gamerig.daemon.bench_vision import PLAYER
from gamerig.daemon.player_config import load_player
from gamerig.games.tetris import vision_bench
from gamerig.games.tetris.calibration import WellFit, find_well


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenes", type=int, default=220)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cv2.setNumThreads(1)
    times: list[float] = []
    nones = 0

    def timed_find_well(frames: list[np.ndarray]) -> WellFit | None:
        nonlocal nones
        started = time.thread_time()
        fit = find_well(frames)
        times.append(time.thread_time() - started)
        nones += fit is None
        return fit

    vision_bench.find_well = timed_find_well
    vision_bench.SceneRun.recognition = lambda *_args, **_kwargs: None  # calibration only
    result = vision_bench.run_bench(vision_bench.FRAMES_PER_SCENE * args.scenes, args.seed, load_player(PLAYER))
    held_out = {skin.name for skin in vision_bench.SKINS if skin.held_out}
    for name, tally in result.by_skin.items():
        print(f"  {name + (' (held out)' if name in held_out else ''):28s} {tally.calibrated:3d}/{tally.scenes}")
    overall = result.overall
    print(
        f"found {overall.calibrated}/{overall.scenes} ({100 * overall.calibrated / overall.scenes:.1f}%), held-out skins"
        f" {result.held_out.calibrated}/{result.held_out.scenes}, None on {nones}; median worst-corner error of the wells"
        f" returned {np.median(overall.corner_errors):.2f} px; {np.mean(times):.2f} s per call (max {np.max(times):.2f})"
    )


if __name__ == "__main__":
    main()
