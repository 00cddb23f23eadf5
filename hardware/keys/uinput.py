"""A Linux uinput virtual keyboard as key outputs, so the rig can play a game on this same computer.

The device is made with the kernel's uinput ioctls from plain Python: UI_SET_EVBIT EV_KEY, one
UI_SET_KEYBIT per wired key, UI_DEV_SETUP (kernels before 4.5 reject it, and then the legacy
`struct uinput_user_dev` is written instead), UI_DEV_CREATE; every change of an output is one write of
an EV_KEY input_event (1 down, 0 up) and an EV_SYN SYN_REPORT; close() releases every key and then
UI_DEV_DESTROY. The ioctl numbers use the asm-generic encoding (x86, arm, riscv; not powerpc, mips or
sparc).

What is tested, and what is not: there is no /dev/uinput on the machine this was written on, so the
module has NOT been run against a kernel. tests/unit/test_uinput_keys.py checks the exact bytes
written and the exact ioctl sequence (the ioctl calls go through the `ioctl` seam, which the test
records, while the bytes go to a real file), checks every constant, struct layout and key code here
against the kernel headers by compiling a small C program, and interrupts set() with a storm of real
signals whose handler calls release_all. Two kernel behaviours this relies on are documented, not
observed here: the input core drops a key-up for a key that is not down (so release_all can release
every wired key), and destroying the device (or the process dying, which closes the fd) releases any
key it still holds. Listeners (X, libinput) find a new device a moment after UI_DEV_CREATE; keys
pressed in that moment can go unseen, which is harmless for a rig whose first press comes long after
start-up.
"""

from __future__ import annotations

import errno
import fcntl
import grp
import logging
import os
import struct
import threading
from collections.abc import Callable, Mapping

from gamerig.hardware.keys.outputs import KeyOutputError, wired_codes

log = logging.getLogger(__name__)

EV_SYN, EV_KEY, SYN_REPORT = 0x00, 0x01, 0x00
KEY_MAX = 0x2FF
BUS_VIRTUAL = 0x06
DEVICE_NAME = b"gamerig virtual keyboard"
VENDOR, PRODUCT, VERSION = 0x0000, 0x0000, 1

# struct input_event: a timeval of two longs (the kernel stamps events itself; zeros are fine), then
# __u16 type, __u16 code, __s32 value. Native sizes, because the kernel reads the host's layout.
INPUT_EVENT = struct.Struct("@llHHi")
# struct uinput_setup: struct input_id {bustype, vendor, product, version}, name[80], ff_effects_max.
UINPUT_SETUP = struct.Struct("@HHHH80sI")
# struct uinput_user_dev (before kernel 4.5): name[80], input_id, ff_effects_max, 4 x __s32[ABS_CNT=64].
ABS_CNT = 64
UINPUT_USER_DEV = struct.Struct(f"@80sHHHHI{4 * ABS_CNT}i")


def _io(nr: int) -> int:
    return (ord("U") << 8) | nr


def _iow(nr: int, size: int) -> int:
    return (1 << 30) | (size << 16) | (ord("U") << 8) | nr


UI_DEV_CREATE = _io(1)
UI_DEV_DESTROY = _io(2)
UI_DEV_SETUP = _iow(3, UINPUT_SETUP.size)
UI_SET_EVBIT = _iow(100, struct.calcsize("i"))
UI_SET_KEYBIT = _iow(101, struct.calcsize("i"))


def _keycode_names() -> dict[str, int]:
    """Kernel names of the keys a game is likely to use (linux/input-event-codes.h)."""
    names = {
        "KEY_ESC": 1, "KEY_MINUS": 12, "KEY_EQUAL": 13, "KEY_BACKSPACE": 14, "KEY_TAB": 15,
        "KEY_ENTER": 28, "KEY_LEFTCTRL": 29, "KEY_LEFTSHIFT": 42, "KEY_COMMA": 51, "KEY_DOT": 52,
        "KEY_SLASH": 53, "KEY_RIGHTSHIFT": 54, "KEY_LEFTALT": 56, "KEY_SPACE": 57, "KEY_F11": 87,
        "KEY_F12": 88, "KEY_KPENTER": 96, "KEY_RIGHTCTRL": 97, "KEY_RIGHTALT": 100, "KEY_HOME": 102,
        "KEY_UP": 103, "KEY_PAGEUP": 104, "KEY_LEFT": 105, "KEY_RIGHT": 106, "KEY_END": 107,
        "KEY_DOWN": 108, "KEY_PAGEDOWN": 109, "KEY_INSERT": 110, "KEY_DELETE": 111, "KEY_PAUSE": 119,
    }
    # Letters and digits follow the rows of a PC keyboard; F1-F10 are consecutive.
    for first, row in ((2, "1234567890"), (16, "QWERTYUIOP"), (30, "ASDFGHJKL"), (44, "ZXCVBNM")):
        names.update({f"KEY_{char}": first + i for i, char in enumerate(row)})
    names.update({f"KEY_F{n}": 58 + n for n in range(1, 11)})
    return names


