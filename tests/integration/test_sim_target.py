"""The virtual target machine's game: frame-by-frame session against the engine, and the running
target fed through its keyboard, checked against its ground truth (real threads, real time)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Callable

import numpy as np
import pytest

from gamerig.games.tetris.engine import FallingPiece, Game
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.sequence import make_source
from gamerig.games.tetris.skins import SKINS, UNKNOWN_PIECE_ID
from gamerig.hardware.sim.control import ControlServer
from gamerig.hardware.sim.faults import Fault, FaultSchedule, parse_fault, target_actions
from gamerig.hardware.sim.game_session import GameOptions, GameSession, gravity_frames
from gamerig.hardware.sim.ground_truth import FrameTruth
from gamerig.hardware.sim.synthetic_camera import FRAME_SIZE, CameraSettings
from gamerig.hardware.sim.target import WELL_MARGIN_PX, Target, TargetOptions, filmed_well_corners


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


# ---- the game session, frame by frame -----------------------------------------------------------


def test_gravity_runs_at_the_level_delay_in_frames() -> None:
    assert [gravity_frames((11 - level) * 0.05) for level in (1, 5, 10)] == [30, 18, 3]
    session = GameSession(GameOptions(level=1, sequence="fixed", pieces="T"))
    for _ in range(29):
        session.step([])
    assert session.game.piece is None  # the first iteration spawns, after one delay
    session.step([])
    assert session.game.piece == FallingPiece("T", 1, 6, 20)
    for _ in range(30):
        session.step([])
    assert session.game.piece.y == 19


def test_session_matches_the_engine_fed_the_same_keys() -> None:
    rng = np.random.default_rng(3)
    options = GameOptions(level=6, seed=11)
    session = GameSession(options)
    reference = Game(Rules(), make_source("random", 11), preview=True, initial_level=6)
    due = gravity_frames(reference.delay)
    for _ in range(3000):
        keys = [str(k) for k in rng.choice(["left", "right", "rotate", "drop"], size=rng.integers(0, 2))]
        session.step(keys)
        for key in keys:
            reference.press(key)  # type: ignore[arg-type]
        due -= 1
        if due == 0:
            reference.iterate()
            due = gravity_frames(reference.delay)
        assert session.game.board == reference.board
        assert (session.game.piece, session.game.score, session.game.lines) == (reference.piece, reference.score, reference.lines)
        assert np.array_equal(session.colour_ids > 0, session.game.board.cells > 0)
        if reference.over:
            break
    assert reference.pieces > 10  # many landings, some with gravity, some dropped


def test_line_clears_keep_each_cell_s_piece_colour() -> None:
    session = GameSession(GameOptions(sequence="fixed", pieces="OOOOOL"))
    for moves in (["left"] * 4, ["left"] * 2, [], ["right"] * 2):
        session.step(["drop"] if session.game.piece else [])
        wait_frames(session, lambda: session.game.piece is not None)
        session.step(moves + ["drop"])
    wait_frames(session, lambda: session.game.piece is not None)
    session.step(["right"] * 4 + ["drop"])  # the fifth O fills both rows: they clear
    assert session.game.lines == 2
    wait_frames(session, lambda: session.game.piece is not None and session.game.piece.kind == "L")
    session.step(["drop"])
    assert session.game.board.filled_count() == 4
    assert set(session.colour_ids[session.colour_ids > 0]) == {5}  # L is piece 5


def wait_frames(session: GameSession, condition: Callable[[], bool], limit: int = 100) -> None:
    for _ in range(limit):
        if condition():
            return
        session.step([])
    raise AssertionError("the session never reached the state")


def test_menu_keys_pause_and_restart() -> None:
    session = GameSession(GameOptions(sequence="fixed", pieces="T", level=10))
    wait_frames(session, lambda: session.game.piece is not None)
    assert session.step(["pause"])[0] == ["pause"]
    before = session.game.piece
    for _ in range(20):
        assert session.step(["left"])[0] == []  # paused: neither keys nor gravity act
    assert session.game.piece == before
    session.step(["pause", "left"])
    assert session.game.piece.x == before.x - 1
    session.step(["new_game"])
    assert (session.games_started, session.game.piece, session.paused) == (2, None, False)


def test_junk_rows_and_calibration_mode() -> None:
    session = GameSession(GameOptions(sequence="sz"))
    session.add_junk_rows(3)
    junk = session.game.board.cells[:3]
    assert junk.any() and all(not row.all() for row in junk)
    assert np.array_equal(session.colour_ids[:3], junk * UNKNOWN_PIECE_ID)
    session.place_piece("I")
    assert session.game.piece == FallingPiece("I", 1, 6, 20)
    session.clear_board()
    assert session.game.board.filled_count() == 0 and not session.colour_ids.any()
    with pytest.raises(ValueError, match="piece must be one of"):
        session.place_piece("Q")


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="sequence"):
        GameOptions(sequence="bag")
    with pytest.raises(ValueError, match="level"):
        GameOptions(level=11)
    with pytest.raises(ValueError, match="fixed sequence"):
        GameOptions(sequence="fixed", pieces="XYZ")


def test_the_seeded_camera_films_the_whole_well_of_every_skin() -> None:
    """A tall well (flat_modern, handheld) ran off the top of camera seed 0's frame; the seeded
    camera is redrawn until the well fits, and a well that fitted keeps its camera."""
    width, height = FRAME_SIZE
    for look in SKINS:
        for seed in range(10):
            options = TargetOptions(skin=look.name, camera_seed=seed)
            corners = filmed_well_corners(options.camera_settings(), look)
            assert (corners >= WELL_MARGIN_PX).all() and (corners <= (width - WELL_MARGIN_PX, height - WELL_MARGIN_PX)).all()
    assert TargetOptions(skin="nes", camera_seed=0).camera_settings() == CameraSettings.random(np.random.default_rng(0))


# ---- the running target --------------------------------------------------------------------------


def press(target: Target, key: str, hold: float = 0.05) -> None:
    target.keyboard.contact(key, True, time.monotonic())
    time.sleep(hold)
    target.keyboard.contact(key, False, time.monotonic())


def replay(records: list[FrameTruth], received: dict[int, list[str]], options: GameOptions) -> None:
    """Run a fresh session on the keys the target received, frame by frame, and compare."""
    session = GameSession(options)
    for record in records:
        session.step(received.get(record.frame, []))
        game = session.game
        piece = game.piece
        assert record.board == tuple(game.board.to_rows()), f"frame {record.frame}"
        assert (record.piece is None) == (piece is None)
        if piece is not None:
            assert (record.piece.kind, record.piece.orientation, record.piece.x, record.piece.y) == (
                piece.kind, piece.orientation, piece.x, piece.y,
            )  # fmt: skip
        assert (record.score, record.lines, record.level, record.next_piece) == (game.score, game.lines, game.level, game.next_piece)


def test_keys_move_the_piece_and_the_ground_truth_replays_on_the_engine(tmp_path) -> None:
    options = GameOptions(level=1, seed=5)
    log = tmp_path / "truth.jsonl"
    with Target(TargetOptions(game=options, truth_path=log, camera_drop_probability=0.0)) as target:
        wait_for(lambda: (r := target.truth.latest()) is not None and r.piece is not None)
        x = target.truth.latest().piece.x
        press(target, "left")
        wait_for(lambda: target.truth.latest().piece.x == x - 1, timeout=1.0)
        for key in ("rotate", "right", "right", "drop"):
            press(target, key)
            time.sleep(0.03)
        wait_for(lambda: target.truth.latest().score > 0, timeout=1.0)
        time.sleep(0.2)
    records = target.truth.frames()
    assert [r.frame for r in records] == list(range(len(records)))  # every frame, none skipped
    shown = [r for r in records if r.camera_frame is not None]
    assert len(shown) > 0.8 * len(records) and all(r.camera_frame == max(0, r.frame - 3) for r in shown)
    received = defaultdict(list)
    for key in target.truth.received():
        received[key.frame].append(key.key)
    assert [k.key for k in target.truth.received()] == ["left", "rotate", "right", "right", "drop"]
    replay(records, received, options)
    edges = target.truth.edges()
    assert len(edges) == 10 and not any(e.dropped for e in edges)
    for edge, got in zip([e for e in edges if e.pressed], target.truth.received()):
        assert got.t == edge.t and records[got.frame].t >= edge.t  # read by the first frame at or after it
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert sum(1 for line in lines if line["type"] == "frame") == len(records)
    assert sum(1 for line in lines if line["type"] == "edge") == 10
    last = next(line for line in reversed(lines) if line["type"] == "frame")
    assert last["board"] == list(records[-1].board) and last["score"] == records[-1].score


def test_dropped_presses_never_reach_the_game() -> None:
    with Target(TargetOptions(game=GameOptions(level=1))) as target:
        wait_for(lambda: (r := target.truth.latest()) is not None and r.piece is not None)
        x = target.truth.latest().piece.x
        target.set_drop_probability(1.0)
        press(target, "left")
        time.sleep(0.1)
        assert target.truth.latest().piece.x == x
        assert target.truth.received() == []
        assert [e.dropped for e in target.truth.edges()] == [True, True]


def test_faults_and_calibration_while_running() -> None:
    with Target(TargetOptions(game=GameOptions(level=1, sequence="fixed", pieces="O"))) as target:
        target.place_piece("I")
        wait_for(lambda: (r := target.truth.latest()) is not None and r.piece is not None and r.piece.kind == "I")
        target.add_junk_rows(4)
        wait_for(lambda: sum(row.count("#") for row in target.truth.latest().board) > 0)
        assert all(row == ".........." for row in target.truth.latest().board[:-4])
        target.clear_board()
        wait_for(lambda: all(row == ".........." for row in target.truth.latest().board))
        with pytest.raises(ValueError, match="positive"):
            target.freeze_camera(0)


def test_preview_off_hides_the_next_piece_and_sz_mode_alternates() -> None:
    session = GameSession(GameOptions(sequence="sz", preview=False, level=10))
    kinds = []
    for _ in range(4):
        wait_frames(session, lambda: session.game.piece is not None)
        assert session.game.next_piece is None
        kinds.append(session.game.piece.kind)
        session.step(["drop"])
    assert kinds == ["S", "Z", "S", "Z"]


def test_command_line_faults_are_checked_then_applied_on_time() -> None:
    assert parse_fault("freeze=2@10") == Fault("freeze", 2.0, 10.0)
    assert parse_fault("clear") == Fault("clear", None, 0.0)
    for spec, reason in (
        ("smoke=1", "unknown fault 'smoke'"),
        ("freeze@3", "needs a value"),
        ("drop=1.5", "probability in 0..1"),
        ("place=Q", "one of O, I"),
        ("junk=2@-1", ">= 0 s"),
    ):
        with pytest.raises(ValueError, match=reason):
            parse_fault(spec)
    with Target(TargetOptions(game=GameOptions(sequence="fixed", pieces="O"))) as target:
        schedule = FaultSchedule([parse_fault("junk=3@0.1"), parse_fault("place=T@0.1")], target_actions(target)).start()
        wait_for(lambda: (r := target.truth.latest()) is not None and r.piece is not None and r.piece.kind == "T")
        wait_for(lambda: any("#" in row for row in target.truth.latest().board))
        schedule.cancel()


def test_a_fault_at_a_piece_waits_for_that_many_new_pieces() -> None:
    assert parse_fault("freeze=1@200p") == Fault("freeze", 1.0, 0.0, 200)
    for spec in ("freeze=1@0p", "freeze=1@2.5p", "freeze=1@p"):
        with pytest.raises(ValueError, match="whole number of pieces"):
            parse_fault(spec)
    with pytest.raises(ValueError, match="piece count"):
        FaultSchedule([parse_fault("clear@2p")], {"clear": lambda _: None})
    with Target(TargetOptions(game=GameOptions(sequence="fixed", pieces="O"))) as target:
        def board_empty() -> bool:
            latest = target.truth.latest()
            return latest is not None and all(set(row) == {"."} for row in latest.board)

        wait_for(lambda: target.pieces_spawned() == 1)  # the game's first piece
        schedule = FaultSchedule([parse_fault("clear@2p")], target_actions(target), target.pieces_spawned).start()
        press(target, "drop")
        wait_for(lambda: target.pieces_spawned() == 2)  # one new piece: the O just dropped stays
        time.sleep(0.1)
        assert not board_empty()
        press(target, "drop")
        wait_for(lambda: target.pieces_spawned() == 3)  # the second: the board is cleared
        wait_for(board_empty)
        schedule.cancel()


def test_the_control_interface_takes_faults_and_gives_the_truth_over_http() -> None:
    with Target(TargetOptions(game=GameOptions(sequence="fixed", pieces="O"))) as target, ControlServer(
        target.truth, target_actions(target)
    ) as control:

        def post(spec: str) -> tuple[int, str]:
            request = urllib.request.Request(control.url + "/fault", data=spec.encode(), method="POST")
            try:
                with urllib.request.urlopen(request, timeout=2) as reply:
                    return reply.status, reply.read().decode()
            except urllib.error.HTTPError as error:
                return error.code, error.read().decode()

        def get(path: str) -> object:
            with urllib.request.urlopen(control.url + path, timeout=2) as reply:
                return json.loads(reply.read())

        assert post("place=L") == (204, "")
        wait_for(lambda: (r := get("/truth")) is not None and r["piece"] is not None and r["piece"]["kind"] == "L")
        status, reason = post("junk=many")
        assert status == 400 and "junk" in reason and "many" in reason
        assert post("junk=2@0.2")[0] == 204
        wait_for(lambda: any("#" in row for row in get("/truth")["board"]))
        press(target, "rotate")
        wait_for(lambda: [k["key"] for k in get("/received")] == ["rotate"])
        wait_for(lambda: [e["pressed"] for e in get("/edges")] == [True, False])  # logged by the next frame
