"""An X11 XTEST keyboard as key outputs, so the rig can play a game on any X display without relays.

Each wired key name maps to a keysym ("Left", "space", ...); the display's own keyboard mapping turns
it into a keycode once, at open. A change of an output is an XTEST FakeInput KeyPress or KeyRelease
followed by a round trip (sync), so when set() returns the server has processed the event, and an X
error or a lost connection is raised there as a KeyOutputError. Only the keycode is pressed, never a
modifier: keysym "P" presses the same key as "p".

Tested (tests/integration/test_xtest_keys.py) against real Xvfb servers: a second X client sees the
key down and up (QueryKeymap), a window of its own receives KeyPress/KeyRelease for every wired key;
a display that is missing, lacks XTEST, dies, restarts (found again) or stops answering (release_all
still returns); signal handlers that interrupt set(); KeyOutput on top (timed presses, the max-hold
guard, SIGTERM). Observed there, and the reason this backend releases every wired key whenever it
connects: the X server keeps an XTEST key down after the client that pressed it has died (SIGKILL),
until the server resets. Not tested: real Xorg servers and window managers, where the game's window
must have the input focus to see the keys.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping

from Xlib import X, XK
from Xlib import display as xdisplay
from Xlib import error as xerror

from gamerig.hardware.keys.outputs import KeyOutputError, wired_codes

log = logging.getLogger(__name__)

#: How long release_all waits for the connection, and then for a new connection's release.
RELEASE_WAIT_S = 1.0
#: Reconnecting after a lost display: the first retry may come at once, later ones wait this long,
#: doubling up to RECONNECT_MAX_S (so a display that is back is found again within that).
RECONNECT_FIRST_S = 0.1
RECONNECT_MAX_S = 1.0
DEFAULT_KEYSYMS: dict[str, int | str] = {
    "left": "Left",
    "right": "Right",
    "rotate": "Up",
    "drop": "space",
    "new_game": "Return",
    "pause": "p",
}


def keysym(value: int | str) -> int:
    """An X keysym from its name ("Left", "space", "a") or number; ValueError says why not."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"a keysym is a name like Left or space, or a number, not {value!r}")
    code = XK.string_to_keysym(value) if isinstance(value, str) else value
    if isinstance(value, str) and code == X.NoSymbol:
        raise ValueError(f"unknown keysym name {value!r} (names as in X11/keysymdef.h without XK_: Left, space, Return, a)")
    if not 0 < code < 1 << 29:  # keysyms are 29-bit values
        raise ValueError(f"keysym {value} is outside 1..0x1fffffff")
    return code


def keysym_name(sym: int) -> str:
    """The keysymdef.h name of a keysym without XK_ ("Left", "space"), or its hex value if python-xlib has none."""
    return next((name[3:] for name, value in vars(XK).items() if name.startswith("XK_") and value == sym), hex(sym))


def wired_keysyms(wiring: Mapping[int, str], keysyms: Mapping[str, int | str] | None = None) -> dict[int, int]:
    """Output -> keysym for every wired output: `keysyms` over the defaults; ValueError names a key without one."""
    return wired_codes(wiring, {**DEFAULT_KEYSYMS, **(keysyms or {})}, keysym, "keysym", "keysyms")


