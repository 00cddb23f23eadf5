"""Golden bytes of every relay board's host-side frames, and parsing of their readback replies."""

from __future__ import annotations

import pytest

from gamerig.hardware.keys.relay_protocols import (
    PROTOCOLS,
    Adr2200,
    Command,
    Kmtronic,
    Lcus,
    Numato,
    Reply,
    ReplyError,
)


def frames(commands: list[Command]) -> bytes:
    return b"".join(command.frame for command in commands)


class TestAdr2200:
    def test_set_and_reset_relay(self) -> None:
        adr = Adr2200()
        assert adr.set_relay(0, True) == Command(b"SK0\r")
        assert adr.set_relay(7, True) == Command(b"SK7\r")
        assert adr.set_relay(3, False) == Command(b"RK3\r")

    def test_whole_port_is_decimal_with_bit_n_for_relay_kn(self) -> None:
        adr = Adr2200()
        assert adr.write_port(frozenset({2, 6})).frame == b"MK68\r"
        assert adr.write_port(frozenset(range(8))).frame == b"MK255\r"
        assert frames(adr.release_all()) == b"MK0\r"

    def test_start_up_ends_a_stale_line_disables_interrupts_then_opens_every_relay(self) -> None:
        assert frames(Adr2200().start_up()) == b"\rID\rMK0\r"

    def test_rs485_address_prefixes_every_frame(self) -> None:
        adr = Adr2200(address=7)
        assert adr.set_relay(4, True).frame == b"7SK4\r"
        assert frames(adr.start_up()) == b"\r7ID\r7MK0\r"
        assert adr.read_back() == Command(b"7RPK\r", Reply(until=b"\r"))

    def test_read_back_is_binary_msb_first(self) -> None:
        adr = Adr2200()
        assert adr.read_back() == Command(b"RPK\r", Reply(until=b"\r"))
        assert adr.parse_read_back(b"00001000\r") == frozenset({3})
        assert adr.parse_read_back(b"10000001\r") == frozenset({0, 7})
        assert adr.parse_read_back(b"00000000\r") == frozenset()

    @pytest.mark.parametrize("reply", [b"0000100\r", b"000010002\r", b"0000x000\r", b"\r", b"255\r"])
    def test_malformed_read_back_is_an_error(self, reply: bytes) -> None:
        with pytest.raises(ReplyError, match="8 binary digits"):
            Adr2200().parse_read_back(reply)

    def test_out_of_range_output_and_address_are_refused(self) -> None:
        with pytest.raises(ValueError, match="output 8 out of range 0..7"):
            Adr2200().set_relay(8, True)
        with pytest.raises(ValueError, match="address must be 0..9"):
            Adr2200(address=10)


class TestNumato:
    def test_relays_zero_to_nine_then_uppercase_letters(self) -> None:
        numato = Numato(channels=32)
        assert numato.set_relay(0, True) == Command(b"relay on 0\r", Reply(until=b">"))
        assert numato.set_relay(9, False).frame == b"relay off 9\r"
        assert numato.set_relay(10, True).frame == b"relay on A\r"
        assert numato.set_relay(12, True).frame == b"relay on C\r"
        assert numato.set_relay(31, False).frame == b"relay off V\r"

    def test_release_all_turns_each_relay_off(self) -> None:
        assert frames(Numato(channels=4).release_all()) == b"relay off 0\rrelay off 1\rrelay off 2\rrelay off 3\r"

    def test_start_up_ends_a_stale_line_then_turns_each_relay_off(self) -> None:
        start_up = Numato(channels=2).start_up()
        assert frames(start_up) == b"\rrelay off 0\rrelay off 1\r"
        assert all(command.reply == Reply(until=b">") for command in start_up)

    def test_readall_reply_parsed_up_to_the_prompt(self) -> None:
        numato = Numato(channels=8)
        assert numato.read_back() == Command(b"relay readall\r", Reply(until=b">"))
        assert numato.parse_read_back(b"relay readall\n\r05\n\r>") == frozenset({0, 2})
        assert numato.parse_read_back(b"relay readall\n\r00\n\r>") == frozenset()
        assert Numato(channels=16).parse_read_back(b"relay readall\n\r8001\n\r>") == frozenset({0, 15})

    @pytest.mark.parametrize(
        "reply, reason",
        [
            (b"relay readall\n\r05\n\r", "prompt"),
            (b"relay readall\n\rzz\n\r>", "not hexadecimal"),
            (b"relay readall\n\r>", "one hex mask"),
            (b"relay readall\n\r1FF\n\r>", "beyond the 8 channels"),
        ],
    )
    def test_malformed_readall_is_an_error(self, reply: bytes, reason: str) -> None:
        with pytest.raises(ReplyError, match=reason):
            Numato(channels=8).parse_read_back(reply)


class TestKmtronic:
    def test_on_off_frames_number_relays_from_one(self) -> None:
        km = Kmtronic()
        assert km.set_relay(0, True) == Command(bytes.fromhex("FF 01 01"))
        assert km.set_relay(0, False) == Command(bytes.fromhex("FF 01 00"))
        assert km.set_relay(7, True) == Command(bytes.fromhex("FF 08 01"))

    def test_release_all_and_start_up_turn_every_relay_off(self) -> None:
        expected = bytes.fromhex("FF 01 00 FF 02 00 FF 03 00 FF 04 00")
        assert frames(Kmtronic(channels=4).release_all()) == expected
        assert frames(Kmtronic(channels=4).start_up()) == expected

    def test_status_is_one_byte_per_relay(self) -> None:
        km = Kmtronic(channels=8)
        assert km.read_back() == Command(bytes.fromhex("FF 09 00"), Reply(length=8))
        assert km.parse_read_back(bytes.fromhex("00 01 00 00 00 00 00 01")) == frozenset({1, 7})
        with pytest.raises(ReplyError, match="8 bytes of 00/01"):
            km.parse_read_back(bytes.fromhex("00 02 00 00 00 00 00 00"))
        with pytest.raises(ReplyError, match="8 bytes of 00/01"):
            km.parse_read_back(bytes.fromhex("00 01"))

    def test_two_relay_board_has_no_status_frame(self) -> None:
        assert Kmtronic(channels=2).read_back() is None


class TestLcus:
    def test_frames_carry_the_checksum(self) -> None:
        lcus = Lcus()
        assert lcus.set_relay(0, True) == Command(bytes.fromhex("A0 01 01 A2"))
        assert lcus.set_relay(0, False) == Command(bytes.fromhex("A0 01 00 A1"))
        assert lcus.set_relay(1, True) == Command(bytes.fromhex("A0 02 01 A3"))
        assert lcus.set_relay(3, False) == Command(bytes.fromhex("A0 04 00 A4"))

    def test_write_only(self) -> None:
        assert Lcus().read_back() is None
        assert frames(Lcus(channels=2).start_up()) == bytes.fromhex("A0 01 00 A1 A0 02 00 A2")


def test_every_board_type_is_registered() -> None:
    assert set(PROTOCOLS) == {"adr2200", "numato", "kmtronic", "lcus"}
