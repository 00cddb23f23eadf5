"""Faults against the whole rig: real gamerigd, its four real services, the simulator's real
MJPEG stream and its virtual ADR2200 relay board over a real pty (tests/support/rig_sim.py).

One rig (level 5, preview) plays through the module; each test injects a fault during play and
checks the recovery from the simulator's side (its contact log and the keys its game read) and
from the bus (a thread records wd.*, predict.board and relay.state):

- kill -9 of camera, ai, watchdog and relay in turn: each is restarted (new pid, one more
  restart in status), pieces are dropped again after it, and every relay contact closed at the
  kill opened within 1 s of it (the relay is killed while a contact is closed); the watchdog's
  counters in status never go down (a restarted watchdog continues from its predecessor's last
  wd.state);
- a frozen camera (the simulator repeats its frame for 1.5 s): wd.halt naming the stale frames,
  nothing pressed while halted, wd.resume after the freeze and pieces dropped again; the halt's
  delay after the freeze is printed, not asserted against 3 frame periods (timing targets are the
  benchmark's);
- the serial cable pulled (until the relay reports the link lost, then 0.5 s more): nothing
  closes meanwhile, relay.state says connected after the replug, play goes on;
- 2% of key presses dropped by the target's keyboard (closed-loop play corrects them before the
  drop), then a junk row (so at least one placement goes wrong): every placement whose predicted
  board the game never had (a wrong placement) is followed by a wd.resync within RESYNC_WITHIN_S of its landing,
  and the ai is synced at the end;
- garbage published to the proxy (bad frames, non-JSON, bad schema, missing fields, on watched
  topics): counted as malformed, no service restarts, play goes on;
- through all of it, no contact stayed closed longer than keys.max_hold_ms;
- a game over (junk rows up to the top): the ai presses new_game once the last board has
  shown for play.new_game_after_s, and plays the new game;
- malformed configs: gamerigd exits 2 at once with one line naming the file and the key; a
  garbage calibration file makes the restarted camera say so in its status, without a crash loop.

Whole file about 100-120 s on the shared 2-core machine (most of it the rig starting and the ai
restarting).  Not covered here: CURVE tcp buses (test_bus_security.py), the 100-piece game and
the benchmark targets (helper J's end-to-end test and `gamerigctl bench rig`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
import zmq
from support.rig_sim import MachineRig

from gamerig.daemon.bus import Message, Subscriber
from gamerig.daemon.rig_config import NEW_GAME_KEY
from gamerig.daemon.sim_rig import gamerigd_command
from gamerig.hardware.sim.ground_truth import FrameTruth
from gamerig.hardware.sim.keyboard import KeyEdge
from gamerig.hardware.sim.machine import Contact

#: The issue's bound: no relay stays closed longer than this after a service is killed.
RELEASE_AFTER_KILL_S = 1.0
#: A wrong placement must be resynced within this long of its landing (the camera seeing it when
#: the next piece shows, the watchdog's check; a piece whose plan was dropped falls by gravity,
#: which can take 5 s at level 5, so the bound counts from the landing, not the plan).
RESYNC_WITHIN_S = 5.0
#: How long a recovery may take on the loaded machine (the ai compiles for seconds at start).
RECOVERY_S = 40.0
#: play.new_game_after_s of this module's rig (the default, 5 s, would only make the test longer).
NEW_GAME_AFTER_S = 1.0


class Recorder(threading.Thread):
    """Every wd.*, predict.board and relay.state message, with its arrival time."""

    def __init__(self, rig: MachineRig) -> None:
        super().__init__(daemon=True)
        self.context = zmq.Context()
        self.inbox = Subscriber(self.context, rig.endpoints, ["wd.", "predict.board", "relay.state"])
        assert self.inbox.wait_connected(5.0)
        self.messages: list[tuple[float, Message]] = []
        self.lock = threading.Lock()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            message = self.inbox.receive(0.05)
            if message is not None:
                with self.lock:
                    self.messages.append((time.monotonic(), message))

    def stop(self) -> None:
        self.done.set()
        self.join(2.0)
        self.inbox.close()
        self.context.term()

    def since(self, t: float, topic: str) -> list[Message]:
        with self.lock:
            return [m for arrived, m in self.messages if arrived >= t and m.topic == topic]

    def wait_for(self, t: float, topic: str, test: Callable[[dict[str, Any]], bool], timeout_s: float, what: str) -> Message:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = [m for m in self.since(t, topic) if test(m.body)]
            if found:
                return found[0]
            time.sleep(0.02)
        raise AssertionError(f"no {topic} within {timeout_s} s: {what}; last: {[m.body for m in self.since(t, topic)][-3:]}")


@pytest.fixture(scope="module")
def rig() -> Iterator[MachineRig]:
    with MachineRig(level=5, seed=11, play={"new_game_after_s": NEW_GAME_AFTER_S}) as rig:
        rig.calibrate()
        rig.machine.target.new_game()
        assert rig.request("play")["ok"]
        rig.wait_for(lambda: rig.drops() >= 3, RECOVERY_S, "three pieces dropped")
        yield rig


@pytest.fixture(scope="module")
def bus(rig: MachineRig) -> Iterator[Recorder]:
    recorder = Recorder(rig)
    recorder.start()
    yield recorder
    recorder.stop()


def longest_closure(contacts: list[Contact]) -> float:
    """The longest time any output stayed closed (one still closed counts until now)."""
    closed_at: dict[int, float] = {}
    longest = 0.0
    for contact in contacts:
        if contact.closed:
            closed_at.setdefault(contact.output, contact.t)
        elif contact.output in closed_at:
            longest = max(longest, contact.t - closed_at.pop(contact.output))
    now = time.monotonic()
    return max([longest, *(now - t for t in closed_at.values())])


def closed_after(contacts: list[Contact], t_kill: float) -> dict[int, float]:
    """For each output closed at ``t_kill``: how long after it the output opened (inf: still closed)."""
    state: dict[int, bool] = {}
    for contact in contacts:
        if contact.t > t_kill:
            break
        state[contact.output] = contact.closed
    opened = {output: float("inf") for output, closed in state.items() if closed}
    for contact in contacts:
        if contact.t > t_kill and not contact.closed and opened.get(contact.output) == float("inf"):
            opened[contact.output] = contact.t - t_kill
    return opened


def landing(frames: list[FrameTruth], t: float) -> float | None:
    """When the game's board first changed after ``t`` (the piece in play landed), None if not yet."""
    before = [frame.board for frame in frames if frame.t <= t]
    for frame in frames:
        if frame.t > t and before and frame.board != before[-1]:
            return frame.t
    return None


