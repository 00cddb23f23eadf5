"""Measure how often find_well sees a well where there is none: sets of frames of noise, of a
picture-like background filmed, of a blank screen filmed and of a picture with an empty
rectangle drawn on it filmed (``support.pictures``), a few sets of each.

    .venv/bin/python tests/calibration_garbage_eval.py [--sets 6] [--jobs 2]

Prints the sets that gave a well (kind, seed, score) and how many did.  Every one is a false
well: the calibration must give None on all of them.
"""

from __future__ import annotations

import argparse
from multiprocessing import Pool

import cv2
import numpy as np

from gamerig.games.tetris.calibration import find_well
from gamerig.games.tetris.render import _background
from gamerig.games.tetris.skins import skin
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film
from support.pictures import picture_with_a_rectangle

KINDS = ("noise", "picture", "blank screen", "rectangle on a picture")
FRAMES_PER_SET = 8
FIRST_SEED = 10


def garbage_frames(kind: str, seed: int) -> list[np.ndarray]:
    """``FRAMES_PER_SET`` 640 x 480 frames of ``kind`` (one of ``KINDS``), filmed by one random
    camera (noise is not filmed)."""
    rng = np.random.default_rng(seed)
    settings = CameraSettings.random(rng)
    if kind == "noise":
        return [rng.integers(0, 256, (480, 640, 3), dtype=np.uint8) for _ in range(FRAMES_PER_SET)]
    if kind == "picture":
        image = np.ascontiguousarray(_background(skin("picture"), 640, 480, seed))
    elif kind == "blank screen":
        image = np.full((480, 640, 3), rng.integers(0, 256, 3), np.uint8)
    else:
        image = picture_with_a_rectangle(seed)
    return [film(image, rng, settings)[0] for _ in range(FRAMES_PER_SET)]


def score_of(job: tuple[str, int]) -> tuple[str, int, float | None]:
    """The kind, the seed and the score of the well find_well saw in that set (None: none)."""
    cv2.setNumThreads(1)
    kind, seed = job
    fit = find_well(garbage_frames(kind, seed))
    return kind, seed, None if fit is None else fit.score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=6, help="sets of each kind")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    jobs = [(kind, seed) for kind in KINDS for seed in range(FIRST_SEED, FIRST_SEED + args.sets)]
    with Pool(args.jobs) as pool:
        results = pool.map(score_of, jobs)
    wells = [(kind, seed, score) for kind, seed, score in results if score is not None]
    for kind, seed, score in wells:
        print(f"  {kind}, seed {seed}: a well scoring {score:.2f}")
    print(f"a well in {len(wells)} of {len(jobs)} sets without one")


if __name__ == "__main__":
    main()
