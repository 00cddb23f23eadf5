"""The device side of the relay boards the rig can drive: what each board does with the bytes it gets.

Pure parsing and state, no I/O and no clocks: ``VirtualRelayBoard`` (relay_board.py) moves the
bytes between a pseudo-terminal and these classes.  Outputs are zero-based here as everywhere
outside a protocol: each protocol translates from its board's own numbering.

- ``RelayBank``: the relay contacts, what the host last commanded, and stuck-relay faults.
- ``Adr2200``: Ontrak ADR2200 ASCII, CR-terminated, spaces ignored, optional one-digit RS-485
  address prefix (board 0 also answers unaddressed lines), unknown lines silently dropped.
  ``SKn``/``RKn``/``MKddd``/``SPKxxxxxxxx`` write without a reply; ``RPK`` -> ``00001000\\r``
  (K7 first), ``RPKn`` -> ``1\\r``, ``PK`` -> ``008\\r``; ``IE``/``ID``/``IS``; ``IDN?``.
- ``Numato``: text commands ended by CR; the board echoes the line, ends lines with ``\\n\\r`` and
  prints a ``>`` prompt after every command.  Relay numbers are one character, 0-9 then
  uppercase A-V, and only the first character counts (``relay on 12`` switches relay 1).
- ``Kmtronic``: binary ``FF nn 01``/``FF nn 00`` (nn from 1) with no reply.  The 4- and 8-relay
  boards answer ``FF 09 00`` with one byte ``00``/``01`` per relay; the 1- and 2-relay boards
  answer ``FF nn 03`` with ``FF nn ss`` instead.
- ``Lcus``: binary ``A0 nn ss cs`` with cs = (A0 + nn + ss) & 0xFF; never replies; a frame
  with a bad checksum is ignored.

The binary boards resynchronise on a bad frame by dropping its first byte and looking for the
next start byte.  Choices where no source says what the real board does (tested as stated, not
checked against hardware): ADR2200 commands are upper case only, ``IDN?`` answers ``2200``,
``IS`` answers ``1``/``0`` for interrupts on/off; Numato ``readall`` answers lower-case hex
(two digits per 8 relays), ``ver`` answers ``00000001``, ``id get`` the 8-character id
(``00000000`` until ``id set``), an unknown line gets its echo and the prompt.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

CR = 0x0D
_MAX_LINE = 64  # a text board's line buffer; a longer line without CR is garbage and dropped


class RelayBank:
    """The contacts of ``count`` relays, the host's last command for each, and stuck faults.

    A stuck output ignores commands and keeps the contact given to ``stick``; readback reports
    the contact, so a driver that reads back can see the fault.  Every contact change is queued
    for ``take_changes`` (the board reports them with the time the command completed).
    """

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"a relay bank needs at least one relay, got {count}")
        self.count = count
        self._contacts = [False] * count
        self._commanded = [False] * count
        self._stuck: set[int] = set()
        self._changes: list[tuple[int, bool]] = []

    def closed(self, output: int) -> bool:
        """Whether the contact of ``output`` is closed."""
        return self._contacts[self._check(output)]

    def mask(self) -> int:
        """The contacts as a bit mask, bit n = output n closed."""
        return sum(1 << n for n, closed in enumerate(self._contacts) if closed)

    def command(self, output: int, closed: bool) -> None:
        """The host switches one relay; a stuck relay does not follow."""
        self._commanded[self._check(output)] = closed
        if output not in self._stuck:
            self._move(output, closed)

    def command_mask(self, mask: int) -> None:
        """The host writes the whole port at once, bit n = output n."""
        for output in range(self.count):
            self.command(output, bool(mask >> output & 1))

    def stick(self, output: int, closed: bool) -> None:
        """Fault: the contact of ``output`` goes to ``closed`` and stays there whatever is commanded."""
        self._stuck.add(self._check(output))
        self._move(output, closed)

    def unstick(self, output: int) -> None:
        """Clear the fault: the contact follows the host's last command again."""
        self._stuck.discard(self._check(output))
        self._move(output, self._commanded[output])

    def power_off(self) -> None:
        """The board loses power: every relay releases and the faults and commands are forgotten."""
        self._stuck.clear()
        for output in range(self.count):
            self._commanded[output] = False
            self._move(output, False)

    def take_changes(self) -> list[tuple[int, bool]]:
        """The contact changes (output, closed) since the last call, in order."""
        changes, self._changes = self._changes, []
        return changes

    def _move(self, output: int, closed: bool) -> None:
        if self._contacts[output] != closed:
            self._contacts[output] = closed
            self._changes.append((output, closed))

    def _check(self, output: int) -> int:
        if not 0 <= output < self.count:
            raise ValueError(f"output {output} is not on this board (outputs 0-{self.count - 1})")
        return output