KEYCODE_NAMES = _keycode_names()
DEFAULT_KEYCODES: dict[str, int | str] = {
    "left": "KEY_LEFT",
    "right": "KEY_RIGHT",
    "rotate": "KEY_UP",
    "drop": "KEY_SPACE",
    "new_game": "KEY_ENTER",
    "pause": "KEY_P",
}

Ioctl = Callable[[int, int, int | bytes], object]


def keycode(value: int | str) -> int:
    """A Linux key code from its number (1..0x2ff) or its kernel name ("KEY_LEFT"); ValueError says why not."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"a key code is a number or a name like KEY_LEFT, not {value!r}")
    if isinstance(value, str):
        if value not in KEYCODE_NAMES:
            raise ValueError(f"unknown key name {value!r} (known: KEY_A..KEY_Z, KEY_0..KEY_9, KEY_F1..KEY_F12, "
                             "KEY_LEFT, KEY_SPACE, KEY_ENTER ...; or give the number from linux/input-event-codes.h)")
        return KEYCODE_NAMES[value]
    if not 1 <= value <= KEY_MAX:
        raise ValueError(f"key code {value} is outside 1..{KEY_MAX}")
    return value


def wired_keycodes(wiring: Mapping[int, str], keycodes: Mapping[str, int | str] | None = None) -> dict[int, int]:
    """Output -> key code for every wired output: `keycodes` over the defaults; ValueError names a key without one."""
    return wired_codes(wiring, {**DEFAULT_KEYCODES, **(keycodes or {})}, keycode, "uinput key code", "keycodes")


class UinputOutputs:
    """Wired outputs as keys of a new uinput keyboard; implements hardware.keys.outputs.Outputs.

    read_back() is always None: a uinput fd reports nothing back, and a write either delivers all of
    its events or fails with an error, which set() raises.
    """

    def __init__(
        self,
        wiring: Mapping[int, str],
        device: str = "/dev/uinput",
        keycodes: Mapping[str, int | str] | None = None,
        *,
        ioctl: Ioctl = fcntl.ioctl,
    ) -> None:
        """Create the virtual keyboard with one key per wired output (ValueError for a bad key code,
        KeyOutputError when the device cannot be opened or set up). `ioctl` is the seam tests record."""
        self.name = f"uinput {device}"
        self._keys = dict(wiring)
        self._codes = wired_keycodes(wiring, keycodes)
        self._ioctl = ioctl
        # Re-entrant: a signal handler's release_all may interrupt this thread inside set(); each
        # write is whole before a handler can run, so its release lands between two reports.
        self._lock = threading.RLock()
        self._fd: int | None = _open(device)
        try:
            self._create()
        except BaseException:
            os.close(self._fd)
            self._fd = None
            raise

    def _create(self) -> None:
        try:
            self._ioctl(self._require_fd(), UI_SET_EVBIT, EV_KEY)
        except OSError as exc:  # the first ioctl: failing here means a file that is not uinput
            raise self._error("not a uinput device (UI_SET_EVBIT failed)", exc) from exc
        for code in sorted(set(self._codes.values())):
            self._call(UI_SET_KEYBIT, code, "UI_SET_KEYBIT")
        try:
            self._ioctl(self._require_fd(), UI_DEV_SETUP,
                        UINPUT_SETUP.pack(BUS_VIRTUAL, VENDOR, PRODUCT, VERSION, DEVICE_NAME, 0))
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOTTY):
                raise self._error("UI_DEV_SETUP failed", exc) from exc
            # A kernel before 4.5: the device's identity is written instead.
            legacy = UINPUT_USER_DEV.pack(DEVICE_NAME, BUS_VIRTUAL, VENDOR, PRODUCT, VERSION, 0, *[0] * (4 * ABS_CNT))
            self._write(legacy, "writing uinput_user_dev")
        self._call(UI_DEV_CREATE, 0, "UI_DEV_CREATE")

    def set(self, output: int, on: bool) -> None:
        """Press (on=True) or release the wired output's key; KeyOutputError if unwired, closed or the write fails."""
        if output not in self._codes:
            raise KeyOutputError(f"{self.name}: output {output} is not wired (wired: {sorted(self._codes)})")
        what = f"{'press' if on else 'release'} of output {output} ({self._keys[output]})"
        with self._lock:
            self._write(_key_events([(self._codes[output], int(on))]), what)

    def release_all(self) -> None:
        """Key-up for every wired key, in one write; never raises (a failure is logged).

        Releasing keys that are not down is harmless: the input core passes on only real changes."""
        with self._lock:
            if self._fd is None:
                return
            try:
                self._write(_key_events([(code, 0) for code in self._codes.values()]), "release of every key")
            except KeyOutputError as exc:
                log.warning("%s", exc)

    def read_back(self) -> frozenset[int] | None:
        """None: a uinput device cannot report which of its keys are down."""
        return None

    def close(self) -> None:
        """Release every key, destroy the virtual keyboard and close the fd; calling it again does nothing."""
        self.release_all()
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            self._ioctl(fd, UI_DEV_DESTROY, 0)
        except OSError as exc:
            log.warning("%s", self._error("UI_DEV_DESTROY failed", exc))
        finally:
            os.close(fd)

    def _require_fd(self) -> int:
        if self._fd is None:
            raise KeyOutputError(f"{self.name} is closed")
        return self._fd

    def _call(self, request: int, arg: int, what: str) -> None:
        try:
            self._ioctl(self._require_fd(), request, arg)
        except OSError as exc:
            raise self._error(f"{what} failed", exc) from exc

    def _write(self, data: bytes, what: str) -> None:
        try:
            written = os.write(self._require_fd(), data)
        except OSError as exc:
            raise self._error(f"{what} failed", exc) from exc
        if written != len(data):
            raise KeyOutputError(f"{self.name}: {what} failed: wrote {written} of {len(data)} bytes")

    def _error(self, what: str, exc: OSError) -> KeyOutputError:
        return KeyOutputError(f"{self.name}: {what}: {exc.strerror or exc}")


