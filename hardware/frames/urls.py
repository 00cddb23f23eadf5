"""The URL-like source strings of the YAML config, parsed into devices with errors that name the problem.

    v4l2:///dev/video0?width=640&height=480&fps=30[&fourcc=MJPG]
    file:///abs/path.mp4[?pace=native|fast][&loop=1]
    http://host:port/path, https://..., rtsp://..., rtsps://...   (passed to FFmpeg verbatim)
    x11://:0[/x,y,w,h][?fps=30]    (x11:///... uses $DISPLAY)
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Callable
from typing import TypeVar

from gamerig.hardware.frames.opencv_sources import NetworkStream, Pace, V4L2Camera, VideoFile
from gamerig.hardware.frames.source import Backoff, Device, FrameSource
from gamerig.hardware.frames.x11_source import DEFAULT_FPS, X11Screen

T = TypeVar("T")

NETWORK_SCHEMES = ("http", "https", "rtsp", "rtsps")
SCHEMES = ("v4l2", "file", "x11", *NETWORK_SCHEMES)


class SourceUrlError(ValueError):
    """A frame source string that cannot be used; the message names the string and the problem."""

    def __init__(self, url: str, problem: str) -> None:
        super().__init__(f"frame source {url!r}: {problem}")
        self.url = url
        self.problem = problem


def open_source(url: str, *, backoff: Backoff = Backoff()) -> FrameSource:
    """Parse `url` and start reading from it; raises SourceUrlError for a bad string."""
    return FrameSource(device_from_url(url), backoff=backoff, name=url)


def device_from_url(url: str) -> Device:
    """The device a source string describes (not opened yet); raises SourceUrlError for a bad string."""
    parts = urllib.parse.urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme in NETWORK_SCHEMES:
        if not parts.hostname:
            raise SourceUrlError(url, f"{scheme} URL has no host")
        return NetworkStream(url.strip())
    options = _Options(url, scheme, parts.query)
    if scheme == "v4l2":
        device = V4L2Camera(
            _local_path(url, parts),
            width=options.take("width", _positive_int),
            height=options.take("height", _positive_int),
            fps=options.take("fps", _positive_float),
            fourcc=options.take("fourcc", _fourcc) or "MJPG",
        )
    elif scheme == "file":
        device = VideoFile(
            _local_path(url, parts),
            pace=options.take("pace", _pace) or Pace.NATIVE,
            loop=options.take("loop", _flag) or False,
        )
    elif scheme == "x11":
        device = X11Screen(
            display=parts.netloc or None,
            region=_region(url, parts.path),
            fps=options.take("fps", _positive_float) or DEFAULT_FPS,
        )
    elif not scheme:
        raise SourceUrlError(url, f"no scheme; expected one of {', '.join(s + '://' for s in SCHEMES)}")
    else:
        raise SourceUrlError(url, f"unknown scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    options.reject_leftovers()
    return device


class _Options:
    """The query options of one source string, each taken at most once; leftovers are errors."""

    def __init__(self, url: str, scheme: str, query: str) -> None:
        self._url = url
        self._scheme = scheme
        self._known: list[str] = []
        self._values: dict[str, str] = {}
        for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
            if name in self._values:
                raise SourceUrlError(url, f"option {name!r} given twice")
            self._values[name] = value

    def take(self, name: str, convert: Callable[[str], T]) -> T | None:
        """The converted value of option `name`, or None when absent."""
        self._known.append(name)
        if name not in self._values:
            return None
        text = self._values.pop(name)
        try:
            return convert(text)
        except ValueError as error:
            raise SourceUrlError(self._url, f"option {name}={text!r}: {error}") from None

    def reject_leftovers(self) -> None:
        """Raise for any option this scheme does not know."""
        if self._values:
            unknown = ", ".join(sorted(self._values))
            known = ", ".join(self._known) or "none"
            raise SourceUrlError(self._url, f"unknown option {unknown} for {self._scheme} (known: {known})")


def _local_path(url: str, parts: urllib.parse.SplitResult) -> str:
    if parts.netloc:
        raise SourceUrlError(
            url, f"the path must be absolute, after three slashes: {parts.scheme}:///{parts.netloc}{parts.path}"
        )
    if not parts.path or parts.path == "/":
        raise SourceUrlError(url, "missing path")
    return urllib.parse.unquote(parts.path)


def _region(url: str, path: str) -> tuple[int, int, int, int] | None:
    text = path.strip("/")
    if not text:
        return None
    fields = text.split(",")
    if len(fields) != 4:
        raise SourceUrlError(url, f"bad region {text!r}: expected x,y,width,height")
    try:
        x, y, width, height = (int(field) for field in fields)
    except ValueError:
        raise SourceUrlError(url, f"bad region {text!r}: x,y,width,height must be integers") from None
    if x < 0 or y < 0 or width <= 0 or height <= 0:
        raise SourceUrlError(url, f"bad region {text!r}: x and y must be >= 0, width and height > 0")
    return x, y, width, height


def _positive_int(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) == 0:
        raise ValueError("must be a positive integer")
    return int(text)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError("must be a positive number")
    return value


def _fourcc(text: str) -> str:
    if len(text) != 4 or not text.isascii():
        raise ValueError("must be four ASCII characters, such as MJPG or YUYV")
    return text


def _pace(text: str) -> Pace:
    try:
        return Pace(text)
    except ValueError:
        raise ValueError(f"must be one of {', '.join(p.value for p in Pace)}") from None


def _flag(text: str) -> bool:
    if text not in ("0", "1"):
        raise ValueError("must be 0 or 1")
    return text == "1"
