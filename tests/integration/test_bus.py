"""The bus over real ZeroMQ sockets (ipc:// in a temporary folder, tcp on 127.0.0.1): the proxy, its
last-value cache, the counted drops, the known traps (slow joiner, double bind, LINGER), control."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from gamerig.daemon.bus import (
    ControlClient,
    ControlServer,
    DaemonNotRunning,
    EndpointInUse,
    Endpoints,
    MalformedMessage,
    Message,
    Publisher,
    Subscriber,
    bind,
    decode,
    encode,
)
from gamerig.daemon.bus_proxy import BusProxy
from support.bus_proxy import running_proxy

WAIT_S = 5.0  # generous: the machine is shared


@pytest.fixture
def endpoints(tmp_path: Path) -> Endpoints:
    return Endpoints.default(tmp_path)


@pytest.fixture
def proxy(endpoints: Endpoints) -> Iterator[BusProxy]:
    with running_proxy(endpoints) as (_, proxy):
        yield proxy


@pytest.fixture
def context() -> Iterator[zmq.Context]:
    """The services' side; destroy() also closes what a failing test left open."""
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


def receive_topic(sub: Subscriber, topic: str, timeout_s: float = WAIT_S) -> Message:
    """The next message on ``topic`` (others are skipped)."""
    deadline = time.monotonic() + timeout_s
    while (remaining := deadline - time.monotonic()) > 0:
        message = sub.receive(remaining)
        if message is not None and message.topic == topic:
            return message
    raise AssertionError(f"no {topic} message within {timeout_s} s")


def synced(pub: Publisher, sub: Subscriber) -> None:
    """Both handshakes done: from now on the subscriber gets everything the publisher sends it."""
    assert pub.wait_connected(WAIT_S)
    assert sub.wait_connected(WAIT_S)


def raw_publisher(context: zmq.Context, endpoints: Endpoints) -> zmq.Socket:
    """A bare XPUB socket on the proxy, for sending what Publisher never would; waits until subscribed."""
    sock = context.socket(zmq.XPUB)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoints.publish)
    assert sock.poll(int(WAIT_S * 1000)), "the proxy never subscribed"
    assert sock.recv() == b"\x01"
    return sock


def test_messages_flow_from_publisher_to_subscriber(proxy: BusProxy, context: zmq.Context, endpoints: Endpoints) -> None:
    sub = Subscriber(context, endpoints, ["hb.", "obs."])
    pub = Publisher(context, endpoints, "camera")
    synced(pub, sub)
    sent = [pub.publish("obs.frame", {"frame_seq": i}, lifespan_s=5.0) for i in range(3)]
    pub.publish("plan.keys", {"ignored": True})  # a topic the subscriber did not ask for
    got = [receive_topic(sub, "obs.frame") for _ in sent]
    assert [m.body for m in got] == [m.body for m in sent]
    assert [m.seq for m in got] == [0, 1, 2]  # numbered per topic
    assert got[0].source == "camera" and got[0].epoch == pub.epoch
    assert sub.receive(0.2) is None
    assert sub.counters["received"] == 3 and sub.counters["gaps"] == {}


def test_the_subscriber_handshake_beats_the_slow_joiner(
    proxy: BusProxy, context: zmq.Context, endpoints: Endpoints
) -> None:
    """After wait_connected, the very first message is delivered: no sleep, no re-send."""
    pub = Publisher(context, endpoints, "ai")
    assert pub.wait_connected(WAIT_S)
    pub.publish("ai.state", {"synced": True})
    everything = Subscriber(context, endpoints, [""])  # sees the other subscribers' handshakes too
    assert everything.wait_connected(WAIT_S)
    for _ in range(3):
        sub = Subscriber(context, endpoints, ["plan."])
        assert sub.wait_connected(WAIT_S)
        sent = pub.publish("plan.keys", {"keys": ["drop"]})
        assert receive_topic(sub, "plan.keys").seq == sent.seq
    assert receive_topic(everything, "ai.state").body == {"synced": True}  # kept while it waited
    got = [m.topic for m in iter(lambda: everything.receive(0.3), None)]
    assert got == ["plan.keys"] * 3  # the handshakes are not delivered, and not counted as malformed
    assert everything.counters["malformed"] == 0


