"""Key-output configuration: which device presses the keys, which output is which key, and timing.

A YAML mapping such as configs/keys/adr2200.yaml becomes a KeyOutputConfig. Every key is checked;
unknown keys are errors; every problem is a ConfigError naming the file, the dotted key and the
reason. Limits that hold however a config is built (timing floors, max_hold_ms >= hold_ms) live in
KeyOutputConfig itself, so a config made in code cannot bypass them either.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gamerig.daemon.config_errors import ConfigError, load_yaml
from gamerig.hardware.keys.relay_protocols import PROTOCOLS

SERIAL_BOARDS = tuple(PROTOCOLS)
VIRTUAL_KEYBOARDS = ("uinput", "xtest")
BOARDS = SERIAL_BOARDS + VIRTUAL_KEYBOARDS

#: No hold or gap below this: relay operate + bounce + keyboard debounce + USB poll + a game frame
#: add up to 45-60 ms (hardware.md section 3), so less than 30 ms is lost presses, not speed.
MIN_TIME_MS = 30.0
#: Longest max_hold_ms accepted: a guard that lets a key stay down for more than a minute guards nothing.
MAX_GUARD_MS = 60_000.0

DEFAULT_HOLD_MS = 60.0
DEFAULT_GAP_MS = 60.0
DEFAULT_MAX_HOLD_MS = 1_000.0
DEFAULT_BAUD = 9600

ALLOWED_KEYS = frozenset(
    ("board", "port", "baud", "address", "channels", "outputs", "hold_ms", "gap_ms", "max_hold_ms", "record")
    + ("device", "keycodes", "display", "keysyms")
)


class ConfigValueError(ValueError):
    """A KeyOutputConfig field is out of range; `key` names the field."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}")


@dataclass(frozen=True)
class KeyOutputConfig:
    """Everything needed to open a key output.

    board: one of BOARDS. outputs: key name -> output number (zero-based).
    port/baud/address/channels/record: serial boards only (address: ADR2200's RS-485 prefix;
    channels: the board's relay count, None for the protocol's default; record: a file that
    receives every byte sent, truncated at open). device, keycodes: uinput only (None: /dev/uinput; key name -> Linux
    key code or KEY_* name, over the backend's defaults). display, keysyms: xtest only (None:
    $DISPLAY; key name -> X keysym or its name, over the defaults).
    Times in milliseconds.
    """

    board: str
    outputs: Mapping[str, int]
    port: str | None = None
    baud: int = DEFAULT_BAUD
    address: int | None = None
    channels: int | None = None
    hold_ms: float = DEFAULT_HOLD_MS
    gap_ms: float = DEFAULT_GAP_MS
    max_hold_ms: float = DEFAULT_MAX_HOLD_MS
    record: Path | None = None
    device: str | None = None
    keycodes: Mapping[str, int | str] | None = None
    display: str | None = None
    keysyms: Mapping[str, int | str] | None = None

    def __post_init__(self) -> None:
        if self.board not in BOARDS:
            raise ConfigValueError("board", f"unknown board {self.board!r} (known: {', '.join(BOARDS)})")
        serial = self.board in SERIAL_BOARDS
        if serial and not self.port:
            raise ConfigValueError("port", f"required for a {self.board} board (e.g. /dev/ttyUSB0)")
        if not serial:
            for name in ("port", "address", "channels", "record"):
                if getattr(self, name) is not None:
                    raise ConfigValueError(name, f"only for serial relay boards, not {self.board}")
        if self.device is not None and self.board != "uinput":
            raise ConfigValueError("device", "only for the uinput keyboard")
        if self.display is not None and self.board != "xtest":
            raise ConfigValueError("display", "only for the xtest keyboard")
        if self.keycodes is not None and self.board != "uinput":
            raise ConfigValueError("keycodes", "only for the uinput keyboard")
        if self.keysyms is not None and self.board != "xtest":
            raise ConfigValueError("keysyms", "only for the xtest keyboard")
        if self.address is not None and self.board != "adr2200":
            raise ConfigValueError("address", "only the adr2200 has an RS-485 address")
        if self.address is not None and not 0 <= self.address <= 9:
            raise ConfigValueError("address", f"must be 0..9, got {self.address}")
        if self.baud <= 0:
            raise ConfigValueError("baud", f"must be positive, got {self.baud}")
        if serial:
            limit = PROTOCOLS[self.board].MAX_CHANNELS
            if self.channels is not None and not 1 <= self.channels <= limit:
                raise ConfigValueError("channels", f"a {self.board} has 1..{limit} relays, got {self.channels}")
        self._check_outputs()
        self._check_timing()
        if not serial:
            self._check_key_codes()

    @property
    def relay_channels(self) -> int | None:
        """The relay count of a serial board (its protocol's default unless configured)."""
        if self.board not in SERIAL_BOARDS:
            return None
        return self.channels or PROTOCOLS[self.board].channels

    def _check_outputs(self) -> None:
        if not self.outputs:
            raise ConfigValueError("outputs", "must map at least one key name to an output number")
        taken: dict[int, str] = {}
        channels = self.relay_channels
        for key, output in self.outputs.items():
            if not isinstance(key, str) or not key:
                raise ConfigValueError("outputs", f"key names must be non-empty strings, got {key!r}")
            if isinstance(output, bool) or not isinstance(output, int) or output < 0:
                raise ConfigValueError(f"outputs.{key}", f"must be an output number >= 0, got {output!r}")
            if channels is not None and output >= channels:
                raise ConfigValueError(f"outputs.{key}", f"a {channels}-relay {self.board} has outputs 0..{channels - 1}")
            if output in taken:
                raise ConfigValueError(f"outputs.{key}", f"output {output} is already {taken[output]!r}")
            taken[output] = key

    def _check_key_codes(self) -> None:
        """Every wired key must have a key code (defaults or the configured table); the virtual
        keyboard modules own the tables, imported here only for a virtual keyboard."""
        wiring = {output: key for key, output in self.outputs.items()}
        if self.board == "uinput":
            from gamerig.hardware.keys.uinput import wired_keycodes as wired_codes

            table, name = self.keycodes, "keycodes"
        else:
            from gamerig.hardware.keys.xtest import wired_keysyms as wired_codes

            table, name = self.keysyms, "keysyms"
        for key, code in (table or {}).items():
            if key not in self.outputs:
                raise ConfigValueError(f"{name}.{key}", f"not a key in outputs ({', '.join(self.outputs)})")
            try:
                wired_codes({self.outputs[key]: key}, {key: code})
            except ValueError as exc:
                raise ConfigValueError(f"{name}.{key}", str(exc)) from None
        try:  # a wired key with neither a default nor a configured code
            wired_codes(wiring, table)
        except ValueError as exc:
            raise ConfigValueError(name, str(exc)) from None

    def _check_timing(self) -> None:
        for name in ("hold_ms", "gap_ms", "max_hold_ms"):
            if getattr(self, name) < MIN_TIME_MS:
                raise ConfigValueError(name, f"must be at least {MIN_TIME_MS:g} ms, got {getattr(self, name):g}")
        if self.max_hold_ms > MAX_GUARD_MS:
            raise ConfigValueError("max_hold_ms", f"must be at most {MAX_GUARD_MS:g} ms, got {self.max_hold_ms:g}")
        if self.hold_ms > self.max_hold_ms:
            raise ConfigValueError("hold_ms", f"{self.hold_ms:g} exceeds max_hold_ms {self.max_hold_ms:g}")


