"""The bus's hub: an XSUB/XPUB proxy that also keeps the last message of every state topic.

gamerigd builds one BusProxy on its own context and runs it in a thread::

    proxy = BusProxy(context, endpoints, security)     # binds now: errors surface in the caller
    thread = threading.Thread(target=proxy.run, args=(stop_event,), daemon=True)
    thread.start() ... stop_event.set(); thread.join(); proxy.close(); context.term()

Publishers connect to the XSUB (``endpoints.publish``), Subscribers to the XPUB
(``endpoints.subscribe``).  The XSUB subscribes to everything itself, so state is kept even
while nobody listens.

Forwarding is libzmq's own proxy (zmq.proxy_steerable), which runs without Python's GIL, so a
busy Python thread in gamerigd does not delay the bus.  Measured on the shared 2-core machine
(proxy in its own process, ipc, 1,000 obs.frame messages with a 10x20 board at 500/s,
publish-to-receive, several runs): with a Python thread spinning beside the
proxy, p50 0.3-0.4 ms and p99 1.6-5.7 ms; the earlier proxy written as a Python poll loop gave
p50 6.5 ms and p99 20 ms in that case.  Without the spinning thread: p50 0.5-0.7 ms, p99 4-10 ms
(the machine's other jobs).

The last-value cache runs in run()'s thread beside it, fed by the proxy's capture socket, which
sees every message and every subscription in the order the proxy handled them.  The XPUB is
verbose, so every subscription arrives, even one for a prefix another subscriber already has;
run() answers it by sending the kept messages of the state topics (bus.STATE_TOPICS) under that
prefix back into the XSUB (over inproc), so the proxy delivers them after everything the new
subscriber could already see live.  XPUB cannot address one subscriber: the other subscribers of
that prefix get the replay too, and Subscriber drops it as a duplicate.  A Subscriber's
handshake subscription (bus.HELLO_PREFIX + its own token) is answered with one message on
exactly that topic, so only that subscriber gets it.

The proxy forwards what it gets; consumers count malformed messages (bus.Subscriber).  A state
message is kept only when it decodes.  Tested in tests/integration/test_bus.py (late subscriber,
handshake, bursts, malformed input, a second proxy on the same ipc path or tcp port) and
test_bus_security.py (CURVE + ZAP).
"""

from __future__ import annotations

import threading
import time
import uuid

import zmq

from .bus import HELLO_PREFIX, Endpoints, MalformedMessage, bind, decode, encode, is_state_topic, new_socket
from .bus_security import BusSecurity, acquire_authenticator, release_authenticator

POLL_S = 0.1  # how often run() looks at its stop event
CAPTURE_HWM = 100_000  # the cache lags the proxy only briefly; a full capture queue would lose state updates
CONNECT_S = 2.0  # for the inproc replay socket's subscription (immediate in practice)