def test_no_proxy_means_no_handshake(context: zmq.Context, endpoints: Endpoints) -> None:
    assert not Subscriber(context, endpoints, ["hb."]).wait_connected(0.3)
    assert not Publisher(context, endpoints, "camera").wait_connected(0.3)


def test_a_late_subscriber_gets_the_current_state_only(
    proxy: BusProxy, context: zmq.Context, endpoints: Endpoints
) -> None:
    pub = Publisher(context, endpoints, "relay")
    assert pub.wait_connected(WAIT_S)
    pub.publish("relay.state", {"safe": False})
    pub.publish("relay.state", {"safe": True})
    pub.publish("hb.relay", {"state": "active"})
    pub.publish("relay.key", {"key": "left"})  # an event: gone for whoever was not listening
    deadline = time.monotonic() + WAIT_S
    while proxy.state_topics() != ["hb.relay", "relay.state"] and time.monotonic() < deadline:
        time.sleep(0.01)

    late = Subscriber(context, endpoints, ["relay.", "hb."])
    got = {m.topic: m for m in (late.receive(WAIT_S), late.receive(WAIT_S)) if m is not None}
    assert sorted(got) == ["hb.relay", "relay.state"]
    assert got["relay.state"].body == {"safe": True} and got["relay.state"].seq == 1  # the latest, not the first
    assert late.receive(0.3) is None  # no relay.key: events are not kept


def test_a_connected_subscriber_already_holds_the_kept_state(
    proxy: BusProxy, context: zmq.Context, endpoints: Endpoints
) -> None:
    """The proxy answers the handshake after the replay, so a restarted service that reads its
    predecessor's state with receive(0) right after wait_connected always finds it (the watchdog's
    counts).  With the handshake first, about one try in ten found nothing."""
    pub = Publisher(context, endpoints, "watchdog")
    assert pub.wait_connected(WAIT_S)
    pub.publish("wd.state", {"halts": 2})
    deadline = time.monotonic() + WAIT_S
    while proxy.state_topics() != ["wd.state"] and time.monotonic() < deadline:
        time.sleep(0.01)
    for attempt in range(100):
        late = Subscriber(context, endpoints, ["wd.state"])
        assert late.wait_connected(WAIT_S)
        kept = late.receive(0)
        late.close()
        assert kept is not None and kept.body == {"halts": 2}, f"attempt {attempt}: not there at the handshake"


def test_a_replay_for_a_late_subscriber_is_a_duplicate_for_the_others(
    proxy: BusProxy, context: zmq.Context, endpoints: Endpoints
) -> None:
    first = Subscriber(context, endpoints, ["hb."])
    pub = Publisher(context, endpoints, "ai")
    synced(pub, first)
    pub.publish("hb.ai", {"state": "ready"})
    assert receive_topic(first, "hb.ai").body == {"state": "ready"}
    second = Subscriber(context, endpoints, ["hb."])
    assert receive_topic(second, "hb.ai").body == {"state": "ready"}
    deadline = time.monotonic() + WAIT_S
    while first.counters["duplicates"] == 0 and time.monotonic() < deadline:
        assert first.receive(0.05) is None  # XPUB sent the replay to both; the first one drops it
    assert first.counters["duplicates"] == 1 and first.counters["received"] == 1


def test_a_publisher_started_before_the_proxy_resends_its_state(context: zmq.Context, endpoints: Endpoints) -> None:
    """Slow joiner: what a PUB sends before the proxy subscribes is lost; state is sent again."""
    pub = Publisher(context, endpoints, "watchdog")
    pub.publish("wd.state", {"halted": False})  # nobody there yet: dropped by ZeroMQ
    assert not pub.connected
    with running_proxy(endpoints):
        assert pub.wait_connected(WAIT_S)
        late = Subscriber(context, endpoints, ["wd."])
        assert receive_topic(late, "wd.state").body == {"halted": False}
        late.close()
    with running_proxy(endpoints) as (_, restarted):  # a restarted gamerigd knows nothing
        deadline = time.monotonic() + WAIT_S
        while restarted.state_topics() != ["wd.state"] and time.monotonic() < deadline:
            pub.connected  # what every heartbeat's publish does: take the new subscription, re-send
            time.sleep(0.01)
        late = Subscriber(context, endpoints, ["wd."])
        assert receive_topic(late, "wd.state").body == {"halted": False}


