"""UinputOutputs without a kernel uinput device (this machine has none): the events go to a real file
or FIFO and the ioctl calls to a recorder, and every constant, struct layout and byte the module writes
is compared with what a C program compiled against the kernel headers produces."""

from __future__ import annotations

import errno
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from gamerig.hardware.keys import load_key_output_file, uinput
from gamerig.hardware.keys.outputs import KeyOutputError
from gamerig.hardware.keys.uinput import (
    KEYCODE_NAMES,
    UI_DEV_CREATE,
    UI_DEV_DESTROY,
    UI_DEV_SETUP,
    UI_SET_EVBIT,
    UI_SET_KEYBIT,
    UinputOutputs,
    keycode,
)

WIRING = {0: "left", 1: "right", 2: "rotate", 3: "drop", 4: "new_game", 5: "pause"}
# The default key codes of WIRING, from linux/input-event-codes.h.
KEY_LEFT, KEY_RIGHT, KEY_UP, KEY_SPACE, KEY_ENTER, KEY_P = 105, 106, 103, 57, 28, 25
EV_SYN, EV_KEY, SYN_REPORT = 0, 1, 0


class IoctlRecorder:
    """Stands in for fcntl.ioctl: records (request, arg) and fails the requests it is told to."""

    def __init__(self, fail: dict[int, int] | None = None) -> None:
        self.calls: list[tuple[int, int | bytes]] = []
        self.fail = fail or {}

    def __call__(self, fd: int, request: int, arg: int | bytes = 0) -> int:
        os.fstat(fd)  # the fd must be open
        self.calls.append((request, arg))
        if request in self.fail:
            raise OSError(self.fail[request], os.strerror(self.fail[request]))
        return 0


def event(type_: int, code: int, value: int) -> bytes:
    return struct.pack("@llHHi", 0, 0, type_, code, value)


SYN = event(EV_SYN, SYN_REPORT, 0)


def test_a_press_and_release_are_one_key_event_and_a_report_each(tmp_path: Path) -> None:
    path = tmp_path / "uinput"
    path.touch()
    ioctl = IoctlRecorder()
    outputs = UinputOutputs(WIRING, device=str(path), ioctl=ioctl)
    assert path.read_bytes() == b""  # UI_DEV_SETUP worked: nothing written before the first key
    outputs.set(0, True)
    outputs.set(2, True)
    outputs.set(0, False)
    assert outputs.read_back() is None
    outputs.close()
    outputs.close()  # a second close does nothing

    wired_codes = (KEY_LEFT, KEY_RIGHT, KEY_UP, KEY_SPACE, KEY_ENTER, KEY_P)
    release_everything = b"".join(event(EV_KEY, code, 0) for code in wired_codes)
    assert path.read_bytes() == (
        event(EV_KEY, KEY_LEFT, 1) + SYN
        + event(EV_KEY, KEY_UP, 1) + SYN
        + event(EV_KEY, KEY_LEFT, 0) + SYN
        + release_everything + SYN  # close() releases every key before it destroys the device
    )
    requests = [request for request, _ in ioctl.calls]
    assert requests == [UI_SET_EVBIT] + [UI_SET_KEYBIT] * 6 + [UI_DEV_SETUP, UI_DEV_CREATE, UI_DEV_DESTROY]
    assert ioctl.calls[0][1] == EV_KEY
    assert [arg for _, arg in ioctl.calls[1:7]] == sorted(wired_codes)
    setup = ioctl.calls[7][1]
    assert isinstance(setup, bytes) and b"gamerig virtual keyboard\0" in setup
    assert outputs.name == f"uinput {path}"


