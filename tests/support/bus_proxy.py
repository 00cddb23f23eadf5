"""The bus proxy as gamerigd runs it, for tests that need a live bus."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import zmq

from gamerig.daemon.bus import Endpoints
from gamerig.daemon.bus_proxy import BusProxy
from gamerig.daemon.bus_security import BusSecurity

#: How long the proxy's thread may take to stop.
STOP_WAIT_S = 5.0


@contextmanager
def running_proxy(endpoints: Endpoints, security: BusSecurity | None = None) -> Iterator[tuple[zmq.Context, BusProxy]]:
    """A BusProxy on a context of its own, run in a thread; yields the context (a CURVE test's
    control server shares its authenticator) and the proxy, and stops both on exit."""
    context = zmq.Context()
    proxy = BusProxy(context, endpoints, security)
    stop = threading.Event()
    thread = threading.Thread(target=proxy.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield context, proxy
    finally:
        stop.set()
        thread.join(STOP_WAIT_S)
        proxy.close()
        context.term()