def playing_again(rig: MachineRig, since: float, what: str) -> None:
    rig.wait_for(lambda: rig.drops(since) >= 2, RECOVERY_S, f"two pieces dropped after {what}")


@pytest.mark.parametrize("name", ["camera", "ai", "watchdog", "relay"])
def test_kill_9_of_a_service_during_play(rig: MachineRig, bus: Recorder, name: str) -> None:
    playing_again(rig, time.monotonic() - 3.0, "the previous test")
    status = rig.status()
    before, counted = status["services"][name], status["watchdog"]["counters"]
    if name == "relay":  # kill it holding a key: the case the 1 s bound is about
        deadline = time.monotonic() + 10.0
        while not ((contacts := rig.machine.contacts()) and contacts[-1].closed):
            assert time.monotonic() < deadline, f"no key pressed for 10 s: {rig.status()} {rig.machine.target.truth.latest()}"
            time.sleep(0.002)
    os.kill(before["pid"], signal.SIGKILL)
    killed_at = time.monotonic()

    def restarted() -> bool:
        service = rig.status()["services"][name]
        return service["pid"] not in (None, before["pid"]) and service["restarts"] == before["restarts"] + 1 and service["state"] != "fault"

    rig.wait_for(restarted, RECOVERY_S, f"{name} restarted")
    playing_again(rig, time.monotonic(), f"{name} was killed")
    released = closed_after(rig.machine.contacts(), killed_at)
    print(f"\nkill -9 {name}: outputs closed at the kill opened after {released} s")
    if name == "relay":
        assert released, "no output was closed at the kill"
    assert all(delay <= RELEASE_AFTER_KILL_S for delay in released.values()), released
    status = rig.status()
    assert status["game"]["synced"] is True
    for key in ("halts", "resyncs", "checks", "stale_frames"):  # a restarted watchdog carries on counting
        assert status["watchdog"]["counters"][key] >= counted[key], (key, status["watchdog"]["counters"], counted)


def test_frozen_camera_halts_play_and_play_resumes(rig: MachineRig, bus: Recorder) -> None:
    playing_again(rig, time.monotonic() - 3.0, "the previous test")
    frozen_at = time.monotonic()
    rig.machine.target.freeze_camera(1.5)
    halt = bus.wait_for(frozen_at, "wd.halt", lambda body: "frame" in body["reason"], 3.0, "stale frames")
    resume = bus.wait_for(frozen_at, "wd.resume", lambda body: True, 10.0, "after the freeze")
    print(f"\nfrozen camera: halted {halt.t_mono - frozen_at:.3f} s after the freeze ({halt.body['reason']}),"
          f" resumed {resume.t_mono - frozen_at:.3f} s after it")
    assert halt.t_mono < frozen_at + 1.5  # during the freeze
    assert resume.t_mono > frozen_at + 1.5  # not before the camera moves again
    halted = [c for c in rig.machine.contacts() if halt.t_mono + 0.05 < c.t < resume.t_mono]  # one press in flight may end
    assert not [c for c in halted if c.closed], f"pressed while halted: {halted}"
    playing_again(rig, resume.t_mono, "the freeze")


