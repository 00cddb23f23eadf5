"""Key outputs: everything that presses the target machine's keys (relay boards, virtual keyboards).

open_key_output(config, path) is the one entry point: it builds the configured backend (a serial
relay board, or the uinput / XTEST virtual keyboards, imported only when asked for) and wraps it in
a KeyOutput, which enforces timing and safety.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gamerig.hardware.keys.config import (
    SERIAL_BOARDS,
    KeyOutputConfig,
    load_key_output_config,
    load_key_output_file,
)
from gamerig.hardware.keys.key_output import KeyOutput, PressRecord, TimingStats
from gamerig.hardware.keys.outputs import KeyOutputError, Outputs
from gamerig.hardware.keys.relay_boards import ReadbackMismatch, RelayBoard
from gamerig.hardware.keys.relay_protocols import PROTOCOLS
from gamerig.hardware.keys.serial_link import LinkSettings, LinkState, PortLost, StateCallback

__all__ = [
    "KeyOutput",
    "KeyOutputConfig",
    "KeyOutputError",
    "LinkState",
    "Outputs",
    "PortLost",
    "PressRecord",
    "ReadbackMismatch",
    "RelayBoard",
    "TimingStats",
    "build_outputs",
    "load_key_output_config",
    "load_key_output_file",
    "open_key_output",
]


def build_outputs(config: KeyOutputConfig, *, on_link_state: StateCallback | None = None) -> Outputs:
    """The configured backend, opened (and with everything released). on_link_state hears a serial
    board's connection changes (lost, connected again); the log always does."""
    if config.board in SERIAL_BOARDS:
        protocol_class = PROTOCOLS[config.board]
        options: dict[str, Any] = {"channels": config.relay_channels}
        if config.board == "adr2200":
            options["address"] = config.address
        settings = LinkSettings(port=str(config.port), baud=config.baud)
        return RelayBoard(protocol_class(**options), settings, record=config.record, on_state=on_link_state)
    wiring = {output: key for key, output in config.outputs.items()}
    if config.board == "uinput":
        from gamerig.hardware.keys.uinput import UinputOutputs

        return UinputOutputs(wiring, device=config.device or "/dev/uinput", keycodes=config.keycodes)
    from gamerig.hardware.keys.xtest import XtestOutputs

    return XtestOutputs(wiring, display=config.display, keysyms=config.keysyms)


def open_key_output(
    config: KeyOutputConfig | Mapping[str, Any],
    path: Path | str | None = None,
    *,
    on_link_state: StateCallback | None = None,
) -> KeyOutput:
    """Open the configured key output. `config` is a KeyOutputConfig or a parsed YAML mapping, which
    is validated with `path` (its file) named in errors. Raises ConfigError for a bad mapping and
    KeyOutputError if the device cannot be opened."""
    if not isinstance(config, KeyOutputConfig):
        config = load_key_output_config(config, path if path is not None else "<key output config>")
    return KeyOutput(build_outputs(config, on_link_state=on_link_state), config)