def test_a_kernel_without_ui_dev_setup_gets_the_legacy_device_block_written(tmp_path: Path) -> None:
    path = tmp_path / "uinput"
    path.touch()
    ioctl = IoctlRecorder(fail={UI_DEV_SETUP: errno.EINVAL})
    outputs = UinputOutputs({0: "left"}, device=str(path), ioctl=ioctl)
    legacy = path.read_bytes()
    assert len(legacy) == 80 + 8 + 4 + 4 * 64 * 4  # sizeof(struct uinput_user_dev)
    assert legacy.startswith(b"gamerig virtual keyboard\0")
    assert [request for request, _ in ioctl.calls][-2:] == [UI_DEV_SETUP, UI_DEV_CREATE]
    outputs.set(0, True)
    assert path.read_bytes()[len(legacy):] == event(EV_KEY, KEY_LEFT, 1) + SYN
    outputs.close()


def test_any_other_setup_failure_is_a_key_output_error_and_closes_the_fd(tmp_path: Path) -> None:
    path = tmp_path / "uinput"
    path.touch()
    open_fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(KeyOutputError, match=r"UI_DEV_CREATE failed: Device or resource busy"):
        UinputOutputs(WIRING, device=str(path), ioctl=IoctlRecorder(fail={UI_DEV_CREATE: errno.EBUSY}))
    assert len(os.listdir("/proc/self/fd")) == open_fds


def test_a_file_that_is_not_uinput_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "not-uinput"
    path.touch()
    with pytest.raises(KeyOutputError, match=rf"uinput {path}: not a uinput device \(UI_SET_EVBIT failed\)"):
        UinputOutputs(WIRING, device=str(path))  # the real fcntl.ioctl on a regular file


def test_a_missing_device_says_to_load_the_module(tmp_path: Path) -> None:
    with pytest.raises(KeyOutputError, match=r"no such device: load the uinput module \(`sudo modprobe uinput`"):
        UinputOutputs(WIRING, device=str(tmp_path / "uinput"))


def test_no_permission_says_how_to_get_it(tmp_path: Path) -> None:
    path = tmp_path / "uinput"
    path.touch(mode=0o440)
    if os.geteuid() == 0:  # root ignores an ordinary file's mode, not a read-only sysfs attribute's
        path = Path("/sys/kernel/uevent_seqnum")
    try:
        os.close(os.open(path, os.O_WRONLY))
        pytest.skip(f"{path} can be opened for writing here")
    except PermissionError:
        pass
    except OSError as exc:
        pytest.skip(f"{path} refuses writing with {exc.strerror}, not a permission error")
    with pytest.raises(KeyOutputError, match=r"permission denied \(owned by group \w+, mode 0\d{3}\).*udev rule.*input"):
        UinputOutputs(WIRING, device=str(path))


def test_a_dead_device_fails_set_but_never_release_all_or_close(tmp_path: Path) -> None:
    fifo = tmp_path / "uinput"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    outputs = UinputOutputs(WIRING, device=str(fifo), ioctl=IoctlRecorder())
    outputs.set(3, True)
    assert os.read(reader, 4096) == event(EV_KEY, KEY_SPACE, 1) + SYN
    os.close(reader)  # the device goes away: writes now fail with EPIPE
    with pytest.raises(KeyOutputError, match=rf"uinput {fifo}: release of output 3 \(drop\) failed: Broken pipe"):
        outputs.set(3, False)
    outputs.release_all()
    outputs.close()
    with pytest.raises(KeyOutputError, match="is closed"):
        outputs.set(3, True)


