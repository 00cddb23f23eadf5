"""The bus: the one module that frames, sends and receives gamerig's ZeroMQ messages.

A bus message is two frames, ``[topic, payload]``; the payload is a JSON object::

    {"v": SCHEMA_VERSION, "source": "camera", "seq": 41, "t_mono": ..., "t_wall": ...,
     "lifespan_s": 0.25 | null, "epoch": "...", "boot": "...", "body": {...}}

* ``seq`` counts per (source, topic), so a subscriber that filters topics still sees every gap of
  the topics it takes; ``epoch`` names one Publisher's life, so a restarted service starting again
  at 0 is not a duplicate.
* ``t_mono`` is time.monotonic() of the sender.  CLOCK_MONOTONIC is only comparable within one boot
  of one host, so ``boot`` carries the sender's boot id and ``decode`` re-bases a message from
  another boot onto this host's monotonic clock through its ``t_wall``.
* A message with a ``lifespan_s`` older than that when received is dropped and counted.

Topology (DESIGN.md "The bus", bus_proxy.py): every Publisher connects to the proxy's XSUB
(``Endpoints.publish``), every Subscriber to its XPUB (``Endpoints.subscribe``); gamerigctl talks
to gamerigd by REQ/REP on ``Endpoints.control``.  The traps and what this module does about them:

* slow joiner: a Publisher is an XPUB socket, so it sees the proxy's subscription arrive
  (``Publisher.wait_connected``) and then re-sends its latest state messages (also after a proxy
  restart); the proxy keeps the last state message per topic for late subscribers; and
  ``Subscriber.wait_connected`` is a handshake after which nothing published is missed.
* CONFLATE is never set (it keeps the last *frame*, which breaks two-frame messages).
* LINGER is 0 on every socket, so context.term() never waits for undeliverable messages.
* a second bind on a live ipc:// path would silently take it over: ``bind`` probes the socket file
  first and raises EndpointInUse.
* tcp:// needs CURVE keys or ``Endpoints.insecure`` (bus_security.check_transport).

Tested with real sockets (tests/unit/test_bus_framing.py, tests/integration/test_bus.py): framing
round trips and every malformed case, expiry, gaps, duplicates, late subscribers, the handshake,
bursts past the high-water mark, the double bind, term() after an undelivered request,
DaemonNotRunning.  Measured on the shared 2-core machine (proxy in its own process, ipc, an
obs.frame with a 10x20 board, 500/s): publish-to-receive p50 0.4-0.7 ms, p99 4-10 ms (see
bus_proxy.py); one Publisher sends 30,000-36,000 small messages/s, more than a Python subscriber
takes (the excess is dropped at the high-water marks and counted as gaps once a later message
arrives).  The tests assert no timings.
"""

from __future__ import annotations

import json
import math
import os
import socket as pysocket
import stat
import time
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zmq

from .bus_security import BusSecurity, acquire_authenticator, check_transport, release_authenticator

SCHEMA_VERSION = 1
#: Topics whose last message is the current state: the proxy keeps it and Publishers re-send it.
STATE_TOPICS = ("hb.", "relay.state", "wd.state", "ai.state", "cam.state", "game.state")
#: A Subscriber also subscribes to HELLO_PREFIX + a token of its own; the proxy answers that
#: subscription with one message on exactly that topic, which tells the Subscriber it is connected.
#: On connecting, libzmq sends a socket's subscriptions in byte order, so the "~" (after every
#: letter) puts the handshake last: the proxy replays the kept state for the subscriber's topics
#: before it answers, and a Subscriber that is connected already holds that state.
HELLO_PREFIX = "~bus.hello."
#: The longest ipc:// path a Unix socket address holds (sun_path is 108 bytes with the NUL).
MAX_IPC_PATH = 107

_HEADER_FIELDS = ("v", "source", "seq", "t_mono", "t_wall", "lifespan_s", "epoch", "boot", "body")


