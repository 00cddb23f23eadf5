"""A simulated webcam filming a screen: what a rendered Tetris screen looks like through a camera.

``film(image, rng, settings)`` applies, in the order light meets them: perspective (the camera
looks at the screen from a slight angle), moire (screen pixels beating with the sensor grid),
defocus and motion blur, vignetting, exposure and white balance, row-banded flicker (mains-lit
room or a refresh beat under a rolling shutter), sensor noise, a Bayer mosaic and its
demosaicing, gamma, and MJPEG-like JPEG compression.  Every effect has a neutral value that
switches it off; ``CameraSettings()`` is the perfect camera.  ``CameraSettings.random`` draws a
plausible webcam from ``SettingsRanges``.

Frames are uint8 480 x 640 x 3 BGR.  ``film`` also returns the homography that maps image
pixels to frame pixels (OpenCV's pixel-centre convention), so ground-truth corners can be
mapped with ``map_points``.

Speed: what is fixed for a camera (its homography, and vignetting x moire x exposure x white
balance x flicker as one gain field) is computed once per camera, and the noise is cut from a
fixed field, so a frame costs one warp, the blurs, one multiply and one saturating add, the
Bayer round trip, a LUT and the JPEG round trip.  Measured (thread CPU time, 640 x 480, 11
skins x 80 frames per random camera, busy 2-core machine): 6.5-7.9 ms per frame before this
caching, 5.9-6.8 ms after; warp ~1.3 ms and JPEG ~1.7 ms dominate and are kept as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache

import cv2
import numpy as np

FRAME_SIZE: tuple[int, int] = (640, 480)  # width, height
_OUTSIDE_SCREEN = (18, 18, 18)  # the dark room around the monitor, where the warp leaves no image
_NOISE_PAD = 64  # noise is cut from a larger fixed field at a random offset: fresh per frame, cheap


@dataclass(frozen=True)
class CameraSettings:
    """One camera's degradations; the defaults switch every effect off."""

    #: Offsets (dx, dy) of the four frame corners TL TR BR BL in pixels: the perspective part.
    corner_offsets: tuple[float, float, float, float, float, float, float, float] = (0.0,) * 8
    rotation_deg: float = 0.0
    scale: float = 1.0
    shift_px: tuple[float, float] = (0.0, 0.0)
    blur_sigma: float = 0.0
    motion_length_px: float = 0.0
    motion_angle_deg: float = 0.0
    noise_sigma: float = 0.0
    gamma: float = 1.0
    white_balance: tuple[float, float, float] = (1.0, 1.0, 1.0)  # B, G, R gains
    exposure: float = 1.0
    #: Brightness lost in the frame corners (0 none).
    vignetting: float = 0.0
    moire_amplitude: float = 0.0
    moire_period_px: float = 4.0
    moire_angle_deg: float = 0.0
    moire_phase: float = 0.0
    bayer: bool = False
    jpeg_quality: int | None = None
    flicker_amplitude: float = 0.0
    flicker_period_rows: float = 120.0
    flicker_phase: float = 0.0

    @classmethod
    def random(cls, rng: np.random.Generator, ranges: SettingsRanges | None = None) -> CameraSettings:
        """A plausible webcam drawn uniformly from ``ranges`` (``SettingsRanges()`` by default)."""
        r = ranges if ranges is not None else SettingsRanges()

        def u(bounds: tuple[float, float]) -> float:
            return float(rng.uniform(*bounds))

        return cls(
            corner_offsets=tuple(float(v) for v in rng.uniform(-r.corner_jitter_px, r.corner_jitter_px, 8)),  # type: ignore[arg-type]
            rotation_deg=u(r.rotation_deg),
            scale=u(r.scale),
            shift_px=(u(r.shift_px), u(r.shift_px)),
            blur_sigma=u(r.blur_sigma),
            motion_length_px=u(r.motion_length_px),
            motion_angle_deg=u((0.0, 180.0)),
            noise_sigma=u(r.noise_sigma),
            gamma=u(r.gamma),
            white_balance=(u(r.white_balance), u(r.white_balance), u(r.white_balance)),
            exposure=u(r.exposure),
            vignetting=u(r.vignetting),
            moire_amplitude=u(r.moire_amplitude),
            moire_period_px=u(r.moire_period_px),
            moire_angle_deg=u((0.0, 180.0)),
            moire_phase=u((0.0, 2 * np.pi)),
            bayer=bool(rng.random() < r.bayer_probability),
            jpeg_quality=int(rng.integers(r.jpeg_quality[0], r.jpeg_quality[1] + 1)),
            flicker_amplitude=u(r.flicker_amplitude),
            flicker_period_rows=u(r.flicker_period_rows),
            flicker_phase=u((0.0, 2 * np.pi)),
        )


