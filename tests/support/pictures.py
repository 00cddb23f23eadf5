"""Frames without a well that look a little like one: a picture with a rectangle drawn on it."""

from __future__ import annotations

import cv2
import numpy as np

#: The rectangle's inner corners (TL TR BR BL, pixel centres) in ``picture_with_a_rectangle``.
RECTANGLE = np.array([[101.5, 51.5], [298.5, 51.5], [298.5, 428.5], [101.5, 428.5]])


def picture_with_a_rectangle(seed: int) -> np.ndarray:
    """A plain photo-like frame (640 x 480): smooth colour noise with solid discs, and an empty
    rectangle of about a well's shape (``RECTANGLE``) drawn over it."""
    rng = np.random.default_rng(seed)
    coarse = cv2.GaussianBlur(rng.integers(0, 256, (60, 80, 3)).astype(np.uint8), (0, 0), 1)
    image = cv2.resize(coarse, (640, 480), interpolation=cv2.INTER_CUBIC)
    for _ in range(15):
        centre = (int(rng.integers(0, 640)), int(rng.integers(0, 480)))
        cv2.circle(image, centre, int(rng.integers(10, 80)), rng.integers(0, 256, 3).tolist(), -1)
    cv2.rectangle(image, (100, 50), (300, 430), rng.integers(0, 256, 3).tolist(), 3)
    return image