def _read_boot_id() -> str:
    """This boot's id (monotonic times compare only within one boot); the host name if unreadable."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return pysocket.gethostname()


BOOT_ID = _read_boot_id()


class MalformedMessage(ValueError):
    """A message that does not follow the framing; ``reason`` says what is wrong."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"malformed bus message: {reason}")


class EndpointInUse(RuntimeError):
    """Another live process is bound to the endpoint (another gamerigd?)."""


class DaemonNotRunning(RuntimeError):
    """Nobody answered on the control endpoint."""


def is_state_topic(topic: str) -> bool:
    """True for the topics whose last message is current state (kept and re-sent)."""
    return topic.startswith(STATE_TOPICS)


# ---------------------------------------------------------------------------------------------
# Endpoints and the runtime directory


@dataclass(frozen=True)
class Endpoints:
    """Where the bus lives; passed to every service as JSON (``to_dict`` / ``from_dict``)."""

    publish: str  # the proxy's XSUB: Publishers connect here
    subscribe: str  # the proxy's XPUB: Subscribers connect here
    control: str  # gamerigd's REP: gamerigctl connects here
    insecure: bool = False  # allow network endpoints without CURVE (the config's bus.insecure)

    @classmethod
    def default(cls, runtime_dir: Path | str) -> Endpoints:
        """ipc:// endpoints in ``runtime_dir`` (create it with ensure_runtime_dir)."""
        base = Path(runtime_dir)
        return cls(f"ipc://{base / 'bus-pub'}", f"ipc://{base / 'bus-sub'}", f"ipc://{base / 'control'}")

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form, for a service's command line."""
        return {"publish": self.publish, "subscribe": self.subscribe, "control": self.control, "insecure": self.insecure}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Endpoints:
        """Inverse of to_dict; a missing or non-string endpoint is a ValueError naming it."""
        if not isinstance(data, Mapping):
            raise ValueError(f"endpoints must be a JSON object, not {type(data).__name__}")
        unknown = set(data) - {"publish", "subscribe", "control", "insecure"}
        if unknown:
            raise ValueError(f"endpoints: unknown key {sorted(unknown)[0]!r}")
        for key in ("publish", "subscribe", "control"):
            if not isinstance(data.get(key), str) or "://" not in data[key]:
                raise ValueError(f"endpoints.{key}: expected an endpoint like ipc:///path, got {data.get(key)!r}")
        insecure = data.get("insecure", False)
        if not isinstance(insecure, bool):
            raise ValueError(f"endpoints.insecure: expected true or false, got {insecure!r}")
        return cls(data["publish"], data["subscribe"], data["control"], insecure)

    def to_json(self) -> str:
        """to_dict as one JSON string (the ``--endpoints`` argument)."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> Endpoints:
        """Inverse of to_json; bad JSON is a ValueError."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"endpoints: not valid JSON: {exc}") from exc
        return cls.from_dict(data)


def default_runtime_dir() -> Path:
    """$RUNTIME_DIRECTORY (systemd), else $XDG_RUNTIME_DIR/gamerig, else /tmp/gamerig-<uid>."""
    systemd_dir = os.environ.get("RUNTIME_DIRECTORY")
    if systemd_dir:
        return Path(systemd_dir.split(":")[0])
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "gamerig"
    return Path(f"/tmp/gamerig-{os.getuid()}")


def ensure_runtime_dir(path: Path | str) -> Path:
    """Create ``path`` mode 0700 (or tighten it); refuse one that is not ours or not a directory.

    The directory is the ipc bus's only access control: whoever can enter it can publish.
    """
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):  # lstat: a symlink is refused too
        raise RuntimeError(f"runtime directory {path} is not a directory")
    if info.st_uid != os.getuid():
        raise RuntimeError(f"runtime directory {path} belongs to uid {info.st_uid}, not to us ({os.getuid()})")
    if info.st_mode & 0o077:
        path.chmod(0o700)
    return path


