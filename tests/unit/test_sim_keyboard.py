"""The simulator's keyboard model: eager debounce, once-per-frame rising edges, dropped presses, threads."""

from __future__ import annotations

import threading

import pytest

from gamerig.hardware.sim.keyboard import KeyboardModel, KeyEdge


def test_first_change_counts_at_once_and_bounce_is_ignored() -> None:
    kb = KeyboardModel(debounce_ms=5.0)
    for t, closed in ((1.000, True), (1.001, False), (1.002, True), (1.004, False), (1.0045, True)):
        kb.contact("left", closed, t)
    kb.contact("left", False, 1.060)
    assert kb.edges() == [KeyEdge("left", True, 1.000), KeyEdge("left", False, 1.060)]


def test_a_release_inside_the_window_counts_at_the_window_end() -> None:
    kb = KeyboardModel(debounce_ms=5.0)
    kb.contact("drop", True, 2.000)
    kb.contact("drop", False, 2.002)  # a 2 ms press: shorter than the window
    assert kb.pressed() == {"drop"}
    assert kb.take_rising(2.010) == ["drop"]
    assert kb.pressed() == frozenset()
    assert kb.edges() == [KeyEdge("drop", True, 2.000), KeyEdge("drop", False, pytest.approx(2.005))]


def test_the_game_reads_rising_edges_once_per_frame() -> None:
    kb = KeyboardModel()
    kb.contact("left", True, 1.00)
    kb.contact("left", False, 1.06)
    kb.contact("rotate", True, 1.03)
    assert kb.take_rising(0.99) == []  # nothing had happened yet at that frame
    assert kb.take_rising(1.05) == ["left", "rotate"]
    assert kb.take_rising(1.07) == []  # releases are not keys, and each press is read once
    kb.contact("left", True, 1.12)
    assert kb.take_rising(1.10) == []  # pressed after this frame: waits for the next one
    assert kb.take_rising(1.13) == ["left"]


def test_dropped_presses_are_logged_and_never_reach_the_game() -> None:
    kb = KeyboardModel(drop_probability=1.0)
    kb.contact("right", True, 1.0)
    kb.contact("right", False, 1.1)
    assert kb.take_rising(2.0) == []
    assert [(e.pressed, e.dropped) for e in kb.edges()] == [(True, True), (False, True)]
    kb.set_drop_probability(0.0)
    kb.contact("right", True, 3.0)
    assert kb.take_rising(3.0) == ["right"]


def test_drops_follow_the_seed_and_the_probability() -> None:
    def dropped(seed: int) -> list[bool]:
        kb = KeyboardModel(drop_probability=0.3, seed=seed)
        for i in range(400):
            kb.contact("left", True, i * 0.1)
            kb.contact("left", False, i * 0.1 + 0.05)
        return [e.dropped for e in kb.edges() if e.pressed]

    first = dropped(7)
    assert first == dropped(7)
    assert first != dropped(8)
    assert 0.2 < sum(first) / len(first) < 0.4


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="drop probability"):
        KeyboardModel(drop_probability=1.5)
    with pytest.raises(ValueError, match="debounce_ms"):
        KeyboardModel(debounce_ms=-1)
    with pytest.raises(ValueError, match="drop probability"):
        KeyboardModel().set_drop_probability(-0.1)


def test_contacts_from_many_threads_are_all_counted() -> None:
    kb = KeyboardModel(debounce_ms=0.0)

    def press(key: str) -> None:
        for i in range(500):
            kb.contact(key, True, 2 * i)
            kb.contact(key, False, 2 * i + 1)

    threads = [threading.Thread(target=press, args=(k,)) for k in ("left", "right", "rotate", "drop")]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(kb.take_rising(10_000.0)) == 4 * 500
    assert len(kb.edges()) == 4 * 1000