@dataclass(frozen=True)
class SettingsRanges:
    """Bounds (low, high) that ``CameraSettings.random`` draws from uniformly."""

    corner_jitter_px: float = 12.0
    rotation_deg: tuple[float, float] = (-3.0, 3.0)
    scale: tuple[float, float] = (0.85, 1.0)
    shift_px: tuple[float, float] = (-15.0, 15.0)
    blur_sigma: tuple[float, float] = (0.0, 1.5)
    motion_length_px: tuple[float, float] = (0.0, 3.0)
    noise_sigma: tuple[float, float] = (1.0, 6.0)
    gamma: tuple[float, float] = (0.7, 1.4)
    white_balance: tuple[float, float] = (0.85, 1.15)
    exposure: tuple[float, float] = (0.7, 1.3)
    vignetting: tuple[float, float] = (0.0, 0.35)
    moire_amplitude: tuple[float, float] = (0.0, 0.12)
    moire_period_px: tuple[float, float] = (2.5, 8.0)
    bayer_probability: float = 0.7
    jpeg_quality: tuple[int, int] = (50, 90)
    flicker_amplitude: tuple[float, float] = (0.0, 0.08)
    flicker_period_rows: tuple[float, float] = (40.0, 200.0)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, tuple) and value[0] > value[1]:
                raise ValueError(f"range {f.name} has low {value[0]} above high {value[1]}")


def homography(settings: CameraSettings, image_size: tuple[int, int]) -> np.ndarray:
    """The 3 x 3 map from image pixels to frame pixels: fit to the frame, rotate and scale about
    the centre, shift, then move the frame corners by ``corner_offsets``."""
    (w, h), (fw, fh) = image_size, FRAME_SIZE
    sx, sy = fw / w, fh / h
    # pixel centres: x' + 0.5 = (x + 0.5) * sx
    fit = np.array([[sx, 0, 0.5 * sx - 0.5], [0, sy, 0.5 * sy - 0.5], [0, 0, 1]], dtype=np.float64)
    cx, cy = (fw - 1) / 2, (fh - 1) / 2
    a = np.deg2rad(settings.rotation_deg)
    c, s = settings.scale * np.cos(a), settings.scale * np.sin(a)
    dx, dy = settings.shift_px
    similarity = np.array([[c, -s, cx - c * cx + s * cy + dx], [s, c, cy - s * cx - c * cy + dy], [0, 0, 1]])
    frame = np.array([[-0.5, -0.5], [fw - 0.5, -0.5], [fw - 0.5, fh - 0.5], [-0.5, fh - 0.5]], dtype=np.float32)
    moved = frame + np.array(settings.corner_offsets, dtype=np.float32).reshape(4, 2)
    perspective = cv2.getPerspectiveTransform(frame, moved).astype(np.float64)
    return perspective @ similarity @ fit


@lru_cache(maxsize=8)
def _camera_map(settings: CameraSettings, image_size: tuple[int, int]) -> tuple[np.ndarray, bool]:
    """The homography of a fixed camera, and whether it moves any pixel (computed once)."""
    h = homography(settings, image_size)
    h.setflags(write=False)
    return h, not np.allclose(h, np.eye(3), atol=1e-9)