def test_malformed_messages_are_counted_and_dropped(proxy: BusProxy, context: zmq.Context, endpoints: Endpoints) -> None:
    sub = Subscriber(context, endpoints, ["hb.", "obs."])
    raw = raw_publisher(context, endpoints)
    pub = Publisher(context, endpoints, "camera")
    synced(pub, sub)
    two_frame_garbage = [
        [b"obs.frame", b"{not json"],
        [b"obs.frame", b"[]"],
        [b"hb.evil", b'{"v": 99}'],
        [b"obs.frame", b"\xff"],
    ]
    for frames in [[b"obs.frame"], [b"obs.frame", b"{}", b"extra"], *two_frame_garbage]:
        raw.send_multipart(frames)
    raw.send_multipart(encode("obs.frame", "camera2", 0, {"good": True}))
    message = receive_topic(sub, "obs.frame")
    assert message.body == {"good": True}
    assert sub.counters["malformed"] == 2 + len(two_frame_garbage)
    assert sub.last_malformed is not None and "not UTF-8" in sub.last_malformed
    deadline = time.monotonic() + WAIT_S
    while proxy.counters["forwarded"] < 7 and time.monotonic() < deadline:  # the cache runs beside the forwarder
        time.sleep(0.01)
    assert proxy.counters["not_two_frames"] == 2
    assert "hb.evil" not in proxy.state_topics()  # a bad state message is not kept for late subscribers


def test_expired_messages_are_counted_and_dropped(proxy: BusProxy, context: zmq.Context, endpoints: Endpoints) -> None:
    sub = Subscriber(context, endpoints, ["hb.", "obs."])
    pub = Publisher(context, endpoints, "camera")
    synced(pub, sub)
    pub.publish("obs.frame", {"old": True}, lifespan_s=0.05)
    time.sleep(0.3)  # the consumer was busy: the observation is stale when it looks
    pub.publish("obs.frame", {"old": False}, lifespan_s=30.0)
    assert receive_topic(sub, "obs.frame").body == {"old": False}
    assert sub.counters["expired"] == 1


def test_a_recorders_subscriber_keeps_expired_messages(proxy: BusProxy, context: zmq.Context, endpoints: Endpoints) -> None:
    sub = Subscriber(context, endpoints, ["hb.", "obs."], keep_expired=True)
    pub = Publisher(context, endpoints, "camera")
    synced(pub, sub)
    pub.publish("obs.frame", {"old": True}, lifespan_s=0.05)
    time.sleep(0.3)
    assert receive_topic(sub, "obs.frame").body == {"old": True}
    assert sub.counters["expired"] == 0


def test_sequence_gaps_and_restarts_are_counted_per_source(
    proxy: BusProxy, context: zmq.Context, endpoints: Endpoints
) -> None:
    sub = Subscriber(context, endpoints, ["hb.", "obs."])
    raw = raw_publisher(context, endpoints)
    pub = Publisher(context, endpoints, "sync")
    synced(pub, sub)
    for seq, epoch in ((0, "life1"), (1, "life1"), (5, "life1"), (0, "life2"), (2, "life2")):
        raw.send_multipart(encode("obs.frame", "camera", seq, {"seq": seq}, epoch=epoch))
    got = [receive_topic(sub, "obs.frame").body["seq"] for _ in range(5)]
    assert got == [0, 1, 5, 0, 2]
    assert sub.counters["gaps"] == {"camera": 3 + 1}  # 2, 3, 4 of the first life; 1 of the second
    assert sub.counters["restarts"] == {"camera": 1}


def test_a_burst_past_the_high_water_marks_drops_whole_messages_and_counts_them(
    proxy: BusProxy, context: zmq.Context, endpoints: Endpoints
) -> None:
    """No CONFLATE anywhere: a full queue drops whole [topic, payload] messages, and seq gaps count them."""
    sub = Subscriber(context, endpoints, ["hb.", "obs."])
    pub = Publisher(context, endpoints, "camera")
    synced(pub, sub)
    burst = 30_000
    for i in range(burst):  # the subscriber reads nothing meanwhile: its queues fill up
        pub.publish("obs.frame", {"i": i})
    received = []
    while (message := sub.receive(0.5)) is not None:
        received.append(message)
    pub.publish("obs.frame", {"i": burst})
    received.append(receive_topic(sub, "obs.frame"))
    assert all(m.body["i"] == m.seq for m in received)  # every message arrived whole
    counters = sub.counters
    assert counters["malformed"] == 0
    assert counters["gaps"].get("camera", 0) > 0, "the burst should have overflowed the queues"
    assert len(received) + counters["gaps"]["camera"] == burst + 1  # every loss is counted


