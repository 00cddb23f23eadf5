"""A region of an X11 screen as a frame source, read with XGetImage through ctypes (libX11, no extra package).

Xlib's default error handlers end the process (a region off the screen, a display that goes away);
this module installs handlers that record the error instead, so a capture failure becomes SourceLost
and the reader thread reopens the display with backoff. One display connection per capture, used only
by the reader thread that opened it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from dataclasses import dataclass

import numpy as np

from gamerig.hardware.frames.source import Pacer, SourceLost

Z_PIXMAP = 2
LSB_FIRST, MSB_FIRST = 0, 1  # XImage byte_order
DEFAULT_FPS = 30.0
ALL_PLANES = ctypes.c_ulong(-1).value


class _XImage(ctypes.Structure):
    # Only the leading fields of Xlib's XImage are read; the struct is always allocated by Xlib.
    _fields_ = [
        ("width", ctypes.c_int),
        ("height", ctypes.c_int),
        ("xoffset", ctypes.c_int),
        ("format", ctypes.c_int),
        ("data", ctypes.POINTER(ctypes.c_uint8)),
        ("byte_order", ctypes.c_int),
        ("bitmap_unit", ctypes.c_int),
        ("bitmap_bit_order", ctypes.c_int),
        ("bitmap_pad", ctypes.c_int),
        ("depth", ctypes.c_int),
        ("bytes_per_line", ctypes.c_int),
        ("bits_per_pixel", ctypes.c_int),
    ]


class _XErrorEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("resourceid", ctypes.c_ulong),
        ("serial", ctypes.c_ulong),
        ("error_code", ctypes.c_ubyte),
        ("request_code", ctypes.c_ubyte),
        ("minor_code", ctypes.c_ubyte),
    ]


_ErrorHandler = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_XErrorEvent))
_IOErrorHandler = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_IOExitHandler = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


class _Xlib:
    """The few libX11 calls this source needs, with non-fatal error handlers installed once."""

    def __init__(self) -> None:
        name = ctypes.util.find_library("X11")
        if name is None:
            raise SourceLost("libX11 not found (install libx11-6)")
        lib = ctypes.CDLL(name)
        lib.XOpenDisplay.restype = ctypes.c_void_p
        lib.XOpenDisplay.argtypes = [ctypes.c_char_p]
        lib.XCloseDisplay.argtypes = [ctypes.c_void_p]
        lib.XDefaultScreen.argtypes = [ctypes.c_void_p]
        lib.XDefaultRootWindow.restype = ctypes.c_ulong
        lib.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
        lib.XDisplayWidth.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.XDisplayHeight.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.XGetImage.restype = ctypes.POINTER(_XImage)
        lib.XGetImage.argtypes = [
            ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_int,
            ctypes.c_uint, ctypes.c_uint, ctypes.c_ulong, ctypes.c_int,
        ]  # fmt: skip
        lib.XDestroyImage.argtypes = [ctypes.POINTER(_XImage)]
        self.lib = lib
        self.last_error: int | None = None
        self.io_failed = False
        # Kept referenced: Xlib holds raw pointers to these callbacks.
        self._on_error = _ErrorHandler(self._record_error)
        self._on_io_error = _IOErrorHandler(self._record_io_error)
        self._on_io_exit = _IOExitHandler(lambda display, data: None)
        lib.XSetErrorHandler(self._on_error)
        lib.XSetIOErrorHandler(self._on_io_error)
        self._has_exit_handler = hasattr(lib, "XSetIOErrorExitHandler")  # libX11 >= 1.7

    def keep_alive_on_io_error(self, display: int) -> None:
        """Stop Xlib from exiting the process when this display's connection breaks (libX11 >= 1.7)."""
        if self._has_exit_handler:
            self.lib.XSetIOErrorExitHandler(ctypes.c_void_p(display), self._on_io_exit, None)

    def _record_error(self, display: int, event: ctypes._Pointer) -> int:
        self.last_error = event.contents.error_code
        return 0

    def _record_io_error(self, display: int) -> int:
        self.io_failed = True
        return 0


