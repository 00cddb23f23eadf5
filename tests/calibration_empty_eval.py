"""Measure find_well on empty boards: every skin, and four tuning skins redrawn as wells open
at the top (``support.filmed_play.open_top``: walls and a floor on the colour that fills the
well, no grid), each filmed by a number of random cameras, eight frames of the empty board from
each (each frame with its own sensor noise).

    .venv/bin/python tests/calibration_empty_eval.py [--cameras 6] [--jobs 2]

Prints per skin how many were found within CORNER_TOLERANCE_PX and the worst corner of each
(None: not found), then the totals.  An empty well with no grid lines, no border and no
contrast with its surroundings (gradient_open) cannot be found and should give None.
"""

from __future__ import annotations

import argparse
from multiprocessing import Pool

import cv2

from gamerig.games.tetris.calibration import find_well
from gamerig.games.tetris.skins import SKINS, Skin, skin
from gamerig.games.tetris.vision_bench import CORNER_TOLERANCE_PX
from support.filmed_play import OPEN_TOP_COLOURS, filmed_empty_well, open_top, worst_corner

EVALUATED: tuple[Skin, ...] = (*SKINS, *(open_top(name) for name in OPEN_TOP_COLOURS))


def _skin(name: str) -> Skin:
    return open_top(name.removesuffix("_open_top")) if name.endswith("_open_top") else skin(name)


def error_of(job: tuple[str, int]) -> tuple[str, float | None]:
    """The skin and find_well's worst corner (px) on its empty board filmed by camera ``seed``."""
    cv2.setNumThreads(1)
    name, seed = job
    frames, truth = filmed_empty_well(_skin(name), seed)
    fit = find_well(frames)
    return name, None if fit is None else worst_corner(fit.corners, truth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cameras", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    jobs = [(sk.name, seed) for sk in EVALUATED for seed in range(args.cameras)]
    with Pool(args.jobs) as pool:
        results = pool.map(error_of, jobs)
    for group, skins in (("the skins", SKINS), ("open at the top", EVALUATED[len(SKINS):])):
        errors_of = {sk.name: [error for name, error in results if name == sk.name] for sk in skins}
        for sk in skins:
            errors = errors_of[sk.name]
            shown = ", ".join("None" if error is None else f"{error:.1f}" for error in errors)
            print(f"  {sk.name + (' (held out)' if sk.held_out else ''):28s} {_found(errors)}/{len(errors)}  [{shown}]")
        every = [error for errors in errors_of.values() for error in errors]
        wrong = sum(error is not None and error > CORNER_TOLERANCE_PX for error in every)
        print(f"{group}: found {_found(every)}/{len(every)}, None on {every.count(None)}, wrong on {wrong}")


def _found(errors: list[float | None]) -> int:
    return sum(error is not None and error <= CORNER_TOLERANCE_PX for error in errors)


if __name__ == "__main__":
    main()