def _key_events(changes: list[tuple[int, int]]) -> bytes:
    """EV_KEY events for (code, value) pairs, then the SYN_REPORT that makes them one report."""
    events = [INPUT_EVENT.pack(0, 0, EV_KEY, code, value) for code, value in changes]
    return b"".join(events) + INPUT_EVENT.pack(0, 0, EV_SYN, SYN_REPORT, 0)


def _open(device: str) -> int:
    """The uinput fd, or a KeyOutputError that says what is missing and how to fix it."""
    try:
        return os.open(device, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise KeyOutputError(
            f"uinput {device}: no such device: load the uinput module (`sudo modprobe uinput`; to load it at boot "
            "add a line `uinput` to /etc/modules-load.d/uinput.conf)"
        ) from None
    except PermissionError:
        raise KeyOutputError(
            f"uinput {device}: permission denied (owned by {_owner(device)}): add this user to a group that may "
            'write it, e.g. a udev rule KERNEL=="uinput", GROUP="input", MODE="0660" in '
            "/etc/udev/rules.d/99-uinput.rules, then `sudo usermod -aG input $USER` and log in again"
        ) from None
    except OSError as exc:
        raise KeyOutputError(f"uinput {device}: cannot open: {exc.strerror}") from None


def _owner(path: str) -> str:
    """'group G, mode 0NNN' of a path, for the permission message."""
    try:
        status = os.stat(path)
    except OSError:
        return "unknown"
    try:
        group = grp.getgrgid(status.st_gid).gr_name
    except KeyError:
        group = str(status.st_gid)
    return f"group {group}, mode {status.st_mode & 0o777:04o}"