def test_serial_unplug_and_replug_recovered(rig: MachineRig, bus: Recorder) -> None:
    playing_again(rig, time.monotonic() - 3.0, "the previous test")
    unplugged_at = time.monotonic()
    rig.machine.board.unplug()
    try:
        bus.wait_for(unplugged_at, "relay.state", lambda body: body["link"] == "lost", 5.0, "the link lost")
    finally:
        time.sleep(0.5)
        replugged_at = time.monotonic()
        rig.machine.board.replug()
    bus.wait_for(replugged_at, "relay.state", lambda body: body["link"] == "connected", 10.0, "the link back")
    # (the board drops its relays when unplugged: an opening then is the board's, a closing would be a bug)
    assert not [c for c in rig.machine.contacts() if unplugged_at < c.t < replugged_at and c.closed], "closed while unplugged"
    playing_again(rig, replugged_at, "the replug")
    assert rig.status()["services"]["relay"]["state"] != "fault"


def test_dropped_key_presses_are_detected_and_resynced(rig: MachineRig, bus: Recorder) -> None:
    playing_again(rig, time.monotonic() - 3.0, "the previous test")
    start = time.monotonic()

    def lost() -> list[KeyEdge]:
        return [e for e in rig.machine.target.truth.edges() if e.dropped and e.pressed and e.t >= start]

    try:
        rig.machine.target.set_drop_probability(0.02)
        rig.wait_for(lambda: len(lost()) >= 2 and rig.drops(start) >= 15, 60.0, "two presses lost")
    finally:
        rig.machine.target.set_drop_probability(0.0)
    # closed-loop play corrects lost presses before the drop (even 30% gave no wrong placement in
    # 29 pieces), so a junk row makes sure one placement goes wrong and the check cannot pass empty
    junk_at = time.monotonic()
    rig.machine.target.add_junk_rows(1)
    playing_again(rig, time.monotonic(), "the junk row")
    end = time.monotonic()
    time.sleep(RESYNC_WITHIN_S)
    frames = [frame for frame in rig.machine.target.truth.frames() if frame.t >= start - 1.0]
    truth_boards = {frame.board for frame in frames}
    predictions: dict[str, Message] = {}
    for message in bus.since(start, "predict.board"):
        predictions[message.body["plan_id"]] = message  # a re-plan replaces its root's prediction
    landed = {plan: landing(frames, m.t_mono) for plan, m in predictions.items() if m.t_mono < end}
    wrong = [predictions[plan] for plan, t in landed.items() if t is not None and tuple(predictions[plan].body["board"]) not in truth_boards]
    resyncs = [m.t_mono for m in bus.since(start, "wd.resync")]
    print(f"\n2% dropped presses and a junk row: {len(lost())} presses lost, {rig.drops(start)} pieces, {len(predictions)} predictions,"
          f" {len(wrong)} wrong placements, {len(resyncs)} resyncs")
    for message in wrong:
        landed_at = landed[message.body["plan_id"]]
        assert any(message.t_mono < t <= landed_at + RESYNC_WITHIN_S for t in resyncs), (
            f"the wrong placement of plan {message.body['plan_id']} at {message.t_mono - start:.2f} s (landed at"
            f" {landed_at - start:.2f} s) was not resynced;"
            f" wrong at {[round(m.t_mono - start, 2) for m in wrong]}, resyncs at {[round(t - start, 2) for t in resyncs]},"
            f" junk at {junk_at - start:.2f}, {bus.since(start, 'wd.state')[-1].body}, plans"
            f" {[(m.body['plan_id'], round(m.t_mono - start, 2)) for m in predictions.values()][-8:]}")
    assert wrong, "no placement went wrong: nothing was tested"
    assert rig.status()["game"]["synced"] is True