# ---------------------------------------------------------------------------------------------
# Framing


@dataclass(frozen=True)
class Message:
    """One decoded bus message; t_mono is on this host's monotonic clock (see decode)."""

    topic: str
    source: str
    seq: int
    t_mono: float
    t_wall: float
    lifespan_s: float | None
    body: dict
    epoch: str = ""

    def age_s(self, now: float | None = None) -> float:
        """Seconds since it was sent (``now`` defaults to time.monotonic())."""
        return (time.monotonic() if now is None else now) - self.t_mono

    def expired(self, now: float | None = None) -> bool:
        """True when it has a lifespan and is older than it."""
        return self.lifespan_s is not None and self.age_s(now) > self.lifespan_s


def encode(
    topic: str,
    source: str,
    seq: int,
    body: Mapping[str, Any],
    lifespan_s: float | None = None,
    t_mono: float | None = None,
    epoch: str = "",
) -> list[bytes]:
    """The two frames of a message.  A bad argument is the caller's bug: ValueError/TypeError."""
    return _encode(topic, source, seq, body, lifespan_s, t_mono, epoch)[0]


def _encode(
    topic: str,
    source: str,
    seq: int,
    body: Mapping[str, Any],
    lifespan_s: float | None,
    t_mono: float | None,
    epoch: str,
) -> tuple[list[bytes], Message]:
    """encode's frames and the Message they carry."""
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"topic must be a non-empty string, got {topic!r}")
    if not isinstance(source, str) or not source:
        raise ValueError(f"source must be a non-empty string, got {source!r}")
    if lifespan_s is not None and not (lifespan_s > 0 and math.isfinite(lifespan_s)):
        raise ValueError(f"lifespan_s must be a positive number of seconds, got {lifespan_s!r}")
    header = {
        "v": SCHEMA_VERSION,
        "source": source,
        "seq": int(seq),
        "t_mono": time.monotonic() if t_mono is None else float(t_mono),
        "t_wall": time.time(),
        "lifespan_s": None if lifespan_s is None else float(lifespan_s),
        "epoch": epoch,
        "boot": BOOT_ID,
        "body": dict(body),
    }
    payload = json.dumps(header, separators=(",", ":"), allow_nan=False)
    message = Message(topic, source, header["seq"], header["t_mono"], header["t_wall"], header["lifespan_s"],
                      header["body"], epoch)
    return [topic.encode(), payload.encode()], message


