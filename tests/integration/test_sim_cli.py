"""`gamerigctl sim` as a user meets it, and the virtual machine recovering from its faults.

Real parts throughout: the installed console script run as a child process and stopped with a real
SIGTERM, its stream opened with cv2.VideoCapture (FFmpeg), its pty driven by the real ADR2200 driver
(pyserial), its control server over real HTTP.  The recovery test runs the machine in-process (to
read the board's received bytes and contact log) but injects the faults through the same HTTP
control interface.  Timing is only held to what a busy shared machine keeps (the 2 s recovery of
the issue); key timing is the benchmark's (gamerigctl bench keys).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cv2
import pytest

from gamerig.daemon import ctl, sim
from gamerig.hardware.frames import open_source
from gamerig.hardware.frames.source import Backoff, FrameSource, FrameTimeout
from gamerig.hardware.keys import KeyOutput, KeyOutputError, LinkState, load_key_output_file, open_key_output
from gamerig.hardware.sim.faults import parse_fault
from gamerig.hardware.sim.machine import FAULTS, WIRING, Machine, MachineOptions
from gamerig.hardware.sim.target import TargetOptions

GAMERIGCTL = str(Path(sys.executable).parent / "gamerigctl")
CONFIGS = Path(__file__).resolve().parents[2] / "configs"
#: The frame source's retry delays, capped like the serial link's (0.5 s) so a camera that comes
#: back is reopened within 2 s however long it was gone (the default cap is 5 s).
RECONNECT = Backoff(initial=0.1, cap=0.5)
OPEN_PARAMS = [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, 3000, cv2.CAP_PROP_READ_TIMEOUT_MSEC, 3000]


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, f"gamerigctl sim printed nothing in {timeout} s"
    assert proc.stdout is not None
    return proc.stdout.readline()


@pytest.fixture
def sim_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], dict[str, Any], Path]]:
    """`gamerigctl sim --json` running in a child; yields it, its start-up line and its truth file."""
    truth = tmp_path / "truth.jsonl"
    proc = subprocess.Popen(
        [GAMERIGCTL, "sim", "--json", "--seed", "3", "--link", str(tmp_path / "relay"), "--truth", str(truth)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        info = json.loads(read_line(proc, timeout=15.0))
        yield proc, info, truth
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=2.0) as response:
        return json.loads(response.read())


def post_fault(control_url: str, spec: str) -> int:
    request = urllib.request.Request(f"{control_url}/fault", data=spec.encode(), method="POST")
    with urllib.request.urlopen(request, timeout=2.0) as response:
        return response.status


def test_stream_and_serial_path_drive_the_game_and_sigterm_leaves_nothing_behind(sim_process) -> None:
    proc, info, truth_file = sim_process
    link = Path(info["serial_path"])
    assert link.is_symlink() and os.path.realpath(link) == info["pty"]
    assert info["key_config"]["outputs"] == {key: output for output, key in WIRING.items()}

    capture = cv2.VideoCapture(info["stream_url"], cv2.CAP_FFMPEG, OPEN_PARAMS)
    try:
        ok, image = capture.read()
    finally:
        capture.release()
    assert ok and image.shape == (480, 640, 3)

    wait_for(lambda: get_json(f"{info['control_url']}/truth")["piece"], 3.0, "the first piece to spawn")
    with open_key_output(info["key_config"], "test") as keys:
        keys.press("left")
    received = wait_for(lambda: get_json(f"{info['control_url']}/received"), 3.0, "the game to read the key")
    assert [r["key"] for r in received] == ["left"]

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10.0) == 0, proc.stderr.read()
    assert not os.path.lexists(link)  # the board unplugged and removed its link
    port = int(info["stream_url"].split(":")[2].split("/")[0])
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()

    # The ground truth file (closed at exit) shows the key moving the piece one column left.
    records = [json.loads(line) for line in truth_file.read_text().splitlines()]
    frames = {r["frame"]: r for r in records if r["type"] == "frame"}
    (key,) = [r for r in records if r["type"] == "received"]
    before, after = frames[key["frame"] - 1]["piece"], frames[key["frame"]]["piece"]
    assert after["kind"] == before["kind"] and after["x"] == before["x"] - 1


@pytest.mark.parametrize(
    ("option", "named"),
    [(["--skin", "velvet"], "unknown skin 'velvet'"), (["--fault", "melt=3"], "unknown fault 'melt'")],
)
def test_a_bad_option_exits_2_naming_the_problem(tmp_path: Path, option: list[str], named: str) -> None:
    proc = subprocess.run(
        [GAMERIGCTL, "sim", "--link", str(tmp_path / "relay"), *option], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2
    assert named in proc.stderr and proc.stdout == ""
    assert not os.path.lexists(tmp_path / "relay")


@pytest.mark.parametrize(
    ("option", "named"),
    [
        (["--fault", "stick=12"], "relay output 0..7"),
        (["--fault", "unplug=0@3"], "fault 'unplug=0@3'"),
        (["--level", "0"], "level must be 1..10"),
        (["--truth", "/nonexistent/dir/truth.jsonl"], "/nonexistent/dir/truth.jsonl"),
    ],
)
def test_more_bad_options_are_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str], named: str
) -> None:
    """The same path in-process (a subprocess each costs seconds of imports on a busy machine)."""
    assert ctl.main(["sim", "--link", str(tmp_path / "relay"), *option]) == 2
    captured = capsys.readouterr()
    assert named in captured.err and captured.out == ""
    assert not os.path.lexists(tmp_path / "relay")


def test_a_link_that_another_simulator_holds_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "relay"
    link.symlink_to("/dev/null")  # a node that exists, as a running simulator's pty does
    assert ctl.main(["sim", "--link", str(link)]) == 2
    assert "another simulator is running" in capsys.readouterr().err
    assert link.is_symlink()  # left alone


def test_configs_sim_yaml_drives_the_default_simulator() -> None:
    config = load_key_output_file(CONFIGS / "sim.yaml")
    assert config.board == "adr2200" and config.port == sim.DEFAULT_LINK
    assert dict(config.outputs) == {key: output for output, key in WIRING.items()}


@pytest.mark.parametrize("board", sim.BOARDS)
def test_the_key_config_of_every_board_presses_the_wired_key(tmp_path: Path, board: str) -> None:
    with Machine(MachineOptions(board=board, link_path=str(tmp_path / "relay"))) as machine:
        with open_key_output(machine.key_config(), "test") as keys:
            keys.press("pause")  # output 5: beyond a 4-relay board, so the config must say 8
        # a write-only board (LCUS) acts after the driver returns: wait for the release edge
        deadline = time.monotonic() + 2.0
        while len(edges := machine.target.keyboard.edges()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert [(e.key, e.pressed) for e in edges] == [("pause", True), ("pause", False)]


def test_driver_and_frame_source_recover_from_unplug_and_camera_disconnect(tmp_path: Path) -> None:
    """Faults through the control interface; both sides come back by themselves within 2 s, and
    no relay closes while the port is gone (presses fail with nothing sent)."""
    states: list[tuple[LinkState, float]] = []
    options = MachineOptions(target=TargetOptions(camera_drop_probability=0.0), link_path=str(tmp_path / "relay"))
    with (
        Machine(options) as machine,
        open_key_output(machine.key_config(), "test", on_link_state=lambda s, _: states.append((s, time.monotonic()))) as keys,
        open_source(machine.target.url, backoff=RECONNECT) as frames,
    ):
        frames.read(timeout=5.0)
        keys.press("left")
        sent_before = len(machine.board.received())

        assert post_fault(machine.control.url, "unplug=1") == 204
        unplugged_at = time.monotonic()
        refused = 0
        while not (machine.board.plugged and refused):  # the driver keeps trying while the port is gone
            refused += not pressed(keys, "right")
            time.sleep(0.02)
            assert time.monotonic() - unplugged_at < 5.0, "the board never came back"
        replugged_at = time.monotonic()
        wait_for(lambda: pressed(keys, "rotate"), 2.0, "a press to succeed after the replug")
        assert time.monotonic() - replugged_at < 2.0

        closed_while_gone = [c for c in machine.contacts() if c.closed and unplugged_at <= c.t <= replugged_at]
        assert closed_while_gone == []
        after = machine.board.received()[sent_before:]
        assert after.index(b"MK0") < after.index(b"SK")  # the reconnect released everything first
        assert [s for s, _ in states][-2:] == [LinkState.LOST, LinkState.CONNECTED]

        assert post_fault(machine.control.url, "disconnect=2") == 204
        back_at = time.monotonic() + 2.0
        wait_for(lambda: fresh_frame(frames, back_at), 4.5, "a frame after the camera came back")
        assert time.monotonic() - back_at < 2.0
        assert frames.status().reconnects == 1


def pressed(keys: KeyOutput, key: str) -> bool:
    try:
        keys.press(key)
    except KeyOutputError:
        return False
    return True


def fresh_frame(frames: FrameSource, after: float) -> bool:
    try:
        return frames.read(timeout=0.2).timestamp > after
    except FrameTimeout:
        return False


def test_a_stuck_relay_holds_its_key_until_its_time_is_up_and_bad_faults_are_refused(tmp_path: Path) -> None:
    """A board fault from the start-up schedule (stick=2 for 0.6 s) and from the control server."""
    faults = (parse_fault("stick=2:0.6", FAULTS),)
    with Machine(MachineOptions(link_path=str(tmp_path / "relay"), faults=faults)) as machine:
        wait_for(lambda: machine.board.closed_outputs() == {2}, 1.0, "relay 2 to stick closed")
        assert "rotate" in machine.target.keyboard.pressed()  # wired across the rotate key
        wait_for(lambda: not machine.board.closed_outputs(), 2.0, "relay 2 to be released after 0.6 s")
        assert "rotate" not in machine.target.keyboard.pressed()

        assert post_fault(machine.control.url, "stick=5:open") == 204
        assert post_fault(machine.control.url, "unstick=5") == 204
        with pytest.raises(urllib.error.HTTPError) as refused:
            post_fault(machine.control.url, "stick=5:ajar")
        assert refused.value.code == 400 and "closed, open or a number of seconds" in refused.value.read().decode()
