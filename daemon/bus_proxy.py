"""The bus's hub: an XSUB/XPUB proxy that also keeps the last message of every state topic.

gamerigd builds one BusProxy on its own context and runs it in a thread::

    proxy = BusProxy(context, endpoints, security)     # binds now: errors surface in the caller
    thread = threading.Thread(target=proxy.run, args=(stop_event,), daemon=True)
    thread.start() ... stop_event.set(); thread.join(); proxy.close(); context.term()

Publishers connect to the XSUB (``endpoints.publish``), Subscribers to the XPUB
(``endpoints.subscribe``).  The XSUB subscribes to everything itself, so state is kept even
while nobody listens.  The XPUB is verbose: every subscription reaches the proxy, even one for a
prefix another subscriber already has, and the proxy answers it by sending the kept messages of
the state topics (bus.STATE_TOPICS) under that prefix.  XPUB cannot address one subscriber, so the
other subscribers of that prefix get the replay too; Subscriber drops it as a duplicate.  A
Subscriber's handshake subscription (bus.HELLO_PREFIX + its own token) is answered with one
message on exactly that topic, so only that subscriber gets it.

Messages that are not two frames are dropped and counted; state messages are kept only when they
decode (a malformed one is still forwarded: consumers count it).  The proxy never crashes on
input.  Tested in tests/integration/test_bus.py (late subscriber, bursts, malformed input, a
second proxy on the same ipc path) and test_bus_security.py (CURVE + ZAP).
"""

from __future__ import annotations

import threading
from typing import Any

import zmq

from .bus import HELLO_PREFIX, Endpoints, MalformedMessage, bind, decode, encode, is_state_topic, new_socket
from .bus_security import BusSecurity, acquire_authenticator, release_authenticator

POLL_S = 0.1  # how often run() looks at its stop event


class BusProxy:
    """XSUB (publishers) -> XPUB (subscribers) with a last-value cache of state topics."""

    def __init__(self, context: zmq.Context, endpoints: Endpoints, security: BusSecurity | None = None) -> None:
        self._context = context
        self._security = security
        self._sockets: list[zmq.Socket] = []
        if security is not None:
            acquire_authenticator(context, security)
        try:
            self._xsub = self._bound(zmq.XSUB, endpoints.publish, endpoints.insecure)
            self._xpub = self._bound(zmq.XPUB, endpoints.subscribe, endpoints.insecure, verbose=True)
        except Exception:
            self.close()
            raise
        self._xsub.send(b"\x01")  # subscribe to every topic, listeners or not
        self._poller = zmq.Poller()
        self._poller.register(self._xsub, zmq.POLLIN)
        self._poller.register(self._xpub, zmq.POLLIN)
        self._cache: dict[bytes, list[bytes]] = {}
        self._counts = {"forwarded": 0, "dropped": 0, "replayed": 0, "subscriptions": 0}

    @property
    def counters(self) -> dict[str, int]:
        """forwarded, dropped (not two frames), replayed (kept messages sent to late subscribers), subscriptions."""
        return dict(self._counts)

    def state_topics(self) -> list[str]:
        """The state topics with a kept message."""
        return sorted(topic.decode() for topic in self._cache)

    def run(self, stop: threading.Event) -> None:
        """Forward until ``stop`` is set (checked every POLL_S); run it in one thread only."""
        while not stop.is_set():
            self.step(POLL_S)

    def step(self, timeout_s: float) -> None:
        """One poll of up to ``timeout_s``: forward what publishers sent, answer new subscriptions.

        For a caller with its own loop instead of run(); always from the same thread.
        """
        ready = dict(self._poller.poll(int(timeout_s * 1000)))
        if self._xpub in ready:
            self._answer_subscriptions()
        if self._xsub in ready:
            self._forward()

    def close(self) -> None:
        """Close the sockets and release the ZAP handler (call after run() returned)."""
        for sock in self._sockets:
            sock.close()
        self._sockets.clear()
        if self._security is not None:
            release_authenticator(self._context)
            self._security = None

    def _bound(self, kind: int, endpoint: str, insecure: bool, verbose: bool = False) -> zmq.Socket:
        sock = new_socket(self._context, kind, endpoint, self._security, insecure, server=True)
        self._sockets.append(sock)
        if verbose:
            sock.setsockopt(zmq.XPUB_VERBOSE, 1)
        bind(sock, endpoint)
        return sock

    def _forward(self) -> None:
        while True:
            try:
                frames = self._xsub.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) != 2:
                self._counts["dropped"] += 1
                continue
            if self._is_good_state(frames):
                self._cache[frames[0]] = frames
            self._send(frames)
            self._counts["forwarded"] += 1

    def _is_good_state(self, frames: list[bytes]) -> bool:
        try:
            return is_state_topic(frames[0].decode()) and decode(frames) is not None
        except (UnicodeDecodeError, MalformedMessage):
            return False

    def _answer_subscriptions(self) -> None:
        while True:
            try:
                event = self._xpub.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            if event[:1] != b"\x01":
                continue  # an unsubscription: nothing to do
            self._counts["subscriptions"] += 1
            prefix = event[1:]
            if prefix.startswith(HELLO_PREFIX.encode()):  # a Subscriber's handshake: answer on its own topic
                self._send(encode(prefix.decode(), "bus", 0, {}))
                continue
            for topic, frames in list(self._cache.items()):
                if topic.startswith(prefix):
                    self._send(frames)
                    self._counts["replayed"] += 1

    def _send(self, frames: list[Any]) -> None:
        try:
            self._xpub.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            pass  # XPUB drops for a full subscriber queue anyway; never block the hub