def map_points(h: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Points (N x 2) mapped through homography ``h``."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 1, 2)
    return cv2.perspectiveTransform(pts, h).reshape(-1, 2)


@lru_cache(maxsize=8)
def _light_gain(st: CameraSettings) -> np.ndarray:
    """Every gain that is fixed for a camera, multiplied into one H x W x 3 float32 field:
    vignetting, moire, exposure and white balance, and the rolling-shutter flicker bands."""
    fw, fh = FRAME_SIZE
    y, x = np.mgrid[0:fh, 0:fw].astype(np.float32)
    r2 = ((x - (fw - 1) / 2) ** 2 + (y - (fh - 1) / 2) ** 2) / ((fw / 2) ** 2 + (fh / 2) ** 2)
    gain = 1.0 - st.vignetting * r2
    if st.moire_amplitude:
        a = np.deg2rad(st.moire_angle_deg)
        phase = 2 * np.pi * (x * np.cos(a) + y * np.sin(a)) / st.moire_period_px + st.moire_phase
        gain *= 1.0 + st.moire_amplitude * np.cos(phase)
    if st.flicker_amplitude:
        gain *= 1.0 + st.flicker_amplitude * np.sin(2 * np.pi * y / st.flicker_period_rows + st.flicker_phase)
    channel = st.exposure * np.array(st.white_balance, dtype=np.float32)
    field = (gain[..., None] * channel).astype(np.float32)
    field.setflags(write=False)
    return field


@lru_cache(maxsize=4)
def _noise_field(sigma: float) -> np.ndarray:
    """A fixed field of normal noise of ``sigma``, larger than a frame; frames cut it at random offsets."""
    fw, fh = FRAME_SIZE
    rng = np.random.default_rng(20030101)
    field = rng.standard_normal((fh + _NOISE_PAD, fw + _NOISE_PAD, 3), dtype=np.float32) * np.float32(sigma)
    field.setflags(write=False)
    return field


def _motion_kernel(length: float, angle_deg: float) -> np.ndarray:
    size = int(np.ceil(length)) | 1
    kernel = np.zeros((size, size), dtype=np.float32)
    c = (size - 1) / 2
    a = np.deg2rad(angle_deg)
    end = (length - 1) / 2
    p0 = (int(round(c - end * np.cos(a))), int(round(c - end * np.sin(a))))
    p1 = (int(round(c + end * np.cos(a))), int(round(c + end * np.sin(a))))
    cv2.line(kernel, p0, p1, 1.0, 1)
    return kernel / kernel.sum()


def _photometric(frame: np.ndarray, rng: np.random.Generator, st: CameraSettings) -> np.ndarray:
    """Light and sensor effects: the camera's fixed gains in one multiply, then sensor noise,
    rounded and saturated to uint8 by OpenCV (two passes over the frame)."""
    fh, fw = frame.shape[:2]
    light = cv2.multiply(frame, _light_gain(st), dtype=cv2.CV_32F)
    if not st.noise_sigma:
        return cv2.add(light, 0.0, dtype=cv2.CV_8U)
    oy, ox = (int(v) for v in rng.integers(0, _NOISE_PAD, size=2))
    return cv2.add(light, _noise_field(st.noise_sigma)[oy : oy + fh, ox : ox + fw], dtype=cv2.CV_8U)


def _bayer(frame: np.ndarray) -> np.ndarray:
    """Keep one colour per pixel in a Bayer mosaic, as a sensor does, then demosaic."""
    mosaic = np.empty(frame.shape[:2], dtype=np.uint8)
    # OpenCV names a pattern by the second row's 2nd and 3rd pixels: BayerBG has red at (0, 0)
    mosaic[0::2, 0::2] = frame[0::2, 0::2, 2]
    mosaic[0::2, 1::2] = frame[0::2, 1::2, 1]
    mosaic[1::2, 0::2] = frame[1::2, 0::2, 1]
    mosaic[1::2, 1::2] = frame[1::2, 1::2, 0]
    return cv2.cvtColor(mosaic, cv2.COLOR_BayerBG2BGR)


@lru_cache(maxsize=32)
def _gamma_table(gamma: float) -> np.ndarray:
    return np.clip(255.0 * (np.arange(256) / 255.0) ** (1.0 / gamma) + 0.5, 0, 255).astype(np.uint8)


def film(image: np.ndarray, rng: np.random.Generator, settings: CameraSettings) -> tuple[np.ndarray, np.ndarray]:
    """Film ``image`` (uint8 H x W x 3 BGR) with the camera ``settings``.

    Returns the 480 x 640 x 3 BGR frame and the homography from image pixels to frame pixels.
    ``rng`` draws the per-frame sensor noise.
    """
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"film needs a uint8 H x W x 3 image, got {image.dtype} {image.shape}")
    st = settings
    h, moved = _camera_map(st, (image.shape[1], image.shape[0]))
    frame = image
    if moved:
        frame = cv2.warpPerspective(image, h, FRAME_SIZE, flags=cv2.INTER_LINEAR, borderValue=_OUTSIDE_SCREEN)
    if st.blur_sigma > 0:
        frame = cv2.GaussianBlur(frame, (0, 0), st.blur_sigma)
    if st.motion_length_px > 1:
        frame = cv2.filter2D(frame, -1, _motion_kernel(st.motion_length_px, st.motion_angle_deg))
    lit = (
        st.vignetting or st.moire_amplitude or st.flicker_amplitude or st.noise_sigma
        or st.exposure != 1.0 or st.white_balance != (1.0, 1.0, 1.0)
    )
    if lit:
        frame = _photometric(frame, rng, st)
    if st.bayer:
        frame = _bayer(frame)
    if st.gamma != 1.0:
        frame = cv2.LUT(frame, _gamma_table(st.gamma))
    if st.jpeg_quality is not None:
        ok, data = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, int(st.jpeg_quality)])
        if not ok:
            raise RuntimeError("JPEG encoding failed")
        frame = cv2.imdecode(data, cv2.IMREAD_COLOR)
    return np.ascontiguousarray(frame), h.copy()


def contact_sheet(frames: list[np.ndarray], labels: list[str], columns: int = 4) -> np.ndarray:
    """Frames tiled in a grid, each labelled, for an operator to look at a set of scenes."""
    if not frames or len(frames) != len(labels):
        raise ValueError(f"need one label per frame and at least one frame, got {len(frames)} frames, {len(labels)} labels")
    th, tw = frames[0].shape[:2]
    rows = -(-len(frames) // columns)
    sheet = np.zeros((rows * th, columns * tw, 3), dtype=np.uint8)
    for k, (frame, label) in enumerate(zip(frames, labels)):
        tile = cv2.resize(frame, (tw, th)) if frame.shape[:2] != (th, tw) else frame.copy()
        cv2.putText(tile, label, (6, 22), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (0, 0, 255), 2, cv2.LINE_AA)
        r, c = divmod(k, columns)
        sheet[r * th : (r + 1) * th, c * tw : (c + 1) * tw] = tile
    return sheet
