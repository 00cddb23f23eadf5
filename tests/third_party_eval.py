"""Measure find_well on a Tetris this project did not draw: tetris-py (pygame), filmed by the
synthetic camera.  The project's own skins tune the calibration; a game drawn by another program
is the check that it was built for games in general (issue 3).

    .venv/bin/python tests/third_party_eval.py [--scenes 60] [--venv .cache/third-party]

The game runs in its own virtual environment (created on the first run from the package
registry: pygame and tetris-py at pinned versions, never the project's dependencies), where
tests/support/tetris_py_screens.py plays it by random keys and saves its window.  Each scene's
window is padded to 4:3 with the game's own background (a monitor showing it full height) and
filmed by a random camera (``CameraSettings.random``, seeded by the scene).  Prints each failed
scene, how many were found (worst corner within CORNER_PX), how often find_well gave None, and
the median worst-corner error.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from multiprocessing import Pool
from pathlib import Path

import cv2
import numpy as np

from gamerig.games.tetris.calibration import find_well
from gamerig.hardware.sim.synthetic_camera import CameraSettings, film, map_points

CORNER_PX = 3.0  # as `gamerigctl bench vision` counts a calibration found
PACKAGES = ("pygame==2.6.1", "tetris-py==0.0.17", "numpy")
WINDOW_BACKGROUND = 20  # tetris-py's dark grey
SCREENS = Path(__file__).parent / "support" / "tetris_py_screens.py"


def game_python(venv: Path) -> Path:
    """The Python of the game's virtual environment, made on first use."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    return python


def filmed(path: Path, seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    """A scene's screens filmed by one random camera, and the well's true corners in the frames."""
    saved = np.load(path)
    screens, corners = saved["screens"], saved["corners"]
    height, width = screens.shape[1:3]
    monitor_height = max(height, round(width * 3 / 4))
    top = (monitor_height - height) // 2
    rng = np.random.default_rng(seed)
    settings = CameraSettings.random(rng)
    frames, homography = [], None
    for screen in screens:
        monitor = np.full((monitor_height, width, 3), WINDOW_BACKGROUND, np.uint8)
        monitor[top : top + height] = screen
        frame, homography = film(monitor, rng, settings)
        frames.append(frame)
    return frames, map_points(homography, corners + [0, top])


def measure(job: tuple[Path, int]) -> tuple[int, float | None]:
    """One scene: its number and find_well's worst-corner error (None: no well found)."""
    path, scene = job
    cv2.setNumThreads(1)
    frames, truth = filmed(path, 1000 + scene)
    fit = find_well(frames)
    return scene, None if fit is None else float(np.linalg.norm(fit.corners - truth, axis=1).max())


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
            results = sorted(pool.map(measure, jobs))
    errors = [error for _, error in results if error is not None]
    for scene, error in results:
        if error is None or error > CORNER_PX:
            print(f"  scene {scene}: {'no well' if error is None else f'{error:.1f} px off'}")
    found = sum(error <= CORNER_PX for error in errors)
    print(f"found {found}/{len(results)} ({100 * found / len(results):.1f}%), None on {len(results) - len(errors)};"
          f" median worst-corner error of the wells returned {np.median(errors) if errors else float('nan'):.2f} px")


if __name__ == "__main__":
    main()