class BusProxy:
    """XSUB (publishers) -> XPUB (subscribers) with a last-value cache of state topics."""

    def __init__(self, context: zmq.Context, endpoints: Endpoints, security: BusSecurity | None = None) -> None:
        self._context = context
        self._security = security
        self._sockets: list[zmq.Socket] = []
        self._cache: dict[bytes, list[bytes]] = {}
        self._counts = {"forwarded": 0, "not_two_frames": 0, "replayed": 0, "subscriptions": 0}
        if security is not None:
            acquire_authenticator(context, security)
        try:
            self._xsub = self._bound(zmq.XSUB, endpoints.publish, endpoints.insecure)
            self._xpub = self._bound(zmq.XPUB, endpoints.subscribe, endpoints.insecure)
            self._xpub.setsockopt(zmq.XPUB_VERBOSE, 1)
            self._xsub.send(b"\x01")  # subscribe to every topic, listeners or not
            self._wire_inproc()
        except Exception:
            self.close()
            raise

    @property
    def counters(self) -> dict[str, int]:
        """forwarded (messages seen), not_two_frames (forwarded; consumers count them as malformed),
        replayed (kept messages sent again for a new subscription), subscriptions."""
        return dict(self._counts)

    def state_topics(self) -> list[str]:
        """The state topics with a kept message."""
        return sorted(topic.decode() for topic in self._cache)

    def run(self, stop: threading.Event) -> None:
        """Forward until ``stop`` is set (checked every POLL_S); call it once, from one thread."""
        forwarder = threading.Thread(
            target=zmq.proxy_steerable,
            args=(self._xsub, self._xpub, self._capture, self._control_end),
            name="bus-forwarder",
            daemon=True,
        )
        forwarder.start()
        try:
            while not stop.is_set():
                if self._captured.poll(int(POLL_S * 1000), zmq.POLLIN):
                    self._take_captured()
        finally:
            self._control.send(b"TERMINATE")
            forwarder.join()

    def close(self) -> None:
        """Close the sockets and release the ZAP handler (call after run() returned)."""
        for sock in reversed(self._sockets):
            sock.close()
        self._sockets.clear()
        if self._security is not None:
            release_authenticator(self._context)
            self._security = None

    def _bound(self, kind: int, endpoint: str, insecure: bool) -> zmq.Socket:
        sock = new_socket(self._context, kind, endpoint, self._security, insecure, server=True)
        self._sockets.append(sock)
        bind(sock, endpoint)
        return sock

    def _inproc(self, kind: int) -> zmq.Socket:
        sock = self._context.socket(kind)
        sock.setsockopt(zmq.LINGER, 0)
        self._sockets.append(sock)
        return sock

    def _wire_inproc(self) -> None:
        """The capture feed, the replay path back into the XSUB, and the forwarder's stop switch."""
        name = f"inproc://gamerig-proxy-{uuid.uuid4().hex}"
        self._capture = self._inproc(zmq.PUB)  # PUB: a lagging cache never blocks the forwarder
        self._capture.setsockopt(zmq.SNDHWM, CAPTURE_HWM)
        self._capture.bind(f"{name}-capture")
        self._captured = self._inproc(zmq.SUB)
        self._captured.setsockopt(zmq.RCVHWM, CAPTURE_HWM)
        self._captured.setsockopt(zmq.SUBSCRIBE, b"")
        self._captured.connect(f"{name}-capture")
        self._xsub.bind(f"{name}-replay")  # inproc has no CURVE handshake: only this process reaches it
        self._replay = self._inproc(zmq.XPUB)  # XPUB: it can wait for the XSUB's subscription
        self._replay.connect(f"{name}-replay")
        deadline = time.monotonic() + CONNECT_S
        while not self._replay.poll(10, zmq.POLLIN):
            self._xsub.getsockopt(zmq.EVENTS)  # the XSUB takes the new pipe only when its owner calls it
            if time.monotonic() > deadline:
                raise RuntimeError("the proxy's replay socket got no subscription from its own XSUB")
        self._replay.recv()
        self._control_end = self._inproc(zmq.PAIR)
        self._control_end.bind(f"{name}-control")
        self._control = self._inproc(zmq.PAIR)
        self._control.connect(f"{name}-control")

    def _take_captured(self) -> None:
        """Everything the forwarder handled since the last look: cache state, answer subscriptions."""
        while self._replay.poll(0, zmq.POLLIN):
            self._replay.recv()  # subscriptions the XSUB passes upstream: not needed here
        while True:
            try:
                frames = self._captured.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) == 1 and frames[0][:1] in (b"\x00", b"\x01"):  # a subscriber's (un)subscription
                if frames[0][:1] == b"\x01":
                    self._answer_subscription(frames[0][1:])
                continue
            self._counts["forwarded"] += 1
            if len(frames) != 2:
                self._counts["not_two_frames"] += 1
            elif self._is_good_state(frames):
                self._cache[frames[0]] = frames

    def _is_good_state(self, frames: list[bytes]) -> bool:
        try:
            return is_state_topic(frames[0].decode()) and decode(frames) is not None
        except (UnicodeDecodeError, MalformedMessage):
            return False

    def _answer_subscription(self, prefix: bytes) -> None:
        self._counts["subscriptions"] += 1
        if prefix.startswith(HELLO_PREFIX.encode()):  # a Subscriber's handshake: answer on its own topic
            self._replay.send_multipart(encode(prefix.decode(), "bus", 0, {}))
            return
        for topic, frames in list(self._cache.items()):
            if topic.startswith(prefix):
                self._replay.send_multipart(frames)
                self._counts["replayed"] += 1