def decode(frames: Sequence[bytes]) -> Message:
    """The Message in ``frames``; anything off (frames, UTF-8, JSON, version, fields) is MalformedMessage."""
    if len(frames) != 2:
        raise MalformedMessage(f"expected 2 frames (topic, payload), got {len(frames)}")
    try:
        topic = bytes(frames[0]).decode()
        data = json.loads(bytes(frames[1]), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise MalformedMessage(f"not UTF-8: {exc.reason}") from exc
    except ValueError as exc:  # JSONDecodeError, and the NaN/Infinity rejection
        raise MalformedMessage(f"payload is not valid JSON: {exc}") from exc
    if not topic:
        raise MalformedMessage("empty topic")
    if not isinstance(data, dict):
        raise MalformedMessage(f"payload is a JSON {type(data).__name__}, not an object")
    if data.get("v") != SCHEMA_VERSION:
        raise MalformedMessage(f"schema version {data.get('v')!r}, this build reads {SCHEMA_VERSION}")
    missing = [key for key in _HEADER_FIELDS if key not in data]
    if missing:
        raise MalformedMessage(f"missing field {missing[0]!r}")
    source, seq, body, epoch, boot = data["source"], data["seq"], data["body"], data["epoch"], data["boot"]
    t_mono, t_wall, lifespan = data["t_mono"], data["t_wall"], data["lifespan_s"]
    if not isinstance(source, str) or not source:
        raise MalformedMessage(f"source must be a non-empty string, got {source!r}")
    if not _is_int(seq) or seq < 0:
        raise MalformedMessage(f"seq must be an integer >= 0, got {seq!r}")
    if not (_is_number(t_mono) and _is_number(t_wall)):
        raise MalformedMessage(f"timestamps must be numbers, got t_mono={t_mono!r} t_wall={t_wall!r}")
    if lifespan is not None and not (_is_number(lifespan) and lifespan > 0):
        raise MalformedMessage(f"lifespan_s must be null or a positive number, got {lifespan!r}")
    if not isinstance(body, dict):
        raise MalformedMessage(f"body must be an object, got {type(body).__name__}")
    if not isinstance(epoch, str) or not isinstance(boot, str):
        raise MalformedMessage("epoch and boot must be strings")
    if boot != BOOT_ID:  # another host or boot: its monotonic clock means nothing here
        t_mono = t_wall - (time.time() - time.monotonic())
    return Message(topic, source, seq, float(t_mono), float(t_wall), lifespan, body, epoch)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------------------------------------
# Sockets


def new_socket(
    context: zmq.Context, kind: int, endpoint: str, security: BusSecurity | None, insecure: bool, server: bool
) -> zmq.Socket:
    """A socket with LINGER 0, CURVE set up for its role, after the transport check (not yet bound/connected)."""
    check_transport(endpoint, security, insecure)
    sock = context.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    if security is not None:
        if server:
            security.configure_server(sock)
        else:
            security.configure_client(sock)
    return sock


def bind(sock: zmq.Socket, endpoint: str) -> None:
    """Bind, refusing an ipc:// path another live process is bound to (zmq would take it over silently)."""
    if endpoint.startswith("ipc://") and not endpoint.startswith("ipc://@"):
        path = endpoint[len("ipc://") :]
        if len(path.encode()) > MAX_IPC_PATH:
            raise ValueError(f"{endpoint}: the path is longer than the {MAX_IPC_PATH} bytes a Unix socket takes")
        if ipc_is_live(path):
            raise EndpointInUse(f"{endpoint} is in use by another live process (is another gamerigd running?)")
    try:
        sock.bind(endpoint)
    except zmq.ZMQError as exc:
        if exc.errno == zmq.EADDRINUSE:
            raise EndpointInUse(f"{endpoint} is in use by another process") from exc
        raise ValueError(f"{endpoint}: cannot bind: {exc}") from exc


def ipc_is_live(path: str) -> bool:
    """True when something accepts connections on the Unix socket at ``path`` (a stale file is not live)."""
    probe = pysocket.socket(pysocket.AF_UNIX, pysocket.SOCK_STREAM)
    probe.settimeout(0.5)
    try:
        probe.connect(path)
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
        return False  # nothing there, or a file nobody listens on
    except OSError:
        return True  # someone else's socket (EACCES), a full backlog (EAGAIN, timeout): never take it over
    finally:
        probe.close()
    return True


def _connect(sock: zmq.Socket, endpoint: str) -> None:
    try:
        sock.connect(endpoint)
    except zmq.ZMQError as exc:
        raise ValueError(f"{endpoint}: cannot connect: {exc}") from exc


# ---------------------------------------------------------------------------------------------
# Publish and subscribe


class Publisher:
    """Sends one source's messages to the proxy; numbers them per topic and re-sends state on (re)connect.

    It is an XPUB socket connected to the proxy's XSUB, so it sees the proxy's subscribe-all
    arrive: ``wait_connected`` waits for it, and each one it sees (the first connection, a
    restarted proxy) makes it re-send the last message of every state topic it has published.
    Messages published before the proxy has subscribed are lost, as with any PUB socket.
    """

    def __init__(
        self, context: zmq.Context, endpoints: Endpoints, source: str, security: BusSecurity | None = None
    ) -> None:
        if not source:
            raise ValueError("a Publisher needs a source name")
        self.source = source
        self.epoch = uuid.uuid4().hex[:12]
        self._socket = new_socket(context, zmq.XPUB, endpoints.publish, security, endpoints.insecure, server=False)
        self._socket.setsockopt(zmq.XPUB_VERBOSE, 1)
        _connect(self._socket, endpoints.publish)
        self._seq: dict[str, int] = {}
        self._state: dict[str, list[bytes]] = {}
        self._connected = False

    @property
    def connected(self) -> bool:
        """True once the proxy has subscribed (checked without waiting)."""
        self._take_subscriptions(0)
        return self._connected

    def wait_connected(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the proxy's subscription; True when connected."""
        deadline = time.monotonic() + timeout_s
        while not self._connected:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._take_subscriptions(remaining)
        return True

    def publish(self, topic: str, body: Mapping[str, Any], lifespan_s: float | None = None) -> Message:
        """Send ``body`` on ``topic`` and return the Message as sent."""
        self._take_subscriptions(0)
        seq = self._seq.get(topic, 0)
        frames, message = _encode(topic, self.source, seq, body, lifespan_s, None, self.epoch)
        self._seq[topic] = seq + 1  # only now: a body that cannot be sent must not look like a drop
        self._send(frames)
        if is_state_topic(topic):
            self._state[topic] = frames
        return message

    def close(self) -> None:
        """Close the socket (nothing is waited for: LINGER is 0)."""
        self._socket.close()

    def _send(self, frames: list[bytes]) -> None:
        try:
            self._socket.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            pass  # high-water mark reached: dropped, and the subscribers' seq gaps count it

    def _take_subscriptions(self, timeout_s: float) -> None:
        """Read the proxy's subscriptions; its subscribe-all means a (new) proxy: re-send state.

        The proxy also passes on its subscribers' subscriptions, which need nothing here.
        """
        timeout_ms = max(0, int(timeout_s * 1000))
        while self._socket.poll(timeout_ms, zmq.POLLIN):
            event = self._socket.recv()
            if event == b"\x01":
                self._connected = True
                for frames in self._state.values():
                    self._send(frames)
            timeout_ms = 0


class Subscriber:
    """Receives the topics starting with ``prefixes``; drops and counts malformed, expired and repeated ones.

    ``wait_connected`` is the slow-joiner handshake: it returns once the proxy has this
    subscriber's subscriptions, so nothing published after it returns is missed.

    counters: received (returned), malformed, expired, duplicates (a state message the proxy
    replayed for another late subscriber), gaps ({source: missed seq numbers}), restarts
    ({source: new publisher epochs seen after the first}).  With ``keep_expired`` (a recorder,
    which wants what came however late it reads it) expired messages are returned, not dropped.
    """

    def __init__(
        self,
        context: zmq.Context,
        endpoints: Endpoints,
        prefixes: Sequence[str],
        security: BusSecurity | None = None,
        keep_expired: bool = False,
    ) -> None:
        if isinstance(prefixes, str):
            raise TypeError("prefixes is a sequence of topic prefixes, e.g. ['hb.'], not one string")
        self._socket = new_socket(context, zmq.SUB, endpoints.subscribe, security, endpoints.insecure, server=False)
        for prefix in prefixes:
            self._socket.setsockopt(zmq.SUBSCRIBE, prefix.encode())
        self._hello = f"{HELLO_PREFIX}{uuid.uuid4().hex}".encode()
        self._socket.setsockopt(zmq.SUBSCRIBE, self._hello)  # last: the proxy has the others when it answers
        _connect(self._socket, endpoints.subscribe)
        self._connected = False
        self._early: deque[Message] = deque()  # what arrived while wait_connected waited
        self._last: dict[tuple[str, str], tuple[str, int]] = {}  # (source, topic) -> (epoch, seq)
        self._counts = {"received": 0, "malformed": 0, "expired": 0, "duplicates": 0}
        self._gaps: dict[str, int] = {}
        self._restarts: dict[str, int] = {}
        self.last_malformed: str | None = None  # the reason of the last malformed message
        self._keep_expired = keep_expired

    @property
    def socket(self) -> zmq.Socket:
        """The SUB socket, for registering with a zmq.Poller only (receive() reads it)."""
        return self._socket

    @property
    def counters(self) -> dict[str, Any]:
        """A snapshot of the counts (see the class docstring)."""
        return {**self._counts, "gaps": dict(self._gaps), "restarts": dict(self._restarts)}

    def wait_connected(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the proxy's answer to this subscriber; True when connected.

        Messages arriving meanwhile are kept for receive(); a zmq.Poller on ``socket`` does not
        see those, so call receive(0) once before polling.
        """
        deadline = time.monotonic() + timeout_s
        while not self._connected:
            remaining_ms = int((deadline - time.monotonic()) * 1000)
            if remaining_ms <= 0 or not self._socket.poll(remaining_ms, zmq.POLLIN):
                return self._connected
            message = self._accept(self._socket.recv_multipart())
            if message is not None:
                self._early.append(message)
        return True

    def receive(self, timeout_s: float) -> Message | None:
        """The next good, fresh message, or None after ``timeout_s`` (0: only what is already queued)."""
        while self._early:
            message = self._early.popleft()
            if self._keep_expired or not message.expired():
                return message
            self._counts["received"] -= 1  # counted when it arrived; it went stale waiting
            self._counts["expired"] += 1
        deadline = time.monotonic() + timeout_s
        while True:
            remaining_ms = max(0, int((deadline - time.monotonic()) * 1000))
            if not self._socket.poll(remaining_ms, zmq.POLLIN):
                return None
            message = self._accept(self._socket.recv_multipart())
            if message is not None:
                return message

    def close(self) -> None:
        """Close the socket."""
        self._socket.close()

    def _accept(self, frames: list[bytes]) -> Message | None:
        if frames[0].startswith(HELLO_PREFIX.encode()):  # handshakes, ours or another subscriber's
            self._connected = self._connected or frames[0] == self._hello
            return None
        try:
            message = decode(frames)
        except MalformedMessage as exc:
            self._counts["malformed"] += 1
            self.last_malformed = exc.reason
            return None
        if not self._in_sequence(message):
            self._counts["duplicates"] += 1
            return None
        if message.expired() and not self._keep_expired:
            self._counts["expired"] += 1
            return None
        self._counts["received"] += 1
        return message

    def _in_sequence(self, message: Message) -> bool:
        """Count gaps; False for a message already seen (same publisher life, seq not newer)."""
        key = (message.source, message.topic)
        last = self._last.get(key)
        if last is not None and last[0] == message.epoch:
            if message.seq <= last[1]:
                return False
            missed = message.seq - last[1] - 1
            if missed:
                self._gaps[message.source] = self._gaps.get(message.source, 0) + missed
        elif last is not None:
            self._restarts[message.source] = self._restarts.get(message.source, 0) + 1
        self._last[key] = (message.epoch, message.seq)
        return True


# ---------------------------------------------------------------------------------------------
# Control: gamerigctl -> gamerigd


class ControlClient:
    """gamerigctl's side: one JSON request, one JSON reply, or DaemonNotRunning after ``timeout_s``.

    A REQ socket that timed out is stuck waiting for its reply, so it is closed and the next
    request makes a new one.
    """

    def __init__(
        self,
        context: zmq.Context,
        endpoints: Endpoints,
        timeout_s: float = 2.0,
        security: BusSecurity | None = None,
    ) -> None:
        check_transport(endpoints.control, security, endpoints.insecure)
        self._context = context
        self._endpoints = endpoints
        self._timeout_s = timeout_s
        self._security = security
        self._socket: zmq.Socket | None = None

    def request(self, cmd: str, **args: Any) -> dict:
        """Send ``{"cmd": cmd, **args}`` and return the reply object."""
        endpoint = self._endpoints.control
        if endpoint.startswith("ipc://") and not endpoint.startswith("ipc://@"):  # know at once, not after the timeout
            path = endpoint[len("ipc://") :]
            if not Path(path).exists():
                raise DaemonNotRunning(f"gamerigd is not running (no control socket at {path})")
            if not ipc_is_live(path):
                raise DaemonNotRunning(f"gamerigd is not running (its control socket {path} is left from a dead one)")
        payload = json.dumps({**args, "cmd": cmd}, allow_nan=False).encode()
        sock = self._socket or self._new_socket()
        timeout_ms = int(self._timeout_s * 1000)
        try:
            sock.send(payload, zmq.NOBLOCK)
            answered = sock.poll(timeout_ms, zmq.POLLIN)
        except zmq.ZMQError:
            answered = False
        if not answered:
            self.close()
            raise DaemonNotRunning(
                f"gamerigd is not running (no answer on {endpoint} within {self._timeout_s:g} s)"
            )
        raw = sock.recv()
        try:
            reply = json.loads(raw)
        except ValueError as exc:
            raise MalformedMessage(f"control reply is not JSON: {exc}") from exc
        if not isinstance(reply, dict):
            raise MalformedMessage(f"control reply is a JSON {type(reply).__name__}, not an object")
        return reply

    def close(self) -> None:
        """Close the socket (a later request opens a new one)."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def _new_socket(self) -> zmq.Socket:
        sock = new_socket(
            self._context, zmq.REQ, self._endpoints.control, self._security, self._endpoints.insecure, server=False
        )
        _connect(sock, self._endpoints.control)
        self._socket = sock
        return sock


class ControlServer:
    """gamerigd's side: receive() a request dict, then reply() to it before the next receive().

    A request that is not a JSON object with a string "cmd" is answered
    ``{"ok": false, "error": ...}`` here and never returned.
    """

    def __init__(self, context: zmq.Context, endpoints: Endpoints, security: BusSecurity | None = None) -> None:
        self._context = context
        self._security = security
        self._socket = new_socket(context, zmq.REP, endpoints.control, security, endpoints.insecure, server=True)
        if security is not None:
            acquire_authenticator(context, security)
        try:
            bind(self._socket, endpoints.control)
        except Exception:
            self.close()
            raise
        self._pending = False

    @property
    def socket(self) -> zmq.Socket:
        """The REP socket, for registering with a zmq.Poller only."""
        return self._socket

    def receive(self, timeout_s: float) -> dict | None:
        """The next valid request, or None after ``timeout_s``."""
        if self._pending:
            raise RuntimeError("reply() to the last request before receiving the next")
        deadline = time.monotonic() + timeout_s
        while True:
            remaining_ms = max(0, int((deadline - time.monotonic()) * 1000))
            if not self._socket.poll(remaining_ms, zmq.POLLIN):
                return None
            frames = self._socket.recv_multipart()
            try:
                if len(frames) != 1:
                    raise ValueError(f"{len(frames)} frames, expected 1")
                request = json.loads(frames[0], parse_constant=_reject_constant)
            except ValueError as exc:  # also bad UTF-8
                self._refuse(f"request is not JSON: {exc}")
                continue
            if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
                self._refuse('request needs a string "cmd"')
                continue
            self._pending = True
            return request

    def _refuse(self, error: str) -> None:
        self._socket.send(json.dumps({"ok": False, "error": error}).encode())

    def reply(self, body: Mapping[str, Any]) -> None:
        """Answer the request receive() returned."""
        if not self._pending:
            raise RuntimeError("reply() without a request")
        self._socket.send(json.dumps(dict(body), allow_nan=False).encode())
        self._pending = False

    def close(self) -> None:
        """Close the socket and release the ZAP handler if this server started it."""
        self._socket.close()
        if self._security is not None:
            release_authenticator(self._context)
