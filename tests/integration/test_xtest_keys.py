"""XtestOutputs against real Xvfb servers: a second X client watches the keys (QueryKeymap and a focused
window's KeyPress/KeyRelease events); KeyOutput on top of it (timed presses, the max-hold guard,
SIGTERM); and real faults: no display, no XTEST, a server that dies or stops answering, a process
killed while it holds a key, signals that interrupt a press."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from dataclasses import dataclass

import pytest
from Xlib import X, XK
from Xlib import display as xdisplay

from gamerig.hardware.keys import load_key_output_file, open_key_output
from gamerig.hardware.keys.outputs import KeyOutputError
from gamerig.hardware.keys.xtest import RELEASE_WAIT_S, XtestOutputs, keysym_name

pytestmark = pytest.mark.skipif(shutil.which("Xvfb") is None, reason="the Xvfb binary is not installed (apt install xvfb)")

EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "keys" / "xtest.yaml"
WIRING = {0: "left", 1: "right", 2: "rotate", 3: "drop", 4: "new_game", 5: "pause"}
DEFAULT_KEYSYM_NAMES = {"left": "Left", "right": "Right", "rotate": "Up", "drop": "space", "new_game": "Return", "pause": "p"}


@contextlib.contextmanager
def xvfb(*extra: str, display: str | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A fresh Xvfb on `display`, or on a number it picks itself (-displayfd) so parallel runs never
    collide; -noreset, because a server that resets when its last client leaves refuses connections
    meanwhile."""
    read_end, write_end = os.pipe()
    where = [display] if display else ["-displayfd", str(write_end)]
    server = subprocess.Popen(
        ["Xvfb", *where, "-screen", "0", "640x480x24", "-nolisten", "tcp", "-noreset", *extra],
        pass_fds=(write_end,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        if display:
            assert wait_until(lambda: can_connect(display), 5.0), f"Xvfb {display} did not start"
            yield display, server
        else:
            number = b""
            while not number.endswith(b"\n"):
                chunk = os.read(read_end, 16)  # EOF here means Xvfb exited before it was ready
                assert chunk, f"Xvfb exited with {server.wait(timeout=5)} before it was ready"
                number += chunk
            yield f":{int(number)}", server
    finally:
        os.close(read_end)
        server.terminate()
        server.wait(timeout=5)


def can_connect(name: str) -> bool:
    try:
        xdisplay.Display(name).close()
    except Exception:  # not up yet
        return False
    return True


@pytest.fixture(scope="module")
def display_name() -> Iterator[str]:
    with xvfb() as (name, _):
        yield name


@pytest.fixture
def watcher(display_name: str) -> Iterator[xdisplay.Display]:
    """A second, independent X client on the same display."""
    client = xdisplay.Display(display_name)
    yield client
    client.close()


def keys_down(client: xdisplay.Display) -> set[str]:
    """Keysym names of every key the server reports down."""
    keymap = client.query_keymap()
    codes = [code for code in range(8, 256) if keymap[code // 8] >> (code % 8) & 1]
    return {keysym_name(client.keycode_to_keysym(code, 0)) for code in codes}


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def test_a_pressed_key_is_down_for_another_client_and_up_after_release(
    display_name: str, watcher: xdisplay.Display
) -> None:
    outputs = XtestOutputs(WIRING, display=display_name)
    try:
        assert outputs.name == f"xtest {display_name}"
        outputs.set(2, True)
        assert keys_down(watcher) == {"Up"}
        assert outputs.read_back() == frozenset({2})
        outputs.set(0, True)
        assert keys_down(watcher) == {"Up", "Left"}
        assert outputs.read_back() == frozenset({0, 2})
        outputs.set(2, False)
        assert keys_down(watcher) == {"Left"}
        outputs.release_all()
        assert keys_down(watcher) == set()
        assert outputs.read_back() == frozenset()
    finally:
        outputs.close()


@dataclass(frozen=True)
class KeyEvent:
    kind: str  # "press" or "release"
    key: str  # keysym name
    time_ms: int  # the X server's timestamp


@contextlib.contextmanager
def focused_window(watcher: xdisplay.Display) -> Iterator[Callable[[int], list[KeyEvent]]]:
    """A full-screen window of the watcher's with the input focus; yields `collect(n)`, which waits
    (up to 5 s) for n key events sent to the window and returns them."""
    screen = watcher.screen()
    window = screen.root.create_window(
        0, 0, 640, 480, 0, screen.root_depth, event_mask=X.KeyPressMask | X.KeyReleaseMask | X.StructureNotifyMask
    )
    window.map()
    watcher.sync()
    assert wait_until(lambda: any(watcher.next_event().type == X.MapNotify for _ in range(watcher.pending_events())), 5.0)
    window.set_input_focus(X.RevertToParent, X.CurrentTime)
    watcher.sync()
    received: list[KeyEvent] = []

    def collect(count: int) -> list[KeyEvent]:
        def enough() -> bool:
            for _ in range(watcher.pending_events()):
                event = watcher.next_event()
                if event.type in (X.KeyPress, X.KeyRelease) and event.window == window:
                    kind = "press" if event.type == X.KeyPress else "release"
                    received.append(KeyEvent(kind, keysym_name(watcher.keycode_to_keysym(event.detail, 0)), event.time))
            return len(received) >= count

        assert wait_until(enough, 5.0), f"the window received only {received}"
        return list(received)

    try:
        yield collect
    finally:
        window.destroy()
        watcher.sync()


def test_a_focused_window_receives_press_and_release_of_every_wired_key(
    display_name: str, watcher: xdisplay.Display
) -> None:
    with focused_window(watcher) as collect:
        with contextlib.closing(XtestOutputs(WIRING, display=display_name)) as outputs:
            for output in WIRING:
                outputs.set(output, True)
                outputs.set(output, False)
        received = [(event.kind, event.key) for event in collect(2 * len(WIRING))]
    expected = [(kind, DEFAULT_KEYSYM_NAMES[WIRING[output]]) for output in WIRING for kind in ("press", "release")]
    assert received == expected


def test_key_output_presses_reach_the_window_held_as_configured(display_name: str, watcher: xdisplay.Display) -> None:
    config = {"board": "xtest", "display": display_name, "outputs": {name: output for output, name in WIRING.items()},
              "hold_ms": 60, "gap_ms": 60}
    with focused_window(watcher) as collect:
        with open_key_output(config, "xtest.yaml") as keys:
            for key in ("left", "rotate", "drop"):
                keys.press(key)
        received = collect(6)
    assert [(event.kind, event.key) for event in received] == [
        ("press", "Left"), ("release", "Left"), ("press", "Up"), ("release", "Up"), ("press", "space"), ("release", "space")
    ]
    # Stamped by the server when it processes each event (ms): a press it processes late shortens the
    # hold it sees, so only the 30 ms floor here (a real hold, not a collapsed one); the numbers are
    # measured, not asserted (tests are no benchmarks on a shared machine).
    holds = [release.time_ms - press.time_ms for press, release in zip(received[0::2], received[1::2])]
    gaps = [press.time_ms - release.time_ms for release, press in zip(received[1::2], received[2::2])]
    assert min(holds) >= 30 and min(gaps) >= 30, (holds, gaps)


def test_the_example_config_presses_its_keys(display_name: str, watcher: xdisplay.Display) -> None:
    config = dataclasses.replace(load_key_output_file(EXAMPLE_CONFIG), display=display_name)
    with focused_window(watcher) as collect:
        with open_key_output(config) as keys:
            for key in config.outputs:
                keys.press(key, hold_ms=30)
        pressed = [event.key for event in collect(2 * len(config.outputs)) if event.kind == "press"]
    assert pressed == ["Left", "Right", "Up", "space", "Return", "p"]


def test_the_max_hold_guard_releases_a_key_through_xtest(display_name: str, watcher: xdisplay.Display) -> None:
    config = {"board": "xtest", "display": display_name, "outputs": {"left": 0}, "hold_ms": 30, "max_hold_ms": 100}
    with open_key_output(config, "xtest.yaml") as keys:
        keys.down("left")
        assert keys_down(watcher) == {"Left"}
        assert wait_until(lambda: keys_down(watcher) == set(), 3.0)  # the guard thread let go


def test_sigterm_releases_a_key_held_through_key_output(display_name: str, watcher: xdisplay.Display) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "from gamerig.hardware.keys import open_key_output\n"
         "keys = open_key_output({'board': 'xtest', 'display': sys.argv[1], 'outputs': {'drop': 0},"
         " 'max_hold_ms': 60000}, 'xtest.yaml')\n"
         "keys.down('drop')\n"
         "print('down', flush=True)\n"
         "time.sleep(60)\n",
         display_name],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "down\n"
        assert keys_down(watcher) == {"space"}
        holder.send_signal(signal.SIGTERM)
        assert holder.wait(timeout=5) == -signal.SIGTERM  # the signal still ends the process
        assert keys_down(watcher) == set()
    finally:
        holder.kill()
        holder.wait(timeout=5)


def test_configured_keysyms_override_the_defaults(display_name: str, watcher: xdisplay.Display) -> None:
    with contextlib.closing(
        XtestOutputs({0: "rotate", 1: "fire"}, display=display_name, keysyms={"rotate": "x", "fire": XK.XK_Control_L})
    ) as outputs:
        outputs.set(0, True)
        outputs.set(1, True)
        assert keys_down(watcher) == {"x", "Control_L"}
    assert keys_down(watcher) == set()  # close() released both


def test_a_key_held_by_a_killed_process_stays_down_until_the_next_open(
    display_name: str, watcher: xdisplay.Display
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import time\n"
         "from gamerig.hardware.keys.xtest import XtestOutputs\n"
         f"outputs = XtestOutputs({{0: 'drop'}}, display={display_name!r})\n"
         "outputs.set(0, True)\n"
         "print('down', flush=True)\n"
         "time.sleep(60)\n"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "down\n"
        holder.send_signal(signal.SIGKILL)  # no Python cleanup runs
        holder.wait(timeout=5)
        time.sleep(0.2)
        # The X server keeps an XTEST key down after its client is gone, so only the next open can let go.
        assert keys_down(watcher) == {"space"}
        with contextlib.closing(XtestOutputs({0: "drop"}, display=display_name)) as outputs:
            assert keys_down(watcher) == set()
            assert outputs.read_back() == frozenset()
    finally:
        holder.kill()
        holder.wait(timeout=5)


def test_unwired_outputs_and_a_closed_backend_are_refused(display_name: str) -> None:
    outputs = XtestOutputs({0: "left"}, display=display_name)
    with pytest.raises(KeyOutputError, match=r"output 4 is not wired \(wired: \[0\]\)"):
        outputs.set(4, True)
    outputs.close()
    outputs.close()
    outputs.release_all()
    with pytest.raises(KeyOutputError, match=f"xtest {display_name} is closed"):
        outputs.set(0, True)


def test_a_keysym_the_keyboard_lacks_or_does_not_know_is_named(display_name: str) -> None:
    with pytest.raises(KeyOutputError, match=r"no key on this display's keyboard makes keysym F20 \(output 1, fire\)"):
        XtestOutputs({0: "left", 1: "fire"}, display=display_name, keysyms={"fire": "F20"})
    with pytest.raises(ValueError, match=r"key 'fire': unknown keysym name 'Fire'"):
        XtestOutputs({1: "fire"}, display=display_name, keysyms={"fire": "Fire"})
    with pytest.raises(ValueError, match=r"key 'jump' \(output 6\) has no keysym: give one in keysyms"):
        XtestOutputs({6: "jump"}, display=display_name)


def test_a_missing_display_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    unused = next(n for n in range(300, 400) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))
    with pytest.raises(KeyOutputError, match=rf"xtest :{unused}: cannot connect"):
        XtestOutputs(WIRING, display=f":{unused}")
    with pytest.raises(KeyOutputError, match=r"xtest nowhere: not an X display name"):
        XtestOutputs(WIRING, display="nowhere")
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(KeyOutputError, match=r"no X display given and DISPLAY is not set"):
        XtestOutputs(WIRING)


def test_a_display_without_xtest_is_a_clear_error() -> None:
    with xvfb("-extension", "XTEST") as (name, _):
        with pytest.raises(KeyOutputError, match=rf"xtest {name}: the X server has no XTEST extension"):
            XtestOutputs(WIRING, display=name)


def test_a_display_that_dies_fails_set_but_never_release_all_or_close() -> None:
    with xvfb() as (name, _):
        outputs = XtestOutputs(WIRING, display=name)
        outputs.set(0, True)
    # The server is gone now.
    with pytest.raises(KeyOutputError, match=rf"xtest {name}: release of output 0 \(left\) failed"):
        outputs.set(0, False)
    outputs.release_all()
    outputs.close()


def test_release_all_from_a_signal_handler_never_deadlocks_a_press_in_progress(display_name: str) -> None:
    # SIGALRM every 20 ms while the main thread presses for a second: most alarms land while set()
    # holds the connection, so the handler's release_all must neither wait for it nor corrupt it.
    script = (
        "import signal, sys, time\n"
        "from gamerig.hardware.keys.xtest import XtestOutputs\n"
        "outputs = XtestOutputs({0: 'left'}, display=sys.argv[1])\n"
        "alarms = []\n"
        "signal.signal(signal.SIGALRM, lambda signum, frame: (alarms.append(1), outputs.release_all()))\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.02, 0.02)\n"
        "end = time.monotonic() + 1.0\n"
        "while time.monotonic() < end:\n"
        "    outputs.set(0, True)\n"
        "signal.setitimer(signal.ITIMER_REAL, 0)\n"
        "outputs.close()\n"
        "print(len(alarms))\n"
    )
    child = subprocess.run([sys.executable, "-c", script, display_name], capture_output=True, text=True, timeout=15)
    assert child.returncode == 0, child.stderr
    assert int(child.stdout) >= 20, "too few alarms landed to exercise the handler"


def test_release_all_gives_up_on_a_server_that_stopped_answering() -> None:
    with xvfb() as (name, server):
        outputs = XtestOutputs(WIRING, display=name)
        outputs.set(0, True)
        os.kill(server.pid, signal.SIGSTOP)
        try:
            stuck = threading.Thread(target=outputs.set, args=(1, True), daemon=True)  # blocks in its sync
            stuck.start()
            time.sleep(0.1)
            started = time.monotonic()
            outputs.release_all()  # the connection is taken and a new one gets no answer: it must return
            assert time.monotonic() - started < 2 * RELEASE_WAIT_S + 1.5
        finally:
            os.kill(server.pid, signal.SIGCONT)
        stuck.join(timeout=5)
        outputs.close()
        watcher = xdisplay.Display(name)
        assert keys_down(watcher) == set()
        watcher.close()


def test_a_restarted_display_is_found_again_with_nothing_pressed_meanwhile() -> None:
    with xvfb() as (name, _):
        outputs = XtestOutputs(WIRING, display=name)
        outputs.set(0, True)
    # The server is gone: every call fails, saying so, and nothing can be pressed.
    with pytest.raises(KeyOutputError, match=rf"xtest {name}: press of output 1 \(right\) failed"):
        outputs.set(1, True)
    with pytest.raises(KeyOutputError, match=r"display lost .*reconnect"):
        outputs.set(1, True)
    outputs.release_all()  # never raises, lost display or not
    with xvfb(display=name):
        watcher = xdisplay.Display(name)

        def pressed() -> bool:
            with contextlib.suppress(KeyOutputError):
                outputs.set(1, True)
                return True
            return False

        assert wait_until(pressed, 3.0)  # the backoff never waits longer than RECONNECT_MAX_S
        assert keys_down(watcher) == {"Right"}
        assert outputs.read_back() == frozenset({1})
        outputs.close()
        assert keys_down(watcher) == set()
        watcher.close()
