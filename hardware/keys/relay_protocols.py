"""Host-side frames of the four serial relay boards: the exact bytes to send and how to read replies.

Pure: builds bytes and parses replies, no I/O. Outputs are zero-based here as everywhere else; each
protocol translates to its board's own numbering. Sources for every frame: ../shared/research/
hardware.md sections 1-2 (Ontrak ADR2200 manual and emulator firmware, Numato sample code, KMtronic
test software and labgrid's driver, LCUS product pages). Tested: golden bytes for every frame and
reply parsing (tests/unit/test_relay_protocols.py); that the real boards accept them is not tested
here (no hardware).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol


class ReplyError(ValueError):
    """A board's reply does not have the documented form."""


@dataclass(frozen=True, slots=True)
class Reply:
    """How a command's reply ends: at a terminator byte string, or after a fixed number of bytes."""

    until: bytes | None = None
    length: int | None = None


@dataclass(frozen=True, slots=True)
class Command:
    """Bytes to send and the reply to read afterwards (None: the board answers nothing)."""

    frame: bytes
    reply: Reply | None = None


class RelayProtocol(Protocol):
    """The host side of one board's protocol for a board with `channels` relays."""

    kind: str
    channels: int

    def set_relay(self, output: int, on: bool) -> Command:
        """The command that closes (on) or opens one relay."""
        ...

    def release_all(self) -> list[Command]:
        """Commands that open every relay."""
        ...

    def start_up(self) -> list[Command]:
        """Commands sent on every (re)open, before anything else; they end with all relays open."""
        ...

    def read_back(self) -> Command | None:
        """The command that asks which relays are closed; None if the board cannot tell."""
        ...

    def parse_read_back(self, reply: bytes) -> frozenset[int]:
        """The closed outputs in a reply to read_back(); ReplyError if the reply is malformed."""
        ...


def _check_output(output: int, channels: int, kind: str) -> None:
    if not 0 <= output < channels:
        raise ValueError(f"{kind}: output {output} out of range 0..{channels - 1}")


@dataclass(frozen=True)
class Adr2200:
    """Ontrak ADR2200, relay port K: `SKn`/`RKn`, `MKddd`, read back with `RPK`.

    The board never acknowledges a write, so the only way to catch a lost command is to read the port
    back. `ID` at start-up turns off interrupts, which would otherwise put unsolicited codes into the
    reply stream. `address` (0-9) is the RS-485 daisy-chain prefix; None sends no prefix (board 0 and
    a single RS-232 board answer that).
    """

    address: int | None = None
    channels: int = 8
    kind: ClassVar[str] = "adr2200"
    MAX_CHANNELS: ClassVar[int] = 8

    def __post_init__(self) -> None:
        if self.address is not None and not 0 <= self.address <= 9:
            raise ValueError(f"adr2200: address must be 0..9 or None, got {self.address}")
        if not 1 <= self.channels <= self.MAX_CHANNELS:
            raise ValueError(f"adr2200: channels must be 1..{self.MAX_CHANNELS}, got {self.channels}")

    def _frame(self, text: str) -> bytes:
        prefix = "" if self.address is None else str(self.address)
        return f"{prefix}{text}\r".encode("ascii")

    def set_relay(self, output: int, on: bool) -> Command:
        _check_output(output, self.channels, self.kind)
        return Command(self._frame(f"{'SK' if on else 'RK'}{output}"))

    def write_port(self, closed: frozenset[int]) -> Command:
        """`MKddd`: the whole port at once, bit n = relay Kn."""
        for output in closed:
            _check_output(output, self.channels, self.kind)
        return Command(self._frame(f"MK{sum(1 << n for n in closed)}"))

    def release_all(self) -> list[Command]:
        return [self.write_port(frozenset())]

    def start_up(self) -> list[Command]:
        # A bare CR first ends any partial line left by a host that died mid-write.
        return [Command(b"\r"), Command(self._frame("ID")), *self.release_all()]

    def read_back(self) -> Command:
        return Command(self._frame("RPK"), Reply(until=b"\r"))

    def parse_read_back(self, reply: bytes) -> frozenset[int]:
        """`00001000\\r`: eight binary digits, most significant first (K7 ... K0)."""
        digits = reply.strip()
        if len(digits) != 8 or digits.strip(b"01"):
            raise ReplyError(f"adr2200: RPK reply should be 8 binary digits, got {reply!r}")
        return frozenset(7 - i for i, bit in enumerate(digits) if bit == ord("1"))


