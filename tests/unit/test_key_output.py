"""KeyOutput's rules and the key-output config, on an in-memory backend that records each call.

The relay boards and their ptys are tested in tests/integration/test_relay_drivers.py; here the
backend is a plain Outputs implementation so that what KeyOutput itself decides (timing, refusals,
the max-hold guard, release on failure) is visible call by call.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gamerig.daemon.config_errors import ConfigError
from gamerig.hardware.keys import (
    KeyOutput,
    KeyOutputConfig,
    KeyOutputError,
    load_key_output_config,
    load_key_output_file,
)

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "keys"
WIRING = {"left": 0, "right": 1, "rotate": 2, "drop": 3}


class MemoryOutputs:
    """An Outputs backend that keeps its state in memory and logs (time, call, args)."""

    name = "memory"

    def __init__(self, fail_on: int | None = None) -> None:
        self.closed_outputs: set[int] = set()
        self.calls: list[tuple[float, str, Any]] = []
        self.fail_on = fail_on
        self._lock = threading.Lock()

    def set(self, output: int, on: bool) -> None:
        with self._lock:
            self.calls.append((time.monotonic(), "set", (output, on)))
            (self.closed_outputs.add if on else self.closed_outputs.discard)(output)
        if on and output == self.fail_on:
            raise KeyOutputError(f"memory: output {output} failed after closing")

    def release_all(self) -> None:
        with self._lock:
            self.calls.append((time.monotonic(), "release_all", None))
            self.closed_outputs.clear()

    def read_back(self) -> frozenset[int] | None:
        return frozenset(self.closed_outputs)

    def close(self) -> None:
        self.release_all()
        self.calls.append((time.monotonic(), "close", None))

    def sets(self) -> list[tuple[float, tuple[int, bool]]]:
        return [(t, args) for t, call, args in self.calls if call == "set"]


def key_output(backend: MemoryOutputs, **overrides: Any) -> KeyOutput:
    return KeyOutput(backend, KeyOutputConfig(board="xtest", outputs=WIRING, **overrides))


class TestConfig:
    @pytest.mark.parametrize("name", ["adr2200", "numato", "kmtronic", "lcus", "uinput", "xtest"])
    def test_example_configs_load(self, name: str) -> None:
        config = load_key_output_file(CONFIGS / f"{name}.yaml")
        assert config.board == name
        assert {"left", "right", "rotate", "drop"} <= set(config.outputs)
        assert (config.hold_ms, config.gap_ms) == (60, 60)

    def test_defaults_and_record_path_relative_to_the_file(self, tmp_path: Path) -> None:
        config = load_key_output_config(
            {"board": "adr2200", "port": "/dev/pts/9", "outputs": {"left": 0}, "record": "sent.bin"},
            tmp_path / "keys.yaml",
        )
        assert (config.baud, config.hold_ms, config.gap_ms, config.max_hold_ms) == (9600, 60, 60, 1000)
        assert config.record == tmp_path / "sent.bin"
        assert config.relay_channels == 8

    @pytest.mark.parametrize(
        "changes, key, reason",
        [
            ({"speed": 3}, "speed", "unknown key"),
            ({"board": "ardr2200"}, "board", "unknown board 'ardr2200'"),
            ({"board": 7}, "board", "must be one of"),
            ({"port": None}, "port", "required for a adr2200"),
            ({"hold_ms": 20}, "hold_ms", "at least 30 ms"),
            ({"gap_ms": 29.9}, "gap_ms", "at least 30 ms"),
            ({"hold_ms": "fast"}, "hold_ms", "a number of milliseconds"),
            ({"hold_ms": 500, "max_hold_ms": 400}, "hold_ms", "exceeds max_hold_ms 400"),
            ({"max_hold_ms": 120_000}, "max_hold_ms", "at most 60000"),
            ({"outputs": {"left": 0, "right": 0}}, "outputs.right", "output 0 is already 'left'"),
            ({"outputs": {"left": 8}}, "outputs.left", "8-relay adr2200 has outputs 0..7"),
            ({"outputs": {"left": -1}}, "outputs.left", "output number >= 0"),
            ({"outputs": {"left": True}}, "outputs.left", "output number >= 0"),
            ({"outputs": {}}, "outputs", "at least one key"),
            ({"outputs": [0, 1]}, "outputs", "must map key names"),
            ({"address": 12}, "address", "0..9"),
            ({"channels": 9}, "channels", "1..8 relays"),
            ({"baud": 0}, "baud", "positive"),
            ({"device": "/dev/uinput"}, "device", "only for the uinput"),
            ({"board": "numato", "address": 3}, "address", "only the adr2200"),
            ({"board": "uinput", "port": None, "record": "x.bin"}, "record", "only for serial relay boards"),
        ],
    )
    def test_bad_values_name_file_key_and_reason(self, changes: dict[str, Any], key: str, reason: str) -> None:
        mapping = {"board": "adr2200", "port": "/dev/ttyUSB0", "outputs": {"left": 0, "right": 1}} | changes
        mapping = {k: v for k, v in mapping.items() if not (k == "port" and v is None)}
        with pytest.raises(ConfigError) as caught:
            load_key_output_config(mapping, "rig.yaml", section="keys")
        assert caught.value.path == Path("rig.yaml")
        assert caught.value.key == f"keys.{key}"
        assert reason in caught.value.reason
        assert str(caught.value).startswith(f"rig.yaml: keys.{key}: ")

    @pytest.mark.parametrize(
        "mapping, key, reason",
        [
            ({"board": "xtest", "outputs": {"left": 0, "jump": 1}}, "keysyms", "'jump' (output 1) has no keysym"),
            ({"board": "xtest", "outputs": {"left": 0}, "keysyms": {"left": "No_Such_Sym"}}, "keysyms.left", "unknown keysym"),
            ({"board": "xtest", "outputs": {"left": 0}, "keysyms": {"right": "Right"}}, "keysyms.right", "not a key in outputs"),
            ({"board": "uinput", "outputs": {"left": 0}, "keycodes": {"left": "KEY_NOPE"}}, "keycodes.left", "unknown key name"),
            ({"board": "uinput", "outputs": {"left": 0}, "keysyms": {"left": "Left"}}, "keysyms", "only for the xtest"),
        ],
    )
    def test_virtual_keyboard_key_tables_are_checked_at_load(self, mapping: dict[str, Any], key: str, reason: str) -> None:
        with pytest.raises(ConfigError) as caught:
            load_key_output_config(mapping, "keys.yaml")
        assert caught.value.key == key and reason in caught.value.reason

    def test_virtual_keyboard_key_tables_extend_the_defaults(self) -> None:
        config = load_key_output_config(
            {"board": "xtest", "outputs": {"left": 0, "jump": 1}, "keysyms": {"jump": "space"}}, "keys.yaml"
        )
        assert config.keysyms == {"jump": "space"}

    def test_missing_and_non_mapping(self) -> None:
        with pytest.raises(ConfigError, match="k.yaml: outputs: required"):
            load_key_output_config({"board": "xtest"}, "k.yaml")
        with pytest.raises(ConfigError, match="k.yaml: expected a mapping"):
            load_key_output_config(None, "k.yaml")

    def test_limits_hold_for_configs_built_in_code(self) -> None:
        with pytest.raises(ValueError, match="hold_ms: must be at least 30 ms"):
            KeyOutputConfig(board="xtest", outputs=WIRING, hold_ms=10)


class TestKeyOutput:
    def test_releases_everything_on_open_and_close(self) -> None:
        backend = MemoryOutputs()
        backend.closed_outputs.add(2)
        with key_output(backend):
            assert backend.closed_outputs == set()
            assert backend.calls[0][1] == "release_all"
        assert [call for _, call, _ in backend.calls[-2:]] == ["release_all", "close"]

    def test_press_holds_then_waits_the_gap(self) -> None:
        backend = MemoryOutputs()
        with key_output(backend) as keys:
            first = keys.press("left")
            second = keys.press("right", hold_ms=45)
        (t0, a), (t1, b), (t2, c), (t3, d) = backend.sets()
        assert [a, b, c, d] == [(0, True), (0, False), (1, True), (1, False)]
        # a hold runs from just before the close command is sent (PressRecord.down_t) to the open
        # sent: the board records the close a little later when the machine is busy
        assert t0 >= first.down_t and t2 >= second.down_t
        assert t1 - first.down_t >= 0.060 and t3 - second.down_t >= 0.045
        assert t2 - t1 >= 0.060  # the gap since the last release
        assert first.measured_hold_ms >= 60 and second.hold_ms == 45
        assert second.waited and second.gap_s is not None and second.gap_s >= 0.060

    def test_refuses_short_long_unknown_and_held_keys(self) -> None:
        backend = MemoryOutputs()
        with key_output(backend, max_hold_ms=200) as keys:
            with pytest.raises(ValueError, match="hold_ms must be 30..200"):
                keys.press("left", hold_ms=29)
            with pytest.raises(ValueError, match="hold_ms must be 30..200"):
                keys.press("left", hold_ms=201)
            with pytest.raises(ValueError, match="unknown key 'jump'"):
                keys.press("jump")
            keys.down("drop")
            with pytest.raises(ValueError, match="'drop' is held down"):
                keys.press("drop")
            assert backend.sets() and all(args == (3, True) for _, args in backend.sets())
        with pytest.raises(KeyOutputError, match="closed"):
            keys.press("left")

    def test_state_follows_down_and_up(self) -> None:
        backend = MemoryOutputs()
        with key_output(backend) as keys:
            keys.down("rotate")
            assert keys.state() == {"left": False, "right": False, "rotate": True, "drop": False}
            keys.up("rotate")
            assert not any(keys.state().values())
            assert backend.closed_outputs == set()

    def test_guard_releases_a_key_the_caller_never_lets_go(self) -> None:
        backend = MemoryOutputs()
        with key_output(backend, max_hold_ms=100) as keys:
            keys.down("left")
            deadline = time.monotonic() + 2.0
            while backend.closed_outputs and time.monotonic() < deadline:
                time.sleep(0.005)
            (t_down, _), (t_up, released) = backend.sets()
            assert released == (0, False)
            assert 0.100 <= t_up - t_down < 1.0
            assert keys.state()["left"] is False
            assert keys.timing_stats().guard_releases == 1

    def test_a_failure_after_closing_releases_before_raising(self) -> None:
        backend = MemoryOutputs(fail_on=1)
        with key_output(backend) as keys:
            with pytest.raises(KeyOutputError, match="output 1 failed"):
                keys.press("right")
            assert backend.closed_outputs == set()
            assert keys.state()["right"] is False

    def test_an_exception_mid_hold_releases(self) -> None:
        backend = MemoryOutputs()

        def interrupt(signum: int, frame: object) -> None:
            assert backend.closed_outputs == {0}, "the alarm should come mid-hold"
            raise RuntimeError("interrupted mid-press")

        previous = signal.signal(signal.SIGALRM, interrupt)
        try:
            with key_output(backend) as keys:
                signal.setitimer(signal.ITIMER_REAL, 0.1)
                with pytest.raises(RuntimeError, match="interrupted mid-press"):
                    keys.press("left", hold_ms=800)
                assert backend.closed_outputs == set()
                assert backend.sets()[-1][1] == (0, False)
                assert keys.state()["left"] is False
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def test_timing_stats_summarise_the_presses(self) -> None:
        backend = MemoryOutputs()
        with key_output(backend, hold_ms=30, gap_ms=30) as keys:
            for key in ("left", "right", "left"):
                keys.press(key)
            stats = keys.timing_stats()
        assert stats.presses == 3 and stats.hold_error.count == 3 and stats.gap_error.count == 2
        assert stats.hold_error.max_ms >= stats.hold_error.p99_ms >= stats.hold_error.p50_ms >= 0
        records = keys.presses()
        assert [r.key for r in records] == ["left", "right", "left"]
        assert stats.hold_error.max_ms == pytest.approx(max(abs(r.hold_error_ms) for r in records))