class DeviceProtocol(ABC):
    """One board's firmware: frames the bytes it receives and acts on each complete frame."""

    name: str

    def __init__(self, relays: RelayBank) -> None:
        self.relays = relays
        self._buffer = bytearray()

    @abstractmethod
    def take(self, byte: int) -> bytes | None:
        """Add one received byte; return the frame it completes, if it completes one."""

    @abstractmethod
    def execute(self, frame: bytes) -> bytes:
        """Act on one complete frame (from ``take``) and return the board's reply (maybe empty)."""

    def receive(self, data: bytes) -> bytes:
        """Take every byte of ``data``, execute each frame it completes, and return all replies."""
        replies = bytearray()
        for byte in data:
            frame = self.take(byte)
            if frame is not None:
                replies += self.execute(frame)
        return bytes(replies)


class _LineProtocol(DeviceProtocol):
    """A text board: a frame is a line ended by CR (the CR is not part of the frame)."""

    def take(self, byte: int) -> bytes | None:
        if byte == CR:
            line, self._buffer = bytes(self._buffer), bytearray()
            return line
        if len(self._buffer) >= _MAX_LINE:
            self._buffer.clear()
        self._buffer.append(byte)
        return None


class Adr2200(_LineProtocol):
    """Ontrak ADR2200: relay port K (K0-K7), addressable on an RS-485 chain."""

    name = "adr2200"
    PRODUCT_ID = b"2200"

    def __init__(self, relays: RelayBank, address: int = 0) -> None:
        if relays.count != 8:
            raise ValueError(f"the ADR2200 has 8 relays (K0-K7), not {relays.count}")
        if not 0 <= address <= 9:
            raise ValueError(f"ADR2200 addresses are one digit 0-9, got {address}")
        super().__init__(relays)
        self.address = address
        self.interrupts = True  # power-on state unknown; drivers send ID, which this honours

    def execute(self, frame: bytes) -> bytes:
        line = frame.replace(b" ", b"")
        if line[:1].isdigit():
            if int(line[:1]) != self.address:
                return b""
            line = line[1:]
        elif self.address != 0:
            return b""
        return self._command(line.decode("ascii", errors="replace"))

    def _command(self, line: str) -> bytes:
        relays = self.relays
        if len(line) == 3 and line[:2] in ("SK", "RK") and line[2] in "01234567":
            relays.command(int(line[2]), line[0] == "S")
        elif line.startswith("MK") and 3 <= len(line) <= 5 and line[2:].isdigit():
            if int(line[2:]) <= 255:
                relays.command_mask(int(line[2:]))
        elif line.startswith("SPK") and len(line) == 11 and set(line[3:]) <= {"0", "1"}:
            relays.command_mask(int(line[3:], 2))
        elif line == "RPK":
            return format(relays.mask(), "08b").encode() + b"\r"
        elif len(line) == 4 and line.startswith("RPK") and line[3] in "01234567":
            return b"1\r" if relays.closed(int(line[3])) else b"0\r"
        elif line == "PK":
            return format(relays.mask(), "03d").encode() + b"\r"
        elif line in ("IE", "ID"):
            self.interrupts = line == "IE"
        elif line == "IS":
            return b"1\r" if self.interrupts else b"0\r"
        elif line == "IDN?":
            return self.PRODUCT_ID + b"\r"
        return b""  # a write, or a line the board does not know: no reply either way


_NUMATO_INDEX = "0123456789ABCDEFGHIJKLMNOPQRSTUV"
_NUMATO_SIZES = (1, 2, 4, 8, 16, 32)