@dataclass(frozen=True)
class Numato:
    """Numato Lab USB relay: text commands; the board echoes each one and ends with a `>` prompt.

    Relays 0-9 are named by their digit, 10-31 by uppercase letters A-V (`relay on 12` would switch
    relay 1). Every command's reply, echo included, is read up to the prompt so none is left over.
    """

    channels: int = 8
    kind: ClassVar[str] = "numato"
    MAX_CHANNELS: ClassVar[int] = 32
    PROMPT: ClassVar[Reply] = Reply(until=b">")

    def __post_init__(self) -> None:
        if not 1 <= self.channels <= self.MAX_CHANNELS:
            raise ValueError(f"numato: channels must be 1..{self.MAX_CHANNELS}, got {self.channels}")

    @staticmethod
    def relay_name(output: int) -> str:
        """The board's name for a relay: 0-9, then A-V."""
        return "0123456789ABCDEFGHIJKLMNOPQRSTUV"[output]

    def set_relay(self, output: int, on: bool) -> Command:
        _check_output(output, self.channels, self.kind)
        return Command(f"relay {'on' if on else 'off'} {self.relay_name(output)}\r".encode("ascii"), self.PROMPT)

    def release_all(self) -> list[Command]:
        # One `relay off` per relay: `writeall` takes a hex mask whose width depends on the model.
        return [self.set_relay(output, False) for output in range(self.channels)]

    def start_up(self) -> list[Command]:
        # A bare CR first ends any partial line left by a host that died mid-write.
        return [Command(b"\r", self.PROMPT), *self.release_all()]

    def read_back(self) -> Command:
        return Command(b"relay readall\r", self.PROMPT)

    def parse_read_back(self, reply: bytes) -> frozenset[int]:
        """`relay readall\\n\\r01\\n\\r>`: the echo, a hex mask (bit n = relay n), the prompt."""
        text = reply.decode("ascii", errors="replace")
        if not text.endswith(">"):
            raise ReplyError(f"numato: readall reply should end with the '>' prompt, got {reply!r}")
        lines = [line.strip() for line in text[:-1].replace("\r", "\n").split("\n") if line.strip()]
        if lines and lines[0] == "relay readall":
            lines = lines[1:]
        if len(lines) != 1:
            raise ReplyError(f"numato: readall reply should hold one hex mask, got {reply!r}")
        try:
            mask = int(lines[0], 16)
        except ValueError:
            raise ReplyError(f"numato: readall mask {lines[0]!r} is not hexadecimal") from None
        if mask >> self.channels:
            raise ReplyError(f"numato: readall mask {lines[0]!r} has relays beyond the {self.channels} channels")
        return frozenset(n for n in range(self.channels) if mask >> n & 1)


@dataclass(frozen=True)
class Kmtronic:
    """KMtronic USB relay: binary frames `FF nn 01` on / `FF nn 00` off, relays numbered from 01.

    Read back with `FF 09 00`: one byte per relay, 00 or 01. That status frame is the 4- and 8-relay
    boards'; the 1-2 relay boards answer per relay instead, so readback is off for them.
    """

    channels: int = 8
    kind: ClassVar[str] = "kmtronic"
    MAX_CHANNELS: ClassVar[int] = 8

    def __post_init__(self) -> None:
        if not 1 <= self.channels <= self.MAX_CHANNELS:
            raise ValueError(f"kmtronic: channels must be 1..{self.MAX_CHANNELS}, got {self.channels}")

    def set_relay(self, output: int, on: bool) -> Command:
        _check_output(output, self.channels, self.kind)
        return Command(bytes((0xFF, output + 1, 0x01 if on else 0x00)))

    def release_all(self) -> list[Command]:
        return [self.set_relay(output, False) for output in range(self.channels)]

    def start_up(self) -> list[Command]:
        return self.release_all()

    def read_back(self) -> Command | None:
        if self.channels < 4:
            return None
        return Command(bytes((0xFF, 0x09, 0x00)), Reply(length=self.channels))

    def parse_read_back(self, reply: bytes) -> frozenset[int]:
        if len(reply) != self.channels or set(reply) - {0, 1}:
            raise ReplyError(f"kmtronic: status should be {self.channels} bytes of 00/01, got {reply.hex(' ')}")
        return frozenset(n for n, state in enumerate(reply) if state)


@dataclass(frozen=True)
class Lcus:
    """LC-Tech LCUS (CH340) relay: `A0 nn ss cs`, nn = channel from 01, ss = 01 on / 00 off,
    cs = (A0 + nn + ss) & 0xFF. Write-only: the board reports nothing, so there is no readback."""

    channels: int = 4
    kind: ClassVar[str] = "lcus"
    MAX_CHANNELS: ClassVar[int] = 8

    def __post_init__(self) -> None:
        if not 1 <= self.channels <= self.MAX_CHANNELS:
            raise ValueError(f"lcus: channels must be 1..{self.MAX_CHANNELS}, got {self.channels}")

    def set_relay(self, output: int, on: bool) -> Command:
        _check_output(output, self.channels, self.kind)
        channel, state = output + 1, 0x01 if on else 0x00
        return Command(bytes((0xA0, channel, state, (0xA0 + channel + state) & 0xFF)))

    def release_all(self) -> list[Command]:
        return [self.set_relay(output, False) for output in range(self.channels)]

    def start_up(self) -> list[Command]:
        return self.release_all()

    def read_back(self) -> None:
        return None

    def parse_read_back(self, reply: bytes) -> frozenset[int]:
        raise ReplyError("lcus: the board has no readback")


#: Board type name (as in configs) -> its protocol class.
PROTOCOLS: dict[str, type[Adr2200] | type[Numato] | type[Kmtronic] | type[Lcus]] = {
    cls.kind: cls for cls in (Adr2200, Numato, Kmtronic, Lcus)
}
