"""The device side of every relay board protocol, byte for byte (hardware/sim/board_protocols.py)."""

from __future__ import annotations

import pytest

from gamerig.hardware.sim.board_protocols import (
    Adr2200,
    Kmtronic,
    Lcus,
    Numato,
    RelayBank,
    make_protocol,
)


def closed(bank: RelayBank) -> set[int]:
    return {n for n in range(bank.count) if bank.closed(n)}


# --- RelayBank -------------------------------------------------------------------------------


def test_bank_reports_each_contact_change_once_in_order() -> None:
    bank = RelayBank(8)
    bank.command(3, True)
    bank.command(3, True)
    bank.command_mask(0b0100_0001)
    assert bank.take_changes() == [(3, True), (0, True), (3, False), (6, True)]
    assert bank.take_changes() == []
    assert bank.mask() == 0b0100_0001


def test_stuck_relay_ignores_commands_and_unstick_restores_the_commanded_state() -> None:
    bank = RelayBank(8)
    bank.stick(2, True)
    bank.command(2, False)
    bank.command_mask(0)
    assert bank.closed(2)
    bank.command(2, True)
    bank.command(2, False)  # the host's last word is "open"
    bank.unstick(2)
    assert not bank.closed(2)
    assert bank.take_changes() == [(2, True), (2, False)]


def test_power_off_opens_everything_even_stuck_and_forgets_faults() -> None:
    bank = RelayBank(8)
    bank.command(1, True)
    bank.stick(5, True)
    bank.take_changes()
    bank.power_off()
    assert bank.take_changes() == [(1, False), (5, False)]
    bank.command(5, True)
    assert bank.closed(5)


def test_bank_rejects_outputs_it_does_not_have() -> None:
    with pytest.raises(ValueError, match="output 8 is not on this board"):
        RelayBank(8).stick(8, True)


# --- ADR2200 ---------------------------------------------------------------------------------


def adr(address: int = 0) -> Adr2200:
    return Adr2200(RelayBank(8), address)


def test_adr_writes_never_reply_and_rpk_reads_back_k7_first() -> None:
    board = adr()
    assert board.receive(b"SK3\r") == b""
    assert board.receive(b"RPK\r") == b"00001000\r"
    assert board.receive(b"SK7\rRK3\rRPK\r") == b"10000000\r"
    assert board.receive(b"RPK7\rRPK0\r") == b"1\r0\r"


def test_adr_whole_port_writes_decimal_and_binary() -> None:
    board = adr()
    assert board.receive(b"MK68\r") == b""
    assert closed(board.relays) == {2, 6}
    assert board.receive(b"PK\r") == b"068\r"
    assert board.receive(b"SPK10000001\r") == b""
    assert board.receive(b"RPK\r") == b"10000001\r"
    assert board.receive(b"MK0\rPK\r") == b"000\r"
    assert board.receive(b"MK255\rPK\r") == b"255\r"


def test_adr_ignores_spaces_and_waits_for_the_cr() -> None:
    board = adr()
    assert board.receive(b" S K 3 ") == b""
    assert not board.relays.closed(3)
    board.receive(b"\r")
    assert closed(board.relays) == {3}


@pytest.mark.parametrize(
    "line",
    [b"XYZ\r", b"sk3\r", b"SK8\r", b"SK\r", b"MK256\r", b"MK\r", b"SPK1010\r", b"SPK1000000a\r", b"RPK9\r"],
)
def test_adr_drops_unknown_or_malformed_lines_silently(line: bytes) -> None:
    board = adr()
    board.receive(b"SK1\r")
    assert board.receive(line) == b""
    assert closed(board.relays) == {1}


def test_adr_drops_an_overlong_line_without_cr() -> None:
    board = adr()
    assert board.receive(b"Z" * 1000 + b"SK2\r") == b""
    assert not board.relays.closed(2)  # the tail was part of the garbage line
    board.receive(b"SK2\r")
    assert board.relays.closed(2)


def test_adr_address_prefix() -> None:
    board = adr(3)
    assert board.receive(b"SK1\r2SK2\r3SK4\r3 RPK\r") == b"00010000\r"
    assert board.receive(b"RPK\r1RPK\r") == b""  # not addressed to board 3
    zero = adr(0)
    assert zero.receive(b"SK1\r0SK2\r5SK3\r0RPK\rRPK\r") == b"00000110\r00000110\r"


def test_adr_interrupt_commands_and_product_id() -> None:
    board = adr()
    assert board.receive(b"ID\r") == b""
    assert board.receive(b"IS\r") == b"0\r"
    assert board.receive(b"IE\rIS\r") == b"1\r"
    assert board.receive(b"IDN?\r") == b"2200\r"


# --- Numato ----------------------------------------------------------------------------------


def test_numato_echoes_and_prompts() -> None:
    board = Numato(RelayBank(8))
    assert board.receive(b"relay on 0\r") == b"relay on 0\n\r>"
    assert board.receive(b"relay read 0\r") == b"relay read 0\n\ron\n\r>"
    assert board.receive(b"relay off 0\r") == b"relay off 0\n\r>"
    assert board.receive(b"relay read 0\r") == b"relay read 0\n\roff\n\r>"
    assert board.receive(b"ver\r") == b"ver\n\r00000001\n\r>"
    assert board.receive(b"id get\r") == b"id get\n\r00000000\n\r>"
    assert board.receive(b"id set ABCD1234\rid get\r") == b"id set ABCD1234\n\r>id get\n\rABCD1234\n\r>"
    assert board.receive(b"bogus\r") == b"bogus\n\r>"
    assert board.receive(b"\r\n") == b"\n\r>"


