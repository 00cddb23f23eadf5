"""The bench's reading of the simulator's ground truth: when each piece appeared, its first key,
and the glass-to-key figures split by whether that key was a turn (which waits for the game)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gamerig.daemon.bench_rig import summarize
from gamerig.daemon.rig_truth import TruthReader, read_truth
from gamerig.daemon.sim_rig import SimRigOptions

EMPTY = ["." * 10] * 20


def _frame(frame: int, t: float, piece: dict | None, lines: int = 0, game: int = 1) -> dict:
    return {
        "type": "frame", "frame": frame, "t": t, "game": game, "board": EMPTY, "piece": piece, "next_piece": "I", "score": 0,
        "lines": lines, "level": 5, "paused": False, "over": False, "camera_frame": frame if frame % 2 == 0 else None,
    }


def _edge(t: float, key: str) -> dict:
    return {"type": "edge", "key": key, "pressed": True, "t": t, "dropped": False}


def _piece(kind: str, y: int) -> dict:
    return {"kind": kind, "orientation": 1, "x": 6, "y": y}


@pytest.fixture
def truth_file(tmp_path: Path) -> Path:
    records = [
        _frame(0, 1.000, None),
        _edge(1.010, "left"),  # before play began: not counted
        _frame(1, 2.000, _piece("T", 20)),  # T appears
        _edge(2.008, "left"),
        _edge(2.050, "drop"),
        _frame(2, 2.100, None, lines=1),
        _frame(3, 2.400, _piece("S", 20), lines=1),  # S appears; it only turns, after its first fall
        _frame(4, 2.700, _piece("S", 19), lines=1),
        _edge(2.705, "rotate"),
        _frame(5, 2.800, _piece("O", 20), lines=1),  # a drop and the next spawn in one frame: another type
        _edge(2.812, "right"),
        _frame(6, 2.900, _piece("O", 19), lines=1),
    ]
    path = tmp_path / "truth.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records) + '{"type": "fra', encoding="utf-8")
    return path


def test_each_piece_has_its_first_key_and_its_delay(truth_file: Path) -> None:
    truth = read_truth(truth_file, since_t=1.5)
    assert truth.pieces == 3 and truth.sequence == ["T", "S", "O", "I"]
    assert truth.lines == 1
    assert truth.first_keys == ["left", "rotate", "right"]
    assert truth.glass_to_key_s == pytest.approx([0.008, 0.305, 0.012])


def test_the_report_counts_turn_first_pieces_and_gives_the_others_p99(truth_file: Path) -> None:
    truth = read_truth(truth_file, since_t=1.5, max_pieces=3)
    report = summarize(truth, {}, SimRigOptions(), pieces=3)
    assert report["glass_to_key_ms_p99"] == pytest.approx(305.0)
    assert report["turn_first_pieces"] == 1
    assert report["glass_to_key_ms_p99_move_first"] == pytest.approx(12.0)


def test_lines_and_games_add_up_over_the_new_games_the_rig_started(tmp_path: Path) -> None:
    """Each new game counts its lines from 0 again: the run's lines are every game's."""
    records = [
        _frame(0, 1.0, _piece("T", 20), lines=4),  # play starts 4 lines into game 1
        _frame(1, 2.0, _piece("S", 20), lines=6),
        _frame(2, 3.0, _piece("O", 20), lines=0, game=2),
        _frame(3, 4.0, _piece("I", 20), lines=3, game=2),
        _frame(4, 5.0, _piece("Z", 20), lines=1, game=3),
    ]
    path = tmp_path / "truth.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    truth = read_truth(path, since_t=0.5)
    assert (truth.games, truth.lines, truth.pieces) == (3, 2 + 3 + 1, 5)


def test_a_file_read_as_it_grows_gives_what_one_read_of_the_whole_gives(truth_file: Path, tmp_path: Path) -> None:
    """The bench and the demo read the truth every half second while the simulator writes it:
    a reader takes only the lines added since, and a line cut off by the writer waits for its end."""
    text = truth_file.read_text(encoding="utf-8")
    growing = tmp_path / "growing.jsonl"
    growing.write_text("", encoding="utf-8")
    reader = TruthReader(growing, since_t=1.5)
    counts = []
    for start in range(0, len(text), 37):  # cut anywhere, mid-line too
        with open(growing, "a", encoding="utf-8") as file:
            file.write(text[start : start + 37])
        counts.append(reader.read().pieces)
    assert reader.read() == read_truth(truth_file, since_t=1.5)
    assert counts == sorted(counts) and counts[0] == 0 and counts[-1] == 3