def test_malformed_bus_messages_are_counted_and_harmless(rig: MachineRig, bus: Recorder) -> None:
    playing_again(rig, time.monotonic() - 3.0, "the previous test")
    before = rig.status()
    context = zmq.Context()
    garbage = context.socket(zmq.PUB)
    garbage.setsockopt(zmq.LINGER, 0)
    garbage.connect(rig.endpoints.publish)
    time.sleep(0.3)  # the proxy's XSUB learns the subscriptions
    sent_at = time.monotonic()
    frames = [
        [b"hb.ai"],  # one frame
        [b"hb.relay", b"not json"],
        [b"hb.camera", b'{"v": 99, "source": "x", "seq": 1, "t_mono": 0, "t_wall": 0, "body": {}}'],
        [b"obs.frame", json.dumps({"v": 1, "source": "camera"}).encode()],
        [b"wd.halt", b"\xff\xfe"],
        [b"ctl.stop", b"[1, 2, 3]"],
        [b"plan.keys", b"{}", b"extra"],
    ]
    for _ in range(20):
        for message in frames:
            garbage.send_multipart(message)
    garbage.close()
    context.term()
    playing_again(rig, sent_at, "the garbage")
    after = rig.status()
    for name, service in after["services"].items():
        assert service["restarts"] == before["services"][name]["restarts"], name
        assert service["pid"] == before["services"][name]["pid"], name
    assert after["bus"]["gamerigd"]["malformed"] > before["bus"]["gamerigd"]["malformed"]
    assert after["watchdog"]["counters"]["malformed"] > before["watchdog"]["counters"]["malformed"]
    # a late camera frame on the busy shared machine can halt play on its own (stale frames): not
    # the garbage's doing; a halt for anything else (a dead service, mismatches) would be
    halts = [m.body["reason"] for m in bus.since(sent_at, "wd.halt") if "no new camera frame" not in m.body["reason"]]
    assert not halts, f"garbage halted play: {halts}"


def test_after_a_game_over_the_rig_starts_the_next_game_and_plays_it(rig: MachineRig) -> None:
    """The pile lifted to the top ends the game; once its last board has shown for
    play.new_game_after_s, the ai presses new_game, once, and plays the new game."""
    playing_again(rig, time.monotonic() - 3.0, "the previous test")
    malformed = rig.status()["watchdog"]["counters"]["malformed"]
    truth = rig.machine.target.truth
    game = truth.latest().game
    rig.machine.target.add_junk_rows(len(truth.latest().board))  # every row: the next piece cannot come in
    rig.wait_for(lambda: truth.latest().over, 10.0, "the game over")
    over_at = next(frame.t for frame in truth.frames() if frame.game == game and frame.over)
    rig.wait_for(lambda: truth.latest().game == game + 1, 30.0, "the next game")
    presses = [key.t for key in truth.received() if key.key == NEW_GAME_KEY and key.t >= over_at]
    print(f"\ngame over: new_game read {[round(t - over_at, 2) for t in presses]} s after it")
    assert len(presses) == 1 and presses[0] - over_at >= NEW_GAME_AFTER_S, presses
    playing_again(rig, presses[0], "the new game")
    status = rig.status()
    assert status["services"]["ai"]["stats"]["new_games"] == 1
    assert status["watchdog"]["counters"]["malformed"] == malformed  # a plan.keys with no piece is no fault


def test_malformed_configs_give_clear_errors_and_no_crash_loop(rig: MachineRig, tmp_path: Path) -> None:
    good = yaml.safe_load(rig.config_path.read_text())
    cases = {"unknown_key": ("watchdog", "stale_periods", 3), "bad_value": ("watchdog", "stale_frame_periods", -1)}
    for name, (section, key, value) in cases.items():
        config = json.loads(json.dumps(good))
        config[section][key] = value
        config["bus"]["runtime_dir"] = str(tmp_path / name)
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config))
        result = subprocess.run([*gamerigd_command(), "--config", str(path)], capture_output=True, text=True, timeout=30)
        assert result.returncode == 2, result
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and f"{section}.{key}" in lines[0], lines

    # a garbage calibration file: the restarted camera says so, and keeps running
    rig.calibration.write_text("well: [unclosed\n")
    camera = rig.status()["services"]["camera"]
    os.kill(camera["pid"], signal.SIGKILL)

    def says_why() -> bool:
        service = rig.status()["services"]["camera"]
        return service["pid"] not in (None, camera["pid"]) and str(rig.calibration) in (service["message"] or "")

    rig.wait_for(says_why, RECOVERY_S, "the camera names the bad calibration file")
    time.sleep(3.0)
    service = rig.status()["services"]["camera"]
    assert service["restarts"] == camera["restarts"] + 1 and service["pid"] is not None, service


def test_no_contact_was_ever_held_past_max_hold(rig: MachineRig) -> None:
    """Through every fault above (run last): the longest closure stayed under keys.max_hold_ms."""
    max_hold_s = yaml.safe_load(rig.config_path.read_text())["keys"]["max_hold_ms"] / 1000
    assert longest_closure(rig.machine.contacts()) < max_hold_s + 0.1