def test_numato_relay_numbers_are_one_character_digits_then_upper_case_letters() -> None:
    board = Numato(RelayBank(16))
    board.receive(b"relay on C\r")
    assert closed(board.relays) == {12}
    board.receive(b"relay on 12\r")  # only the first character counts: relay 1
    assert closed(board.relays) == {1, 12}
    board.receive(b"relay on c\r")  # lower case is no relay number
    board.receive(b"relay on G\r")  # relay 16 is not on a 16-relay board
    assert closed(board.relays) == {1, 12}
    assert board.receive(b"relay readall\r") == b"relay readall\n\r1002\n\r>"


def test_numato_readall_writeall_and_reset() -> None:
    board = Numato(RelayBank(8))
    assert board.receive(b"relay writeall A5\r") == b"relay writeall A5\n\r>"
    assert board.relays.mask() == 0xA5
    assert board.receive(b"relay readall\r") == b"relay readall\n\ra5\n\r>"
    board.receive(b"relay writeall 5\r")  # wrong width: ignored
    board.receive(b"relay writeall zz\r")
    assert board.relays.mask() == 0xA5
    board.receive(b"reset\r")
    assert board.relays.mask() == 0


# --- KMtronic --------------------------------------------------------------------------------


def test_kmtronic_switches_silently_and_reports_one_byte_per_relay() -> None:
    board = Kmtronic(RelayBank(8))
    assert board.receive(bytes([0xFF, 0x01, 0x01, 0xFF, 0x08, 0x01])) == b""
    assert closed(board.relays) == {0, 7}
    assert board.receive(bytes([0xFF, 0x09, 0x00])) == bytes([1, 0, 0, 0, 0, 0, 0, 1])
    board.receive(bytes([0xFF, 0x01, 0x00]))
    assert closed(board.relays) == {7}


def test_kmtronic_resynchronises_after_garbage_and_bad_frames() -> None:
    board = Kmtronic(RelayBank(8))
    # junk, a frame with relay 0x0A, a frame cut short by a new start byte, then a good one
    board.receive(bytes([0x12, 0x34, 0xFF, 0x0A, 0x01, 0xFF, 0xFF, 0x03, 0x01]))
    assert closed(board.relays) == {2}


def test_kmtronic_four_relay_status_and_two_relay_query() -> None:
    four = Kmtronic(RelayBank(4))
    four.receive(bytes([0xFF, 0x04, 0x01, 0xFF, 0x05, 0x01]))  # there is no relay 5
    assert four.receive(bytes([0xFF, 0x09, 0x00])) == bytes([0, 0, 0, 1])
    assert four.receive(bytes([0xFF, 0x04, 0x03])) == b""  # per-relay query: small boards only
    two = Kmtronic(RelayBank(2))
    two.receive(bytes([0xFF, 0x02, 0x01]))
    assert two.receive(bytes([0xFF, 0x02, 0x03, 0xFF, 0x01, 0x03])) == bytes([0xFF, 2, 1, 0xFF, 1, 0])
    assert two.receive(bytes([0xFF, 0x09, 0x00])) == b""
    with pytest.raises(ValueError, match="1, 2, 4 or 8 relays"):
        Kmtronic(RelayBank(3))


# --- LCUS ------------------------------------------------------------------------------------


def test_lcus_frames_with_checksum_and_no_reply() -> None:
    board = Lcus(RelayBank(8))
    assert board.receive(bytes([0xA0, 0x01, 0x01, 0xA2])) == b""
    assert board.receive(bytes([0xA0, 0x02, 0x01, 0xA3])) == b""
    assert closed(board.relays) == {0, 1}
    board.receive(bytes([0xA0, 0x01, 0x00, 0xA1]))
    assert closed(board.relays) == {1}


def test_lcus_ignores_a_bad_checksum() -> None:
    board = Lcus(RelayBank(8))
    assert board.receive(bytes([0xA0, 0x03, 0x01, 0xA5])) == b""
    assert closed(board.relays) == set()
    board.receive(bytes([0xA0, 0x03, 0x01, 0xA4]))
    assert closed(board.relays) == {2}


# --- construction ----------------------------------------------------------------------------


def test_make_protocol_names_each_board_and_rejects_bad_arguments() -> None:
    for name in ("adr2200", "numato", "kmtronic", "lcus"):
        assert make_protocol(name, RelayBank(8)).name == name
    assert make_protocol("adr2200", RelayBank(8), address=4).address == 4
    with pytest.raises(ValueError, match="unknown relay board protocol 'relayz'"):
        make_protocol("relayz", RelayBank(8))
    with pytest.raises(ValueError, match="no address"):
        make_protocol("numato", RelayBank(8), address=1)
    with pytest.raises(ValueError, match="one digit"):
        make_protocol("adr2200", RelayBank(8), address=10)
    with pytest.raises(ValueError, match="8 relays"):
        make_protocol("adr2200", RelayBank(4))