def test_conflate_would_cut_messages_so_the_bus_never_sets_it(
    proxy: BusProxy, context: zmq.Context, endpoints: Endpoints
) -> None:
    """The trap reproduced: a CONFLATE socket keeps only the last frame, the payload without its topic
    (and a topic filter then drops everything, as the kept frame does not start with the topic)."""
    sub = Subscriber(context, endpoints, ["obs."])
    pub = Publisher(context, endpoints, "camera")
    synced(pub, sub)
    conflated = context.socket(zmq.SUB)
    conflated.setsockopt(zmq.LINGER, 0)
    conflated.setsockopt(zmq.CONFLATE, 1)
    conflated.setsockopt(zmq.SUBSCRIBE, b"")
    conflated.connect(endpoints.subscribe)
    deadline = time.monotonic() + WAIT_S
    while not conflated.poll(50) and time.monotonic() < deadline:  # its subscription has no handshake
        pub.publish("obs.frame", {"i": 0})
    time.sleep(0.2)  # let the last message land: the socket keeps its last frame only
    frame = conflated.recv(zmq.NOBLOCK)
    assert not conflated.getsockopt(zmq.RCVMORE) and not conflated.poll(100)
    assert frame.startswith(b'{"v":1') and b'"body":{"i":0}' in frame  # the payload, its topic frame gone
    with pytest.raises(MalformedMessage, match="expected 2 frames"):
        decode([frame])
    assert sub.socket.getsockopt(zmq.CONFLATE) == 0
    assert receive_topic(sub, "obs.frame").body == {"i": 0}  # the bus's own subscriber gets whole messages


def test_a_second_bind_on_a_live_ipc_path_is_refused(proxy: BusProxy, context: zmq.Context, endpoints: Endpoints) -> None:
    other = zmq.Context()
    try:
        with pytest.raises(EndpointInUse, match="bus-pub is in use"):
            BusProxy(other, endpoints)
        server = ControlServer(other, endpoints)
        with pytest.raises(EndpointInUse, match="control is in use"):
            ControlServer(other, endpoints)
        server.close()
    finally:
        other.term()
    sub = Subscriber(context, endpoints, ["hb."])
    synced(Publisher(context, endpoints, "camera"), sub)  # the first proxy still owns the bus


def test_zmq_alone_lets_a_second_bind_take_an_ipc_path(tmp_path: Path, context: zmq.Context) -> None:
    """The trap reproduced: a plain bind replaces the live socket file; bus.bind refuses instead."""
    endpoint = f"ipc://{tmp_path}/taken"
    first, second, third = (context.socket(zmq.REP) for _ in range(3))
    first.bind(endpoint)
    second.bind(endpoint)  # no error: the first owner is now unreachable
    with pytest.raises(EndpointInUse):
        bind(third, endpoint)


def test_a_second_bind_on_a_tcp_port_is_refused() -> None:
    with socket.socket() as probe, socket.socket() as probe2:
        probe.bind(("127.0.0.1", 0))
        probe2.bind(("127.0.0.1", 0))
        port, port2 = probe.getsockname()[1], probe2.getsockname()[1]
    endpoints = Endpoints(f"tcp://127.0.0.1:{port}", f"tcp://127.0.0.1:{port2}", "ipc:///x/c", insecure=True)
    with running_proxy(endpoints):
        other = zmq.Context()
        try:
            with pytest.raises(EndpointInUse, match=f"127.0.0.1:{port} is in use"):
                BusProxy(other, endpoints)
        finally:
            other.term()


def test_a_stale_ipc_socket_file_is_reused(tmp_path: Path, context: zmq.Context) -> None:
    """A socket file left by a killed daemon is not live: the new daemon binds it."""
    endpoints = Endpoints.default(tmp_path)
    for name in ("bus-pub", "bus-sub"):
        dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        dead.bind(str(tmp_path / name))
        dead.close()  # the file stays, nobody listens
    with running_proxy(endpoints):
        sub = Subscriber(context, endpoints, ["hb."])
        synced(Publisher(context, endpoints, "camera"), sub)


