"""A tcp:// bus with CURVE and ZAP on real sockets (127.0.0.1): allowed keys get messages, unknown
keys and plain clients get nothing, a plain tcp bus is refused unless insecure, keys from the CLI."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from gamerig.daemon import ctl
from gamerig.daemon.bus import ControlClient, ControlServer, Endpoints, Publisher, Subscriber
from gamerig.daemon.bus_proxy import BusProxy
from gamerig.daemon.bus_security import BusSecurity, InsecureBus
from gamerig.daemon.config_errors import ConfigError
from support.bus_proxy import running_proxy

WAIT_S = 5.0
REJECTED_S = 1.0  # how long a rejected client is watched for (nothing must arrive)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def tcp_endpoints(insecure: bool = False) -> Endpoints:
    return Endpoints(*(f"tcp://127.0.0.1:{free_port()}" for _ in range(3)), insecure=insecure)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Keys made the way an operator makes them: `gamerigctl keys --dir D`."""
    directory = tmp_path_factory.mktemp("keys") / "curve"
    assert ctl.main(["keys", "--dir", str(directory)]) == 0
    return directory


@pytest.fixture(scope="module")
def stranger_keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("stranger") / "curve"
    assert ctl.main(["keys", "--dir", str(directory)]) == 0
    return directory


@pytest.fixture
def context() -> Iterator[zmq.Context]:
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


def test_the_keys_command_refuses_to_overwrite(keys: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ctl.main(["keys", "--dir", str(keys)]) == 1
    assert "exists" in capsys.readouterr().err
    assert sorted(p.name for p in (keys / "authorized_clients").iterdir()) == ["client.key"]
    assert (keys / "server.key_secret").stat().st_mode & 0o077 == 0


def test_the_keys_command_writes_to_the_config_folder_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GAMERIG_CONFIG_DIR", str(tmp_path))
    assert ctl.main(["keys", "--json"]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["server_secret"] == str(tmp_path / "curve" / "server.key_secret")
    assert BusSecurity.load(written["server_secret"]).allowed_clients_dir == tmp_path / "curve" / "authorized_clients"


def test_an_allowed_client_gets_messages(keys: Path, context: zmq.Context) -> None:
    security = BusSecurity.load(keys / "server.key_secret")
    endpoints = tcp_endpoints()
    with running_proxy(endpoints, security):
        client = BusSecurity.load(keys / "server.key", client_key=keys / "client.key_secret")  # a remote host
        sub = Subscriber(context, endpoints, ["hb."], client)
        pub = Publisher(context, endpoints, "camera", client)
        assert pub.wait_connected(WAIT_S)
        pub.publish("hb.camera", {"state": "ready"})
        message = sub.receive(WAIT_S)
        assert message is not None and message.body == {"state": "ready"}


def test_an_unknown_client_key_gets_nothing(keys: Path, stranger_keys: Path, context: zmq.Context) -> None:
    security = BusSecurity.load(keys / "server.key_secret")
    endpoints = tcp_endpoints()
    stranger = BusSecurity.load(keys / "server.key", client_key=stranger_keys / "client.key_secret")
    with running_proxy(endpoints, security) as (_, proxy):
        pub = Publisher(context, endpoints, "camera", security)
        assert pub.wait_connected(WAIT_S)
        pub.publish("hb.camera", {"state": "ready"})
        intruder_sub = Subscriber(context, endpoints, ["hb."], stranger)
        intruder_pub = Publisher(context, endpoints, "intruder", stranger)
        assert not intruder_pub.wait_connected(REJECTED_S)
        intruder_pub.publish("hb.intruder", {"state": "evil"})
        assert intruder_sub.receive(0.2) is None  # neither the kept state nor anything live
        assert proxy.state_topics() == ["hb.camera"]
        allowed_sub = Subscriber(context, endpoints, ["hb."], security)
        message = allowed_sub.receive(WAIT_S)
        assert message is not None and message.source == "camera"  # the bus itself works


def test_a_plain_client_cannot_join_a_curve_bus(keys: Path, context: zmq.Context) -> None:
    security = BusSecurity.load(keys / "server.key_secret")
    endpoints = tcp_endpoints()
    with running_proxy(endpoints, security):
        plain = Endpoints(endpoints.publish, endpoints.subscribe, endpoints.control, insecure=True)
        assert not Publisher(context, plain, "camera").wait_connected(REJECTED_S)


def test_a_plain_tcp_bus_is_refused_unless_insecure(context: zmq.Context) -> None:
    endpoints = tcp_endpoints()
    with pytest.raises(InsecureBus, match="needs CURVE keys"):
        BusProxy(context, endpoints)
    for make in (
        lambda: Publisher(context, endpoints, "camera"),
        lambda: Subscriber(context, endpoints, ["hb."]),
        lambda: ControlClient(context, endpoints),
        lambda: ControlServer(context, endpoints),
    ):
        with pytest.raises(InsecureBus, match="bus.insecure: true"):
            make()
    insecure = tcp_endpoints(insecure=True)
    with running_proxy(insecure, None):
        sub = Subscriber(context, insecure, ["hb."])
        pub = Publisher(context, insecure, "camera")
        assert pub.wait_connected(WAIT_S)
        pub.publish("hb.camera", {})
        assert sub.receive(WAIT_S) is not None


def test_control_and_proxy_share_one_authenticator(keys: Path, stranger_keys: Path) -> None:
    """Both bind CURVE sockets on gamerigd's context; closing one keeps the other authenticated."""
    security = BusSecurity.load(keys / "server.key_secret")
    stranger = BusSecurity.load(keys / "server.key", client_key=stranger_keys / "client.key_secret")
    endpoints = tcp_endpoints()
    with running_proxy(endpoints, security) as (daemon_context, _):
        server = ControlServer(daemon_context, endpoints, security)
        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                if (request := server.receive(0.05)) is not None:
                    server.reply({"ok": True, "cmd": request["cmd"]})

        thread = threading.Thread(target=serve)
        thread.start()
        clients = zmq.Context()
        try:
            assert ControlClient(clients, endpoints, WAIT_S, security).request("status") == {"ok": True, "cmd": "status"}
            with pytest.raises(Exception, match="not running"):
                ControlClient(clients, endpoints, REJECTED_S, stranger).request("status")
        finally:
            stop.set()
            thread.join(WAIT_S)
            server.close()
        try:
            assert not Publisher(clients, endpoints, "intruder", stranger).wait_connected(REJECTED_S)
            assert Publisher(clients, endpoints, "camera", security).wait_connected(WAIT_S)
        finally:
            clients.destroy(linger=0)


def test_bad_key_files_are_config_errors(keys: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="missing.key_secret: key file not found"):
        BusSecurity.load(tmp_path / "missing.key_secret")
    garbage = tmp_path / "server.key_secret"
    garbage.write_text("not a key\n")
    with pytest.raises(ConfigError, match="server.key_secret"):
        BusSecurity.load(garbage)
    with pytest.raises(ConfigError, match="client.key: a client key needs its secret half"):
        BusSecurity.load(keys / "server.key", client_key=keys / "client.key")
    with pytest.raises(ConfigError, match="allowed client keys folder does not exist"):
        BusSecurity.load(keys / "server.key_secret", client_keys_dir=tmp_path / "nowhere")


def test_a_host_with_only_the_public_server_key_cannot_bind(keys: Path) -> None:
    public_only = BusSecurity.load(keys / "server.key", client_key=keys / "client.key_secret")
    context = zmq.Context()
    try:
        with pytest.raises(ValueError, match="cannot bind the bus"):
            BusProxy(context, tcp_endpoints(), public_only)
    finally:
        context.term()