class XtestOutputs:
    """Wired outputs as keys pressed through XTEST on one X display; implements hardware.keys.outputs.Outputs.

    read_back() asks the server (QueryKeymap) which wired keys are down: a true read back, which also
    counts a key held down on another keyboard of that display.

    A lost connection (the server died or restarted) fails the call that finds it; later calls
    reconnect, at most once per backoff step (RECONNECT_FIRST_S doubling up to RECONNECT_MAX_S), and a
    reconnection maps the keys again and releases them all before anything is pressed.

    One lock serialises every use of the connection (python-xlib is not thread-safe by default). A
    release_all that cannot have the connection (a signal handler that interrupted this thread in
    the middle of a request, or another thread stuck in one) releases the keys through a second,
    short-lived connection instead: the server's XTEST keyboard is shared by all its clients.
    """

    def __init__(self, wiring: Mapping[int, str], display: str | None = None, keysyms: Mapping[str, int | str] | None = None) -> None:
        """Connect to `display` (None: $DISPLAY), map every wired key to a keycode and release them all.

        ValueError for a bad keysym; KeyOutputError when the display cannot be opened, has no XTEST,
        or has no key for a wired keysym."""
        self._syms = wired_keysyms(wiring, keysyms)
        self._keys = dict(wiring)
        self._lock = threading.RLock()  # re-entrant: a signal handler may interrupt a holder
        self._busy = False  # a request is on the wire; a release that finds it so must not interleave
        self._errors: list[xerror.XError] = []
        self._closed = False
        self._lost: str | None = None  # why the connection was lost, until it is back
        self._retry_at = 0.0
        self._backoff = RECONNECT_FIRST_S
        self._display: xdisplay.Display | None = None
        self._connect(display)

    def _connect(self, display_name: str | None) -> None:
        """Open the display, check XTEST, map the keys to this server's keycodes, release them all."""
        display = _open_display(display_name)
        self._display_name = display.get_display_name()
        self.name = f"xtest {self._display_name}"
        try:
            if not display.has_extension("XTEST"):
                raise KeyOutputError(f"{self.name}: the X server has no XTEST extension")
            self._codes = {output: self._keycode(display, output, sym) for output, sym in self._syms.items()}
            display.set_error_handler(lambda err, request: self._errors.append(err))
            with self._lock:
                self._display = display
                self._send(self._release_events(), "release of every key on open")
        except BaseException:
            self._display = None
            display.close()
            raise

    def _keycode(self, display: xdisplay.Display, output: int, sym: int) -> int:
        code = display.keysym_to_keycode(sym)
        if code == 0:
            raise KeyOutputError(
                f"{self.name}: no key on this display's keyboard makes keysym {keysym_name(sym)} "
                f"(output {output}, {self._keys[output]}): pick another keysym or add it with xmodmap"
            )
        return code

    def set(self, output: int, on: bool) -> None:
        """Press (on=True) or release the wired output's key; KeyOutputError if unwired, closed, the
        display is lost (and not back yet) or X fails.

        Blocks until the server has processed the event: a server that stops answering blocks it."""
        if output not in self._keys:
            raise KeyOutputError(f"{self.name}: output {output} is not wired (wired: {sorted(self._keys)})")
        with self._lock:
            self._send([(X.KeyPress if on else X.KeyRelease, self._codes[output])],
                       f"{'press' if on else 'release'} of output {output} ({self._keys[output]})")

    def release_all(self) -> None:
        """KeyRelease for every wired key; never raises (a failure is logged).

        With the connection free it blocks like set(). With the connection busy (another thread in a
        request, or this thread interrupted inside one) or lost, it releases through a new connection
        and waits at most about 2 x RELEASE_WAIT_S, even on a server that stopped answering. The
        server ignores the release of a key that its XTEST keyboard does not hold down."""
        acquired = self._lock.acquire(timeout=RELEASE_WAIT_S)
        try:
            if self._closed:
                return
            if acquired and not self._busy and self._display is not None:
                try:
                    self._send(self._release_events(), "release of every key")
                except KeyOutputError as exc:
                    log.warning("%s", exc)
            else:
                self._release_on_new_connection()
        finally:
            if acquired:
                self._lock.release()

    def read_back(self) -> frozenset[int] | None:
        """The wired outputs whose key the X server reports down; KeyOutputError if the display is gone."""
        with self._lock, self._request("reading the keymap") as display:
            keymap = display.query_keymap()
        return frozenset(output for output, code in self._codes.items() if keymap[code // 8] >> (code % 8) & 1)

    def close(self) -> None:
        """Release every key and disconnect (after any request in progress); calling it again does nothing."""
        self.release_all()
        with self._lock:
            self._closed = True
            display, self._display = self._display, None
        if display is not None:
            try:
                display.close()
            except Exception as exc:  # a display that already died
                log.warning("%s: closing the display: %s", self.name, exc)

    @contextlib.contextmanager
    def _request(self, what: str) -> Iterator[xdisplay.Display]:
        """The connection, marked busy while the caller (holding the lock) uses it; any failure,
        an X error reported during it included, becomes a KeyOutputError saying `what` failed, and
        a broken connection is dropped to be reconnected later."""
        display = self._live_display()
        self._errors.clear()
        self._busy = True
        try:
            yield display
        except (xerror.ConnectionClosedError, OSError) as exc:
            self._lose(display, str(exc))
            raise KeyOutputError(f"{self.name}: {what} failed: {exc}") from exc
        except Exception as exc:  # python-xlib's own slips on odd errors
            raise KeyOutputError(f"{self.name}: {what} failed: {exc}") from exc
        finally:
            self._busy = False
        if self._errors:
            raise KeyOutputError(f"{self.name}: {what} failed: X error {self._errors[0]}")

    def _live_display(self) -> xdisplay.Display:
        """The connection; after a loss, a new one once the backoff allows (KeyOutputError until then)."""
        if self._closed:
            raise KeyOutputError(f"{self.name} is closed")
        if self._display is None:
            now = time.monotonic()
            if now < self._retry_at:
                raise KeyOutputError(f"{self.name}: display lost ({self._lost}); reconnecting in {self._retry_at - now:.1f} s")
            try:
                self._connect(self._display_name)
            except KeyOutputError as exc:
                self._retry_at = now + self._backoff
                self._backoff = min(2 * self._backoff, RECONNECT_MAX_S)
                raise KeyOutputError(f"{self.name}: display lost ({self._lost}); reconnecting failed: {exc}") from exc
            log.warning("%s: reconnected after losing the display (%s)", self.name, self._lost)
            self._lost, self._backoff = None, RECONNECT_FIRST_S
        assert self._display is not None
        return self._display

    def _lose(self, display: xdisplay.Display, cause: str) -> None:
        log.warning("%s: lost the display: %s", self.name, cause)
        self._display, self._lost, self._retry_at = None, cause, 0.0
        with contextlib.suppress(Exception):
            display.close()

    def _release_events(self) -> list[tuple[int, int]]:
        return [(X.KeyRelease, code) for code in self._codes.values()]

    def _send(self, events: list[tuple[int, int]], what: str) -> None:
        """Fake the (event type, keycode) events and wait until the server has processed them."""
        with self._request(what) as display:
            _fake(display, events)

    def _release_on_new_connection(self) -> None:
        """Release every key through a connection of its own, made in a thread that is given up on
        after RELEASE_WAIT_S (python-xlib has no timeouts; a stopped server would hang it)."""

        def release() -> None:
            try:
                display = xdisplay.Display(self._display_name)
                try:
                    _fake(display, self._release_events())
                finally:
                    display.close()
            except Exception as exc:
                log.warning("%s: release of every key on a new connection failed: %s", self.name, exc)

        worker = threading.Thread(target=release, name=f"release {self.name}", daemon=True)
        worker.start()
        worker.join(RELEASE_WAIT_S)
        if worker.is_alive():
            log.warning("%s: the X server did not answer a release within %g s", self.name, RELEASE_WAIT_S)


def _fake(display: xdisplay.Display, events: list[tuple[int, int]]) -> None:
    """Send XTEST events and wait (sync) until the server has processed them and reported any error."""
    for event_type, code in events:
        display.xtest_fake_input(event_type, code)
    display.sync()


def _open_display(display: str | None) -> xdisplay.Display:
    """A connection to the display, or a KeyOutputError that says which display and why not."""
    try:
        return xdisplay.Display(display)
    except xerror.DisplayNameError:
        name = display or os.environ.get("DISPLAY", "")
        if not name:
            raise KeyOutputError("xtest: no X display given and DISPLAY is not set") from None
        raise KeyOutputError(f"xtest {name}: not an X display name (like :0 or host:0)") from None
    except (xerror.DisplayError, xerror.ConnectionClosedError, OSError) as exc:
        raise KeyOutputError(f"xtest {display or '$DISPLAY'}: cannot connect: {exc}") from None
