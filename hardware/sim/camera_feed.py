"""The simulator's camera: the target's screen, filmed, as one JPEG per frame, with camera faults.

Filming a screen from scratch (:func:`synthetic_camera.film`) costs 3-6 ms, too much for 60 fps
in half a core next to everything else, and the screen changes only when a piece moves.  So
the feed films the geometry and the camera's fixed light (perspective, blur, vignetting, moire,
white balance, flicker bands, Bayer, gamma: ``film`` with noise and JPEG switched off) only when
the screen image changes, and on every frame adds what a real camera changes frame to frame: a
slow exposure drift (one scaled copy) and fresh sensor noise cut at a random offset from a fixed
noise field (a saturating add and subtract), then encodes the JPEG once for every client.
Noise is added after gamma rather than before it, a small departure from ``film``.

Also: a latency of a few frames (the camera shows the screen as it was ``latency_frames`` frames
ago), randomly dropped frames (no JPEG that frame), and the faults freeze (the same JPEG bytes
again and again) and black frames (a dark, noisy frame).  Times are passed in, so the feed reads
no clock.  Measured costs are in :mod:`.target`'s docstring.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace

import cv2
import numpy as np

from .synthetic_camera import FRAME_SIZE, CameraSettings, film

_NOISE_PAD = 32
_DARK_ROOM = 18  # the level a black screen shows through the camera: the room is not pitch dark
_DEFAULT_QUALITY = 80


@dataclass(frozen=True)
class Shot:
    """One camera frame: its JPEG (None when the camera dropped it) and the game frame it shows
    (None for a black frame)."""

    jpeg: bytes | None
    shows: int | None


class CameraFeed:
    """Films the screens given to :meth:`capture`, one per game frame; see the module docstring."""

    def __init__(
        self,
        settings: CameraSettings,
        seed: int = 0,
        latency_frames: int = 3,
        drop_probability: float = 0.0,
        exposure_drift: float = 0.06,
        drift_period_s: float = 17.0,
    ) -> None:
        if latency_frames < 0:
            raise ValueError(f"latency_frames must be >= 0, got {latency_frames}")
        if not 0.0 <= drop_probability < 1.0:
            raise ValueError(f"camera drop probability must be in 0..1 (not 1), got {drop_probability}")
        if not 0.0 <= exposure_drift < 1.0 or drift_period_s <= 0:
            raise ValueError(f"exposure drift must be in 0..1 with a positive period, got {exposure_drift}, {drift_period_s} s")
        self.settings = settings
        self._geometry = replace(settings, noise_sigma=0.0, jpeg_quality=None)
        self._quality = settings.jpeg_quality if settings.jpeg_quality is not None else _DEFAULT_QUALITY
        self._rng = np.random.default_rng(seed)
        self._delay: deque[tuple[int, np.ndarray]] = deque(maxlen=latency_frames + 1)
        self._drop_probability = drop_probability
        self._drift = exposure_drift
        self._drift_period = drift_period_s
        self._noise_up, self._noise_down = self._noise_bank(settings.noise_sigma)
        self._source: np.ndarray | None = None  # the screen image last filmed
        self._filmed: np.ndarray | None = None
        self._dark = np.full((FRAME_SIZE[1], FRAME_SIZE[0], 3), _DARK_ROOM, dtype=np.uint8)
        self._last = Shot(None, None)
        self._frozen_until = float("-inf")
        self._black_until = float("-inf")
        self.films = 0  # geometry passes: how often the screen changed under the camera

    def freeze(self, until: float) -> None:
        """Repeat the last frame, byte for byte, until time ``until``."""
        self._frozen_until = until

    def black(self, until: float) -> None:
        """Show a black (dark, noisy) frame until time ``until``."""
        self._black_until = until

    def look(self, frame: int, screen: np.ndarray) -> None:
        """The screen of a frame the camera sees but sends nothing for (the sender ran late), so
        the latency stays the same number of frames."""
        self._delay.append((frame, screen))

    def capture(self, frame: int, screen: np.ndarray, t: float) -> Shot:
        """The camera's frame at game frame ``frame`` (time ``t``), given that frame's screen.

        Pass the same array object while the screen is unchanged: a new object is filmed anew.
        """
        self.look(frame, screen)
        shows, image = self._delay[0]
        if t < self._frozen_until and self._last.jpeg is not None:
            return self._last
        if self._drop_probability and self._rng.random() < self._drop_probability:
            return Shot(None, None)
        if t < self._black_until:
            shows, base = None, self._dark
        else:
            base = self._film(image)
        shot = Shot(self._encode(self._expose(base, t)), shows)
        self._last = shot
        return shot

    def _film(self, image: np.ndarray) -> np.ndarray:
        if image is not self._source:
            self._filmed, _ = film(image, self._rng, self._geometry)
            self._source = image
            self.films += 1
        assert self._filmed is not None
        return self._filmed

    def _expose(self, base: np.ndarray, t: float) -> np.ndarray:
        """Exposure drift (two slow incommensurate waves) and fresh sensor noise."""
        phase = 2 * math.pi * t / self._drift_period
        gain = 1.0 + self._drift * (0.7 * math.sin(phase) + 0.3 * math.sin(2.618 * phase + 1.0))
        frame = cv2.convertScaleAbs(base, alpha=gain)
        if self._noise_up is not None and self._noise_down is not None:
            fw, fh = FRAME_SIZE
            oy, ox = (int(v) for v in self._rng.integers(0, _NOISE_PAD, size=2))
            cv2.add(frame, self._noise_up[oy : oy + fh, ox : ox + fw], dst=frame)
            cv2.subtract(frame, self._noise_down[oy : oy + fh, ox : ox + fw], dst=frame)
        return frame

    def _encode(self, frame: np.ndarray) -> bytes:
        ok, data = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, self._quality])
        if not ok:
            raise RuntimeError("JPEG encoding of a camera frame failed")
        return data.tobytes()

    @staticmethod
    def _noise_bank(sigma: float) -> tuple[np.ndarray | None, np.ndarray | None]:
        """A fixed normal noise field split into its positive and negative parts (uint8, so each
        frame's noise is two saturating passes), larger than a frame to cut at random offsets."""
        if sigma <= 0:
            return None, None
        fw, fh = FRAME_SIZE
        noise = np.random.default_rng(20030102).standard_normal((fh + _NOISE_PAD, fw + _NOISE_PAD, 3)) * sigma
        up = np.clip(np.rint(noise), 0, 255).astype(np.uint8)
        down = np.clip(np.rint(-noise), 0, 255).astype(np.uint8)
        return up, down