def serve(server: ControlServer, stop: threading.Event) -> None:
    """Echo every request until stopped."""
    while not stop.is_set():
        request = server.receive(0.05)
        if request is not None:
            server.reply({"ok": True, "request": request})


def test_control_round_trip_and_a_malformed_request(context: zmq.Context, endpoints: Endpoints) -> None:
    server = ControlServer(context, endpoints)
    stop = threading.Event()
    thread = threading.Thread(target=serve, args=(server, stop))
    thread.start()
    try:
        client = ControlClient(context, endpoints, timeout_s=WAIT_S)
        assert client.request("status", verbose=True) == {"ok": True, "request": {"cmd": "status", "verbose": True}}
        raw = context.socket(zmq.REQ)
        raw.setsockopt(zmq.LINGER, 0)
        raw.connect(endpoints.control)
        raw.send(b"status please")
        assert raw.poll(int(WAIT_S * 1000))
        reply = raw.recv_json()
        assert reply["ok"] is False and "not JSON" in reply["error"]
        raw.send_json({"no": "cmd"})
        assert raw.poll(int(WAIT_S * 1000)) and "cmd" in raw.recv_json()["error"]
        raw.send_multipart([b'{"cmd": "status"}', b"more"])
        assert raw.poll(int(WAIT_S * 1000)) and "2 frames" in raw.recv_json()["error"]
        raw.send(b"\xff\xfe")
        assert raw.poll(int(WAIT_S * 1000)) and "not JSON" in raw.recv_json()["error"]
        assert client.request("play")["request"] == {"cmd": "play"}  # the server carried on
    finally:
        stop.set()
        thread.join(WAIT_S)
        server.close()


def test_no_daemon_is_a_clear_error(tmp_path: Path, context: zmq.Context) -> None:
    client = ControlClient(context, Endpoints.default(tmp_path), timeout_s=WAIT_S)
    started = time.monotonic()
    with pytest.raises(DaemonNotRunning, match=f"gamerigd is not running .*{tmp_path}/control"):
        client.request("status")
    assert time.monotonic() - started < 1.0  # no socket file: no need to wait


def test_a_dead_daemons_socket_file_is_a_clear_error(tmp_path: Path, context: zmq.Context) -> None:
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(tmp_path / "control"))
    dead.close()  # what kill -9 leaves behind
    client = ControlClient(context, Endpoints.default(tmp_path), timeout_s=WAIT_S)
    started = time.monotonic()
    with pytest.raises(DaemonNotRunning, match="left from a dead one"):
        client.request("status")
    assert time.monotonic() - started < 1.0


def test_a_silent_daemon_times_out_and_the_next_request_gets_its_own_reply(
    context: zmq.Context, endpoints: Endpoints
) -> None:
    server = ControlServer(context, endpoints)  # bound, but busy: nobody calls receive()
    client = ControlClient(context, endpoints, timeout_s=0.3)
    with pytest.raises(DaemonNotRunning, match="no answer on .* within 0.3 s"):
        client.request("status")
    stop = threading.Event()
    thread = threading.Thread(target=serve, args=(server, stop))
    thread.start()  # the daemon recovers; it answers the stale request into the void first
    try:
        client._timeout_s = WAIT_S
        assert client.request("pause")["request"] == {"cmd": "pause"}
    finally:
        stop.set()
        thread.join(WAIT_S)
        server.close()


def test_context_term_does_not_hang_on_an_undelivered_request() -> None:
    """The default LINGER keeps an undelivered message forever and term() waits for it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    endpoints = Endpoints("ipc:///nonexistent/p", "ipc:///nonexistent/s", f"tcp://127.0.0.1:{port}", insecure=True)
    context = zmq.Context()
    client = ControlClient(context, endpoints, timeout_s=0.2)
    with pytest.raises(DaemonNotRunning):
        client.request("status")
    pub = Publisher(context, endpoints, "camera")
    pub.publish("hb.camera", {})
    pub.close()
    terminated = threading.Thread(target=context.term, daemon=True)
    terminated.start()
    terminated.join(WAIT_S)
    assert not terminated.is_alive(), "context.term() hung"
