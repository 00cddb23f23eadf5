"""Measure find_well on a Tetris this project did not draw: tetris-py (pygame), filmed by the
synthetic camera.  The project's own skins tune the calibration; a game drawn by another program
is the check that it was built for games in general (issue 3).

    .venv/bin/python tests/third_party_eval.py [--scenes 60] [--venv .cache/third-party]

The game runs in its own virtual environment (created on the first run from the package
registry: pygame and tetris-py at pinned versions, never the project's dependencies), where
tests/support/tetris_py_screens.py plays it by random keys and saves its window.  Each scene's
window is padded to 4:3 with its own background (its corner pixel: a monitor showing it full height) and
filmed by a random camera (``CameraSettings.random``, seeded by the scene).  Prints each failed
scene, how many were found (worst corner within CORNER_PX), how often find_well gave None, and
the median worst-corner error.  Then recognition, calibrated from the true corners and
EMPTY_FRAMES of the empty well: the cells read right (the game's ghost, the outline it draws
where the piece would land, apart: an empty cell to the game, read filled when it is) and the
frames read right in every cell.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path

import cv2
import numpy as np

from gamerig.games.tetris.calibration import find_well
from gamerig.games.tetris.recognition import learn_empty, observe
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

CORNER_PX = 3.0  # as `gamerigctl bench vision` counts a calibration found
EMPTY_FRAMES = 4
PACKAGES = ("pygame==2.6.1", "tetris-py==0.0.17", "numpy")
SCREENS = Path(__file__).parent / "support" / "tetris_py_screens.py"


def game_python(venv: Path) -> Path:
    """The Python of the game's virtual environment, made on first use."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    return python


@dataclass
class Reading:
    """Recognition's count over frames: cells outside the ghost, ghost cells, whole frames."""

    wrong: int = 0
    cells: int = 0
    ghost_filled: int = 0
    ghost: int = 0
    exact: int = 0
    frames: int = 0

    def add(self, other: Reading) -> None:
        for name, value in vars(other).items():
            setattr(self, name, getattr(self, name) + value)


def filmed(saved: dict[str, np.ndarray], seed: int) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """A scene's screens and EMPTY_FRAMES of its empty well filmed by one random camera, and the
    well's true corners in the frames."""
    screens = saved["screens"]
    height, width = screens.shape[1:3]
    monitor_height = max(height, round(width * 3 / 4))
    top = (monitor_height - height) // 2
    rng = np.random.default_rng(seed)
    settings = CameraSettings.random(rng)

    def shot(screen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        monitor = np.empty((monitor_height, width, 3), np.uint8)
        monitor[:] = screens[0, 0, 0]  # the window's background
        monitor[top : top + height] = screen
        return film(monitor, rng, settings)

    shots = [shot(screen) for screen in screens]
    empties = [shot(saved["empty"])[0] for _ in range(EMPTY_FRAMES)]
    return [frame for frame, _ in shots], empties, map_points(shots[0][1], saved["corners"] + [0, top])


def measure(job: tuple[Path, int]) -> tuple[int, float | None, Reading]:
    """One scene: its number, find_well's worst-corner error (None: no well found) and what
    recognition read from the true corners."""
    path, scene = job
    cv2.setNumThreads(1)
    saved = dict(np.load(path))
    frames, empties, truth = filmed(saved, 1000 + scene)
    fit = find_well(frames)
    calibration = learn_empty(empties, truth)
    reading = Reading()
    for frame, cells, ghost in zip(frames, saved["cells"], saved["ghosts"]):
        observation = observe(frame, calibration)
        reading.frames += 1
        if not observation.valid:
            continue
        wrong = observation.filled != cells[::-1]  # bottom row first
        ghost = ghost[::-1]
        reading.add(Reading(int((wrong & ~ghost).sum()), int((~ghost).sum()), int((wrong & ghost).sum()), int(ghost.sum()),
                            int(not (wrong & ~ghost).any()), 0))
    return scene, None if fit is None else float(np.linalg.norm(fit.corners - truth, axis=1).max()), reading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenes", type=int, default=60)
    parser.add_argument("--venv", type=Path, default=Path(".cache/third-party"))
    args = parser.parse_args()
    python = game_python(args.venv)
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([str(python), str(SCREENS), str(args.scenes), out], check=True, stdout=subprocess.DEVNULL)
        jobs = [(Path(out) / f"{k}.npz", k) for k in range(args.scenes)]
        with Pool(2) as pool:
            results = sorted(pool.map(measure, jobs), key=lambda result: result[0])
    errors = [error for _, error, _ in results if error is not None]
    for scene, error, _ in results:
        if error is None or error > CORNER_PX:
            print(f"  scene {scene}: {'no well' if error is None else f'{error:.1f} px off'}")
    found = sum(error <= CORNER_PX for error in errors)
    print(f"found {found}/{len(results)} ({100 * found / len(results):.1f}%), None on {len(results) - len(errors)};"
          f" median worst-corner error of the wells returned {np.median(errors) if errors else float('nan'):.2f} px")
    read = Reading()
    for _, _, reading in results:
        read.add(reading)
    print(f"recognition from the true corners: cells right {100 * (1 - read.wrong / max(read.cells, 1)):.3f}% of"
          f" {read.cells} (the ghost's apart), ghost cells read filled {read.ghost_filled} of {read.ghost};"
          f" frames right but for the ghost {read.exact} of {read.frames}")


if __name__ == "__main__":
    main()