def load_key_output_config(mapping: Any, path: Path | str, *, section: str = "") -> KeyOutputConfig:
    """Validate a parsed YAML mapping into a KeyOutputConfig.

    `path` is the file it came from: named in errors, and the base of a relative `record` path.
    `section` is the dotted prefix of the mapping inside its file ("keys" if it sits under `keys:`).
    Raises ConfigError(path, "<section>.<key>", reason) for every bad or unknown key.
    """
    path = Path(path)
    prefix = f"{section}." if section else ""
    if not isinstance(mapping, Mapping):
        raise ConfigError(path, section or None, f"expected a mapping with board and outputs, got {type(mapping).__name__}")
    unknown = sorted(set(map(str, mapping)) - ALLOWED_KEYS)
    if unknown:
        raise ConfigError(path, prefix + unknown[0], f"unknown key (allowed: {', '.join(sorted(ALLOWED_KEYS))})")
    for required in ("board", "outputs"):
        if required not in mapping:
            raise ConfigError(path, prefix + required, "required")

    def typed(key: str, kinds: tuple[type, ...], what: str) -> Any:
        value = mapping.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kinds)):
            raise ConfigError(path, prefix + key, f"must be {what}, got {value!r}")
        return value

    outputs = mapping["outputs"]
    if not isinstance(outputs, Mapping):
        raise ConfigError(path, prefix + "outputs", f"must map key names to output numbers, got {outputs!r}")
    number, milliseconds = (int,), (int, float)
    values: dict[str, Any] = {
        "board": typed("board", (str,), f"one of {', '.join(BOARDS)}"),
        "outputs": dict(outputs),
        "port": typed("port", (str,), "a device path"),
        "baud": typed("baud", number, "a whole number"),
        "address": typed("address", number, "a whole number 0..9"),
        "channels": typed("channels", number, "a whole number of relays"),
        "hold_ms": typed("hold_ms", milliseconds, "a number of milliseconds"),
        "gap_ms": typed("gap_ms", milliseconds, "a number of milliseconds"),
        "max_hold_ms": typed("max_hold_ms", milliseconds, "a number of milliseconds"),
        "record": typed("record", (str,), "a file path"),
        "device": typed("device", (str,), "a device path"),
        "keycodes": typed("keycodes", (Mapping,), "a mapping of key name to key code"),
        "display": typed("display", (str,), "an X display name such as ':0'"),
        "keysyms": typed("keysyms", (Mapping,), "a mapping of key name to keysym"),
    }
    if values["record"] is not None:
        values["record"] = path.parent / Path(values["record"]).expanduser()
    given = {key: value for key, value in values.items() if value is not None}  # absent: the defaults
    try:
        return KeyOutputConfig(**given)
    except ConfigValueError as exc:
        raise ConfigError(path, prefix + exc.key, exc.reason) from exc


def load_key_output_file(path: Path | str) -> KeyOutputConfig:
    """Read a key-output YAML file (such as configs/keys/adr2200.yaml) into a KeyOutputConfig."""
    path = Path(path)
    return load_key_output_config(load_yaml(path), path)
