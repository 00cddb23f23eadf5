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
EMPTY_FRAMES of the empty well, through ``cell_look.LearningObserver`` from the scene's first
frame: the cells read right (the game's ghost, the outline it draws where the piece would land,
is empty cells; also counted apart), the frames read right in every cell, how each scene came
to be read, and the same counts over the frames read after that was decided.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing import Pool
from pathlib import Path

import cv2
import numpy as np

from gamerig.games.tetris.calibration import find_well
from gamerig.games.tetris.cell_look import CELL_LOOKS, LearningObserver
from gamerig.games.tetris.recognition import learn_empty
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
    """Recognition's count over frames: cells (the ghost's are empty cells), ghost cells read
    filled, frames read right in every cell."""

    wrong: int = 0
    cells: int = 0
    wrong_outside_ghost: int = 0
    ghost_filled: int = 0
    ghost: int = 0
    exact: int = 0
    frames: int = 0

    def add(self, other: Reading) -> None:
        for name, value in vars(other).items():
            setattr(self, name, getattr(self, name) + value)

    def summary(self) -> str:
        """The counts as the report prints them."""
        outside = 1 - self.wrong_outside_ghost / max(self.cells - self.ghost, 1)
        return (f"cells right {100 * (1 - self.wrong / max(self.cells, 1)):.3f}% of {self.cells} ({100 * outside:.3f}% outside"
                f" the ghost), ghost cells read filled {self.ghost_filled} of {self.ghost}, frames right {self.exact} of {self.frames}")


@dataclass
class SceneResult:
    """One scene: find_well's worst-corner error (None: no well found), recognition over all its
    frames and over those read after ``cell_look`` decided, and what it decided."""

    scene: int
    corner_error: float | None
    every_frame: Reading = field(default_factory=Reading)
    once_decided: Reading = field(default_factory=Reading)
    look: str = "undecided"


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


def measure(job: tuple[Path, int]) -> SceneResult:
    """One scene: find_well on its frames, and recognition from the true corners."""
    path, scene = job
    cv2.setNumThreads(1)
    saved = dict(np.load(path))
    frames, empties, truth = filmed(saved, 1000 + scene)
    fit = find_well(frames)
    result = SceneResult(scene, None if fit is None else float(np.linalg.norm(fit.corners - truth, axis=1).max()))
    reader = LearningObserver(learn_empty(empties, truth))
    for frame, cells, ghost in zip(frames, saved["cells"], saved["ghosts"]):
        observation = reader.observe(frame)
        reading = Reading(frames=1)
        if observation.valid:
            wrong = observation.filled != cells[::-1]  # bottom row first
            ghost = ghost[::-1]
            reading = Reading(int(wrong.sum()), wrong.size, int((wrong & ~ghost).sum()), int((wrong & ghost).sum()),
                              int(ghost.sum()), int(not wrong.any()), 1)
        result.every_frame.add(reading)
        if reader.look != "undecided":
            result.once_decided.add(reading)
    result.look = reader.look
    return result


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
            results = pool.map(measure, jobs)
    errors = [result.corner_error for result in results if result.corner_error is not None]
    for result in results:
        if result.corner_error is None or result.corner_error > CORNER_PX:
            error = "no well" if result.corner_error is None else f"{result.corner_error:.1f} px off"
            print(f"  scene {result.scene}: {error}")
    found = sum(error <= CORNER_PX for error in errors)
    print(f"found {found}/{len(results)} ({100 * found / len(results):.1f}%), None on {len(results) - len(errors)};"
          f" median worst-corner error of the wells returned {np.median(errors) if errors else float('nan'):.2f} px")
    every_frame, once_decided = Reading(), Reading()
    for result in results:
        every_frame.add(result.every_frame)
        once_decided.add(result.once_decided)
    looks = Counter(result.look for result in results)
    print(f"recognition from the true corners: {every_frame.summary()}")
    print(f"  scenes read by {', '.join(f'{look} {looks[look]}' for look in CELL_LOOKS)}; once decided: {once_decided.summary()}")

if __name__ == "__main__":
    main()
