"""The bus's framing (daemon/bus.py): round trips, every malformed case, lifespans, endpoints, runtime dir."""

from __future__ import annotations

import json
import math
import os
import stat
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gamerig.daemon.bus import (
    SCHEMA_VERSION,
    Endpoints,
    MalformedMessage,
    decode,
    default_runtime_dir,
    encode,
    ensure_runtime_dir,
    is_state_topic,
)


def _payload(**changes: object) -> bytes:
    """A valid payload with some fields changed (a field set to ... is removed)."""
    data = json.loads(encode("obs.frame", "camera", 3, {"status": "ok"}, lifespan_s=0.25)[1])
    data.update(changes)
    return json.dumps({k: v for k, v in data.items() if v is not ...}).encode()


def test_round_trip_keeps_every_field() -> None:
    frames = encode("plan.keys", "ai", 7, {"keys": ["left", "drop"], "x": 3}, lifespan_s=0.4, t_mono=12.5, epoch="e1")
    message = decode(frames)
    assert frames[0] == b"plan.keys"
    assert (message.topic, message.source, message.seq, message.epoch) == ("plan.keys", "ai", 7, "e1")
    assert message.t_mono == 12.5 and message.lifespan_s == 0.4
    assert message.body == {"keys": ["left", "drop"], "x": 3}
    assert abs(message.t_wall - time.time()) < 60
    assert json.loads(frames[1])["v"] == SCHEMA_VERSION


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)


@given(body=st.dictionaries(st.text(max_size=8), json_values, max_size=5), seq=st.integers(0, 2**40))
def test_any_json_body_round_trips(body: dict, seq: int) -> None:
    message = decode(encode("game.state", "ai", seq, body))
    assert message.body == body and message.seq == seq


@pytest.mark.parametrize(
    ("frames", "reason"),
    [
        ([b"obs.frame"], "expected 2 frames"),
        ([b"obs.frame", _payload(), b"extra"], "expected 2 frames"),
        ([b"", _payload()], "empty topic"),
        ([b"\xff\xfe", _payload()], "not UTF-8"),
        ([b"obs.frame", b"{not json"], "not valid JSON"),
        ([b"obs.frame", b"[1, 2]"], "not an object"),
        ([b"obs.frame", _payload(v=2)], "schema version 2"),
        ([b"obs.frame", _payload(v=...)], "schema version None"),
        ([b"obs.frame", _payload(seq=...)], "missing field 'seq'"),
        ([b"obs.frame", _payload(seq=-1)], "seq must be"),
        ([b"obs.frame", _payload(seq=1.5)], "seq must be"),
        ([b"obs.frame", _payload(seq=True)], "seq must be"),
        ([b"obs.frame", _payload(source="")], "source must be"),
        ([b"obs.frame", _payload(t_mono="12")], "timestamps must be numbers"),
        ([b"obs.frame", _payload(lifespan_s=0)], "lifespan_s must be"),
        ([b"obs.frame", _payload(body=[1])], "body must be an object"),
        ([b"obs.frame", _payload(epoch=5)], "epoch and boot"),
        ([b"obs.frame", _payload().replace(b'"t_wall":', b'"t_wall":NaN,"x":')], "not valid JSON"),
    ],
)
def test_malformed_messages_say_what_is_wrong(frames: list[bytes], reason: str) -> None:
    with pytest.raises(MalformedMessage, match=reason):
        decode(frames)


def test_encode_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match="topic"):
        encode("", "ai", 0, {})
    with pytest.raises(ValueError, match="source"):
        encode("x", "", 0, {})
    with pytest.raises(ValueError, match="lifespan_s"):
        encode("x", "ai", 0, {}, lifespan_s=-1.0)
    with pytest.raises(ValueError):  # NaN is not JSON: a consumer could not read it
        encode("x", "ai", 0, {"v": math.nan})
    with pytest.raises(TypeError):
        encode("x", "ai", 0, {"v": object()})


def test_a_message_expires_after_its_lifespan_only() -> None:
    message = decode(encode("obs.frame", "camera", 0, {}, lifespan_s=0.25, t_mono=100.0))
    assert message.age_s(now=100.2) == pytest.approx(0.2)
    assert not message.expired(now=100.2)
    assert message.expired(now=100.3)
    forever = decode(encode("obs.event", "camera", 0, {}, t_mono=100.0))
    assert not forever.expired(now=1e9)


def test_a_message_from_another_boot_is_aged_by_its_wall_time() -> None:
    """Its monotonic time means nothing here; its t_wall, re-based on our clock, does."""
    data = json.loads(encode("obs.frame", "camera", 0, {}, lifespan_s=1.0, t_mono=5.0)[1])
    data.update(boot="another-host", t_wall=time.time() - 2.0)
    message = decode([b"obs.frame", json.dumps(data).encode()])
    assert message.age_s() == pytest.approx(2.0, abs=0.5)
    assert message.expired()


def test_state_topics() -> None:
    assert is_state_topic("hb.camera") and is_state_topic("relay.state") and is_state_topic("wd.state")
    assert not is_state_topic("obs.frame") and not is_state_topic("relay.key") and not is_state_topic("wd.halt")


def test_endpoints_round_trip_through_json(tmp_path: Path) -> None:
    endpoints = Endpoints.default(tmp_path)
    assert endpoints.publish == f"ipc://{tmp_path}/bus-pub"
    assert endpoints.subscribe == f"ipc://{tmp_path}/bus-sub" and endpoints.control == f"ipc://{tmp_path}/control"
    assert Endpoints.from_json(endpoints.to_json()) == endpoints
    remote = Endpoints("tcp://10.0.0.2:5550", "tcp://10.0.0.2:5551", "ipc:///run/x/control", insecure=True)
    assert Endpoints.from_dict(remote.to_dict()) == remote


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{", "not valid JSON"),
        ("[]", "JSON object"),
        ('{"publish": "ipc:///a", "subscribe": "ipc:///b"}', "endpoints.control"),
        ('{"publish": "ipc:///a", "subscribe": "b", "control": "ipc:///c"}', "endpoints.subscribe"),
        ('{"publish": "ipc:///a", "subscribe": "ipc:///b", "control": "ipc:///c", "insecure": "yes"}', "insecure"),
        ('{"publish": "ipc:///a", "subscribe": "ipc:///b", "control": "ipc:///c", "extra": 1}', "unknown key"),
    ],
)
def test_bad_endpoints_are_named(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Endpoints.from_json(text)


def test_default_runtime_dir_prefers_systemd_then_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNTIME_DIRECTORY", "/run/gamerig")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert default_runtime_dir() == Path("/run/gamerig")
    monkeypatch.delenv("RUNTIME_DIRECTORY")
    assert default_runtime_dir() == Path("/run/user/1000/gamerig")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert default_runtime_dir() == Path(f"/tmp/gamerig-{os.getuid()}")


def test_runtime_dir_is_created_and_kept_private(tmp_path: Path) -> None:
    made = ensure_runtime_dir(tmp_path / "a" / "run")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    ensure_runtime_dir(loose)
    assert stat.S_IMODE(loose.stat().st_mode) == 0o700


def test_runtime_dir_that_is_a_file_or_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(FileExistsError):
        ensure_runtime_dir(tmp_path / "file")
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(RuntimeError, match="not a directory"):
        ensure_runtime_dir(tmp_path / "link")