def test_release_all_from_a_signal_handler_never_deadlocks_a_press_in_progress(tmp_path: Path) -> None:
    # SIGALRM every 2 ms while the main thread presses for half a second: many alarms land while
    # set() holds the lock, and the handler's release_all must get through.
    path = tmp_path / "uinput"
    path.touch()
    script = (
        "import signal, sys, time\n"
        "from gamerig.hardware.keys.uinput import UinputOutputs\n"
        "outputs = UinputOutputs({0: 'left'}, device=sys.argv[1], ioctl=lambda fd, request, arg=0: 0)\n"
        "alarms = []\n"
        "signal.signal(signal.SIGALRM, lambda signum, frame: (alarms.append(1), outputs.release_all()))\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)\n"
        "end = time.monotonic() + 0.5\n"
        "while time.monotonic() < end:\n"
        "    outputs.set(0, True)\n"
        "signal.setitimer(signal.ITIMER_REAL, 0)\n"
        "print(len(alarms))\n"
    )
    child = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=15)
    assert child.returncode == 0, child.stderr
    assert int(child.stdout) >= 20, "too few alarms landed to exercise the handler"
    written = path.read_bytes()
    size = len(SYN)
    events = [written[at:at + size] for at in range(0, len(written), size)]
    # Whole reports only: each key event is followed by its SYN_REPORT, whatever interrupted what.
    assert events[1::2] == [SYN] * (len(events) // 2) and len(events) % 2 == 0
    assert set(events[0::2]) == {event(EV_KEY, KEY_LEFT, 1), event(EV_KEY, KEY_LEFT, 0)}


def test_an_unwired_output_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "uinput"
    path.touch()
    outputs = UinputOutputs({0: "left"}, device=str(path), ioctl=IoctlRecorder())
    with pytest.raises(KeyOutputError, match=r"output 7 is not wired \(wired: \[0\]\)"):
        outputs.set(7, True)
    outputs.close()


def test_key_codes_come_from_names_numbers_or_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "uinput"
    path.touch()
    outputs = UinputOutputs(
        {0: "left", 1: "rotate", 2: "fire"}, device=str(path), keycodes={"rotate": "KEY_X", "fire": 29}, ioctl=IoctlRecorder()
    )
    for output in (0, 1, 2):
        outputs.set(output, True)
    outputs.close()
    assert path.read_bytes().startswith(
        event(EV_KEY, KEY_LEFT, 1) + SYN + event(EV_KEY, 45, 1) + SYN + event(EV_KEY, 29, 1) + SYN
    )


def test_the_example_config_sets_up_its_keys(tmp_path: Path) -> None:
    config = load_key_output_file(Path(__file__).resolve().parents[2] / "configs" / "keys" / "uinput.yaml")
    path = tmp_path / "uinput"
    path.touch()
    ioctl = IoctlRecorder()
    wiring = {output: key for key, output in config.outputs.items()}
    UinputOutputs(wiring, device=str(path), keycodes=config.keycodes, ioctl=ioctl).close()
    assert [arg for request, arg in ioctl.calls if request == UI_SET_KEYBIT] == sorted(
        [KEY_LEFT, KEY_RIGHT, KEY_UP, KEY_SPACE, KEY_ENTER, KEY_P]
    )


@pytest.mark.parametrize(
    ("keycodes", "message"),
    [
        ({}, r"key 'fire' \(output 0\) has no uinput key code: give one in keycodes"),
        ({"fire": "KEY_FIRE"}, r"key 'fire': unknown key name 'KEY_FIRE'"),
        ({"fire": 0x300}, r"key 'fire': key code 768 is outside 1..767"),
        ({"fire": True}, r"key 'fire': a key code is a number or a name like KEY_LEFT, not True"),
    ],
)
def test_a_bad_key_code_is_a_value_error_naming_the_key(keycodes: dict, message: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=message):
        UinputOutputs({0: "fire"}, device=str(tmp_path / "never-opened"), keycodes=keycodes)


C_PROBE = r"""
#include <stdio.h>
#include <string.h>
#include <linux/uinput.h>

static void hex(const char *name, const void *data, size_t size) {
    printf("%s ", name);
    for (size_t i = 0; i < size; i++) printf("%02x", ((const unsigned char *)data)[i]);
    printf("\n");
}

int main(void) {
    printf("UI_DEV_CREATE %lu\nUI_DEV_DESTROY %lu\nUI_DEV_SETUP %lu\n", (unsigned long)UI_DEV_CREATE,
           (unsigned long)UI_DEV_DESTROY, (unsigned long)UI_DEV_SETUP);
    printf("UI_SET_EVBIT %lu\nUI_SET_KEYBIT %lu\nKEY_MAX %d\nBUS_VIRTUAL %d\n", (unsigned long)UI_SET_EVBIT,
           (unsigned long)UI_SET_KEYBIT, KEY_MAX, BUS_VIRTUAL);
    %KEYS%
    struct input_event press = {0}, report = {0};
    press.type = EV_KEY; press.code = KEY_LEFT; press.value = 1;
    report.type = EV_SYN; report.code = SYN_REPORT; report.value = 0;
    hex("press", &press, sizeof press);
    hex("report", &report, sizeof report);
    struct uinput_setup setup;
    memset(&setup, 0, sizeof setup);
    setup.id.bustype = BUS_VIRTUAL; setup.id.version = 1;
    strcpy(setup.name, "gamerig virtual keyboard");
    hex("setup", &setup, sizeof setup);
    struct uinput_user_dev legacy;
    memset(&legacy, 0, sizeof legacy);
    legacy.id.bustype = BUS_VIRTUAL; legacy.id.version = 1;
    strcpy(legacy.name, "gamerig virtual keyboard");
    hex("legacy", &legacy, sizeof legacy);
    return 0;
}
"""


@pytest.fixture(scope="module")
def kernel_headers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each constant and struct the module uses, as the C compiler sees them in the kernel headers."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or not Path("/usr/include/linux/uinput.h").exists():
        pytest.skip("no C compiler or no linux/uinput.h to check the layouts against")
    keys = "".join(f'printf("{name} %d\\n", {name});\n' for name in KEYCODE_NAMES)
    workdir = tmp_path_factory.mktemp("uinput_probe")
    (workdir / "probe.c").write_text(C_PROBE.replace("%KEYS%", keys))
    subprocess.run([compiler, "-o", str(workdir / "probe"), str(workdir / "probe.c")], check=True, timeout=60)
    output = subprocess.run([str(workdir / "probe")], check=True, capture_output=True, text=True, timeout=10).stdout
    return dict(line.split(" ", 1) for line in output.splitlines())


def test_ioctl_numbers_and_key_codes_match_the_kernel_headers(kernel_headers: dict[str, str]) -> None:
    for name, value in [
        ("UI_DEV_CREATE", UI_DEV_CREATE), ("UI_DEV_DESTROY", UI_DEV_DESTROY), ("UI_DEV_SETUP", UI_DEV_SETUP),
        ("UI_SET_EVBIT", UI_SET_EVBIT), ("UI_SET_KEYBIT", UI_SET_KEYBIT), ("KEY_MAX", uinput.KEY_MAX),
        ("BUS_VIRTUAL", uinput.BUS_VIRTUAL),
    ]:
        assert int(kernel_headers[name]) == value, name
    assert {name: int(kernel_headers[name]) for name in KEYCODE_NAMES} == KEYCODE_NAMES
    assert keycode("KEY_LEFT") == KEY_LEFT and keycode("KEY_P") == KEY_P


def test_written_bytes_are_the_kernels_structs(kernel_headers: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "uinput"
    path.touch()
    ioctl = IoctlRecorder()
    outputs = UinputOutputs({0: "left"}, device=str(path), ioctl=ioctl)
    outputs.set(0, True)
    assert path.read_bytes() == bytes.fromhex(kernel_headers["press"]) + bytes.fromhex(kernel_headers["report"])
    assert ioctl.calls[2] == (UI_DEV_SETUP, bytes.fromhex(kernel_headers["setup"]))
    outputs.close()

    legacy_path = tmp_path / "legacy"
    legacy_path.touch()
    UinputOutputs({0: "left"}, device=str(legacy_path), ioctl=IoctlRecorder(fail={UI_DEV_SETUP: errno.ENOTTY})).close()
    assert legacy_path.read_bytes().startswith(bytes.fromhex(kernel_headers["legacy"]))