_xlib: _Xlib | None = None
_xlib_lock = threading.Lock()


def _load_xlib() -> _Xlib:
    global _xlib
    with _xlib_lock:
        if _xlib is None:
            _xlib = _Xlib()
        return _xlib


@dataclass(frozen=True, slots=True)
class X11Screen:
    """A region (x, y, width, height) of an X11 screen, or the whole screen when region is None.

    display: an X display name such as ":0" or "host:1.0"; None uses $DISPLAY.
    fps: capture rate; the screen has no frame clock of its own to wait on.
    """

    display: str | None = None
    region: tuple[int, int, int, int] | None = None
    fps: float = DEFAULT_FPS

    def open(self) -> X11Capture:
        """Connect to the display and check the region fits the screen; SourceLost otherwise."""
        xlib = _load_xlib()
        name = self.display or "$DISPLAY"
        display = xlib.lib.XOpenDisplay(self.display.encode() if self.display else None)
        if not display:
            raise SourceLost(f"X display {name} could not be opened")
        xlib.io_failed = False
        xlib.keep_alive_on_io_error(display)
        screen = xlib.lib.XDefaultScreen(display)
        size = xlib.lib.XDisplayWidth(display, screen), xlib.lib.XDisplayHeight(display, screen)
        x, y, width, height = self.region or (0, 0, *size)
        if x + width > size[0] or y + height > size[1]:
            xlib.lib.XCloseDisplay(display)
            raise SourceLost(f"region {x},{y},{width},{height} does not fit the {size[0]}x{size[1]} screen of {name}")
        return X11Capture(xlib, display, (x, y, width, height), Pacer(1.0 / self.fps), name)


class X11Capture:
    """An open display connection grabbing one region per read."""

    def __init__(
        self, xlib: _Xlib, display: int, region: tuple[int, int, int, int], pacer: Pacer, name: str
    ) -> None:
        self._xlib = xlib
        self._display: int | None = display
        self._root = xlib.lib.XDefaultRootWindow(display)
        self._region = region
        self._pacer = pacer
        self._name = name

    def read(self) -> tuple[np.ndarray, float]:
        """Grab the region as BGR; SourceLost when the server refuses or the connection broke."""
        if self._display is None or self._xlib.io_failed:
            raise SourceLost(f"X display {self._name}: connection lost")
        self._pacer.wait()
        x, y, width, height = self._region
        self._xlib.last_error = None
        # The server copies the pixels when it handles the request, so the time before the call is closest.
        timestamp = time.monotonic()
        pointer = self._xlib.lib.XGetImage(self._display, self._root, x, y, width, height, ALL_PLANES, Z_PIXMAP)
        if not pointer:
            raise SourceLost(f"X display {self._name}: XGetImage failed (X error {self._xlib.last_error})")
        try:
            return _bgr_from_ximage(pointer.contents, self._name), timestamp
        finally:
            self._xlib.lib.XDestroyImage(pointer)

    def close(self) -> None:
        """Close the display connection."""
        if self._display is not None and not self._xlib.io_failed:
            self._xlib.lib.XCloseDisplay(self._display)
        self._display = None


def _bgr_from_ximage(image: _XImage, name: str) -> np.ndarray:
    """Copy a 32-bit-per-pixel ZPixmap into BGR; in memory a pixel is B, G, R, pad (LSBFirst) or pad, R, G, B."""
    if image.bits_per_pixel != 32:
        raise SourceLost(f"X display {name}: {image.bits_per_pixel}-bit pixels are not supported (need 24-bit colour)")
    raw = np.ctypeslib.as_array(image.data, shape=(image.height * image.bytes_per_line,))
    rows = raw.reshape(image.height, image.bytes_per_line)[:, : image.width * 4]
    pixels = rows.reshape(image.height, image.width, 4)
    return (pixels[:, :, 3:0:-1] if image.byte_order == MSB_FIRST else pixels[:, :, :3]).copy()