class Numato(_LineProtocol):
    """Numato Lab USB relay module (1-32 relays), a command line with echo and a ``>`` prompt."""

    name = "numato"
    VERSION = b"00000001"

    def __init__(self, relays: RelayBank) -> None:
        if relays.count not in _NUMATO_SIZES:
            raise ValueError(f"Numato relay modules have {_NUMATO_SIZES} relays, not {relays.count}")
        super().__init__(relays)
        self.device_id = b"00000000"
        self._hex_digits = max(2, relays.count // 4)

    def take(self, byte: int) -> bytes | None:
        return None if byte == 0x0A else super().take(byte)  # a stray LF after the CR is no command

    def execute(self, frame: bytes) -> bytes:
        reply = self._command(frame.decode("ascii", errors="replace").split())
        return frame + b"\n\r" + (reply + b"\n\r" if reply else b"") + b">"

    def _command(self, words: list[str]) -> bytes:
        relays = self.relays
        if words == ["ver"]:
            return self.VERSION
        if words == ["id", "get"]:
            return self.device_id
        if len(words) == 3 and words[:2] == ["id", "set"] and len(words[2]) == 8:
            self.device_id = words[2].encode()
        elif words == ["reset"]:
            relays.command_mask(0)
        elif words == ["relay", "readall"]:
            return format(relays.mask(), f"0{self._hex_digits}x").encode()
        elif len(words) == 3 and words[:2] == ["relay", "writeall"]:
            mask = _hex(words[2], self._hex_digits)
            if mask is not None:
                relays.command_mask(mask & ((1 << relays.count) - 1))
        elif len(words) == 3 and words[0] == "relay" and words[1] in ("on", "off", "read"):
            output = _NUMATO_INDEX.find(words[2][0])  # the board reads one character only
            if 0 <= output < relays.count:
                if words[1] == "read":
                    return b"on" if relays.closed(output) else b"off"
                relays.command(output, words[1] == "on")
        return b""


def _hex(text: str, digits: int) -> int | None:
    if len(text) != digits:
        return None
    try:
        return int(text, 16)
    except ValueError:
        return None


class _BinaryProtocol(DeviceProtocol):
    """A board with fixed-size binary frames that begin with a start byte and have no terminator."""

    START: int
    SIZE: int

    @abstractmethod
    def valid(self, frame: bytes) -> bool:
        """Whether a complete frame is one the board acts on."""

    def take(self, byte: int) -> bytes | None:
        self._buffer.append(byte)
        while self._buffer and self._buffer[0] != self.START:
            del self._buffer[0]
        if len(self._buffer) < self.SIZE:
            return None
        frame = bytes(self._buffer)
        if self.valid(frame):
            self._buffer.clear()
            return frame
        del self._buffer[0]  # resynchronise on the next start byte inside the bad frame
        while self._buffer and self._buffer[0] != self.START:
            del self._buffer[0]
        return None


class Kmtronic(_BinaryProtocol):
    """KMtronic USB relay (1, 2, 4 or 8 relays numbered from 01 on the wire)."""

    name = "kmtronic"
    START = 0xFF
    SIZE = 3
    STATUS = 0x09  # FF 09 00: every relay's state, on the 4- and 8-relay boards
    QUERY = 0x03  # FF nn 03: one relay's state, on the 1- and 2-relay boards

    def __init__(self, relays: RelayBank) -> None:
        if relays.count not in (1, 2, 4, 8):
            raise ValueError(f"KMtronic boards have 1, 2, 4 or 8 relays, not {relays.count}")
        super().__init__(relays)

    def valid(self, frame: bytes) -> bool:
        _, relay, state = frame
        small = self.relays.count <= 2
        if relay == self.STATUS and not small:
            return state == 0
        return 1 <= relay <= self.relays.count and (state in (0, 1) or (small and state == self.QUERY))

    def execute(self, frame: bytes) -> bytes:
        _, relay, state = frame
        if relay == self.STATUS:
            return bytes(int(self.relays.closed(n)) for n in range(self.relays.count))
        if state == self.QUERY:
            return bytes((self.START, relay, int(self.relays.closed(relay - 1))))
        self.relays.command(relay - 1, state == 1)
        return b""


class Lcus(_BinaryProtocol):
    """LC-Tech LCUS CH340 relay (1-8 channels, numbered 01-08 on the wire); write-only."""

    name = "lcus"
    START = 0xA0
    SIZE = 4

    def valid(self, frame: bytes) -> bool:
        start, channel, state, checksum = frame
        return (
            1 <= channel <= self.relays.count
            and state in (0, 1)
            and checksum == (start + channel + state) & 0xFF
        )

    def execute(self, frame: bytes) -> bytes:
        _, channel, state, _ = frame
        self.relays.command(channel - 1, state == 1)
        return b""


PROTOCOLS: dict[str, type[DeviceProtocol]] = {
    p.name: p for p in (Adr2200, Numato, Kmtronic, Lcus)
}
DEFAULT_RELAYS = 8


def make_protocol(name: str, relays: RelayBank, address: int | None = None) -> DeviceProtocol:
    """The device side of board ``name`` acting on ``relays``; ``address`` is for the ADR2200 only."""
    if name not in PROTOCOLS:
        raise ValueError(f"unknown relay board protocol {name!r}; known: {', '.join(PROTOCOLS)}")
    if name == Adr2200.name:
        return Adr2200(relays, 0 if address is None else address)
    if address is not None:
        raise ValueError(f"the {name} board has no address (only the adr2200 has one)")
    return PROTOCOLS[name](relays)
