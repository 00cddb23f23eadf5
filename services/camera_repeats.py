"""A frozen camera, told apart from a live one: an image received again, pixel for pixel, is no new capture.

A live camera's sensor noise makes every capture differ somewhere, so a frame identical to the
one before is the same picture sent again (a stalled driver, a network camera repeating its last
JPEG, the simulator's freeze fault).  ``RepeatClock`` gives each frame the capture time of the
first frame that showed its picture, so ``obs.frame``'s ``t_capture`` stops advancing while the
camera is frozen, which is what the watchdog's stale-frame rule looks for.

Cost: one ``np.array_equal`` of two 640 x 480 frames, about 0.15 ms (timeit here).  Not handled: a camera that
freezes on a picture and adds fresh noise to it (no camera here does).
"""

from __future__ import annotations

import numpy as np


class RepeatClock:
    """The capture time of the first frame that showed each picture."""

    def __init__(self) -> None:
        self._last: np.ndarray | None = None
        self._since = 0.0
        self.repeats = 0  # frames that repeated the one before

    def capture_time(self, image: np.ndarray, timestamp: float) -> float:
        """``timestamp`` for a new picture; the first showing's time for a repeated one."""
        if self._last is not None and self._last.shape == image.shape and np.array_equal(self._last, image):
            self.repeats += 1
            return self._since
        self._last, self._since = image, timestamp
        return timestamp
