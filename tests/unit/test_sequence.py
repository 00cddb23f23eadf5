"""Piece sequences: the seeded PRNG, Fahey's 1..7 -> OISZLJT mapping, fixed and S/Z sequences."""

from __future__ import annotations

from collections import Counter

import pytest

from gamerig.games.tetris.pieces import piece_index, piece_name
from gamerig.games.tetris.sequence import AlternatingSZ, FixedPieces, RandomPieces, SplitMix64, make_source


def test_splitmix64_reproduces_the_published_reference_outputs() -> None:
    # The test vector of Vigna's reference splitmix64.c (seed 1234567), and seed 0.
    rng = SplitMix64(1234567)
    assert [rng.next_u64() for _ in range(5)] == [
        6457827717110365317,
        3203168211198807973,
        9817491932198370423,
        4593380528125082431,
        16408922859458223821,
    ]
    assert SplitMix64(0).next_u64() == 0xE220A8397B1DCDAF


def test_seeds_are_taken_modulo_two_to_the_64() -> None:
    assert SplitMix64(-1).next_u64() == SplitMix64(2**64 - 1).next_u64()


def test_piece_index_maps_one_to_seven_onto_o_i_s_z_l_j_t() -> None:
    assert [piece_name(i) for i in range(1, 8)] == list("OISZLJT")
    assert [piece_index(p) for p in "OISZLJT"] == list(range(1, 8))
    for bad in (0, 8):
        with pytest.raises(ValueError, match="1..7"):
            piece_name(bad)


def test_random_pieces_follow_piece_index_one_plus_r_mod_seven() -> None:
    rng = SplitMix64(42)
    expected = [piece_name(1 + rng.below(7)) for _ in range(200)]
    source = RandomPieces(42)
    assert [source.next() for _ in range(200)] == expected


def test_same_seed_same_game_other_seed_other_game() -> None:
    def first(seed: int) -> str:
        source = RandomPieces(seed)
        return "".join(source.next() for _ in range(50))

    assert first(7) == first(7)
    assert first(7) != first(8)


def test_peek_shows_the_next_piece_without_taking_it() -> None:
    source = RandomPieces(3)
    peeked = [source.peek(), source.peek()]
    assert peeked[0] == peeked[1] == source.next()
    reference = RandomPieces(3)
    assert [reference.next() for _ in range(20)] == [peeked[0]] + [source.next() for _ in range(19)]


def test_random_pieces_are_uniform_within_binomial_noise() -> None:
    # 7,000 pieces: each count is binomial with mean 1,000 and sd ~29 (the spec's figures).
    source = RandomPieces(2003)
    counts = Counter(source.next() for _ in range(7000))
    assert set(counts) == set("OISZLJT")
    assert all(abs(n - 1000) < 5 * 29 for n in counts.values()), counts


def test_fixed_sequence_repeats_or_runs_out() -> None:
    source = FixedPieces("SZTI")
    assert "".join(source.next() for _ in range(10)) == "SZTISZTISZ"
    once = FixedPieces("OI", repeat=False)
    assert [once.next(), once.next()] == ["O", "I"]
    with pytest.raises(IndexError, match="exhausted"):
        once.next()


@pytest.mark.parametrize("bad", ["", "SZX", "oi"])
def test_fixed_sequence_rejects_unknown_pieces(bad: str) -> None:
    with pytest.raises(ValueError, match="OISZLJT"):
        FixedPieces(bad)


def test_alternating_s_and_z() -> None:
    source = AlternatingSZ()
    assert "".join(source.next() for _ in range(7)) == "SZSZSZS"


def test_make_source_by_name() -> None:
    assert make_source("sz").next() == "S"
    assert make_source("fixed", pieces="T").next() == "T"
    assert make_source("random", seed=5).next() == RandomPieces(5).next()
    with pytest.raises(ValueError, match="random, fixed or sz"):
        make_source("bag")
