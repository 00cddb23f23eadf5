"""The skeleton every gamerig service process shares: bus set-up, lifecycle state, heartbeats, signals.

A service module is::

    def run(service: Service, config_path: Path) -> None:
        service.set_state("ready")
        inbox = service.subscriber(["plan.", "wd."])
        while not service.stopping:
            message = inbox.receive(0.05)        # short waits: heartbeats stay on time
            ...
            service.heartbeat_if_due()

    def main(argv=None) -> int:
        return service_main("relay", run, argv)

and runs as ``python -m gamerig.services.<name> --endpoints JSON --config PATH``.

Heartbeats: ``hb.<name>`` every HEARTBEAT_PERIOD_S with lifespan HEARTBEAT_LIFESPAN_S and body
``{state, pid, uptime_s, message, stats}``; every state change is published at once.  SIGTERM and
SIGINT only set ``stopping`` (the handler does no work); the service's loop sees it and returns,
and leaving the Service publishes "stopping" and closes the bus.  A crash is logged with its
traceback, published as "fault" with the error as message, and the process exits 1.

Logging: INFO and up to stderr (the journal), or the level named by $GAMERIG_LOG_LEVEL (e.g. DEBUG
to see the ai's plans made ahead); an unknown name is reported and INFO used.

Exit codes: 0 stopped on request, 1 crashed, 2 bad command line or bad bus keys in the config.
Tested in tests/integration/test_lifecycle.py with real processes, signals and a real proxy,
including a service joining a CURVE tcp bus with the keys its rig config names.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import zmq

from gamerig.daemon.bus import Endpoints, Publisher, Subscriber
from gamerig.daemon.bus_security import BusSecurity
from gamerig.daemon.config_errors import load_yaml

STATES = ("starting", "ready", "active", "fault", "stopping")
HEARTBEAT_PERIOD_S = 0.25
HEARTBEAT_LIFESPAN_S = 1.0
EXIT_OK, EXIT_CRASH, EXIT_USAGE = 0, 1, 2
LOG_LEVEL_ENV = "GAMERIG_LOG_LEVEL"

log = logging.getLogger("gamerig.services")


class Service:
    """One service's bus presence and lifecycle; use it as a context manager."""

    def __init__(self, name: str, endpoints: Endpoints, security: BusSecurity | None = None) -> None:
        if not name or "." in name:
            raise ValueError(f"service name must be non-empty without dots, got {name!r}")
        self.name = name
        self.endpoints = endpoints
        self.security = security
        self.stats: dict[str, Any] = {}  # the service's own figures, sent in every heartbeat
        self.state = "starting"
        self.message = ""
        self.context: zmq.Context | None = None
        self._publisher: Publisher | None = None
        self._subscribers: list[Subscriber] = []
        self._stopping = False
        self._started = time.monotonic()
        self._last_heartbeat = -float("inf")
        self._old_handlers: dict[int, Any] = {}

    @property
    def stopping(self) -> bool:
        """True once SIGTERM/SIGINT arrived or request_stop() was called."""
        return self._stopping

    def request_stop(self) -> None:
        """Ask the service loop to end (what the signal handlers do)."""
        self._stopping = True

    @property
    def publisher(self) -> Publisher:
        """The service's Publisher (source = its name)."""
        if self._publisher is None:
            raise RuntimeError("use the Service inside a with block")
        return self._publisher

    def subscriber(self, prefixes: Sequence[str]) -> Subscriber:
        """A Subscriber on the service's context, closed when the service ends."""
        if self.context is None:
            raise RuntimeError("use the Service inside a with block")
        sub = Subscriber(self.context, self.endpoints, prefixes, self.security)
        self._subscribers.append(sub)
        return sub

    def set_state(self, state: str, message: str = "") -> None:
        """Change the lifecycle state (one of STATES) and publish a heartbeat at once."""
        if state not in STATES:
            raise ValueError(f"unknown state {state!r}; one of {', '.join(STATES)}")
        self.state, self.message = state, message
        self._heartbeat(time.monotonic())

    def heartbeat_if_due(self, now: float | None = None) -> bool:
        """Publish hb.<name> when HEARTBEAT_PERIOD_S has passed since the last one; True if sent."""
        now = time.monotonic() if now is None else now
        if now - self._last_heartbeat < HEARTBEAT_PERIOD_S:
            return False
        self._heartbeat(now)
        return True

    def __enter__(self) -> Service:
        self.context = zmq.Context()
        try:
            self._publisher = Publisher(self.context, self.endpoints, self.name, self.security)
            if threading.current_thread() is threading.main_thread():
                for signum in (signal.SIGTERM, signal.SIGINT):
                    self._old_handlers[signum] = signal.signal(signum, self._on_signal)
            self._started = time.monotonic()
            self.set_state("starting")
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if exc is not None and not isinstance(exc, KeyboardInterrupt):
                self.set_state("fault", f"{type(exc).__name__}: {exc}")
            else:
                self.set_state("stopping")
            self.publisher.wait_connected(0.2)  # a service dying at start still says why, if it can
        except Exception as farewell_error:  # e.g. stats that are not JSON: the original error matters more
            log.warning("%s: could not publish its last heartbeat: %s", self.name, farewell_error)
        finally:
            self._close()

    def _close(self) -> None:
        for signum, handler in self._old_handlers.items():
            signal.signal(signum, handler)
        self._old_handlers.clear()
        for sub in self._subscribers:
            sub.close()
        self._subscribers.clear()
        if self._publisher is not None:
            self._publisher.close()
            self._publisher = None
        if self.context is not None:
            self.context.term()  # cannot hang: LINGER is 0 on every bus socket
            self.context = None

    def _heartbeat(self, now: float) -> None:
        body = {
            "state": self.state,
            "pid": os.getpid(),
            "uptime_s": round(now - self._started, 3),
            "message": self.message,
            "stats": self.stats,
        }
        self.publisher.publish(f"hb.{self.name}", body, lifespan_s=HEARTBEAT_LIFESPAN_S)
        self._last_heartbeat = now

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stopping = True  # nothing else: the loop does the work


def security_from_rig_config(config_path: Path) -> BusSecurity | None:
    """The bus's CURVE keys from the rig config's bus.curve; None when it has none."""
    data = load_yaml(config_path)
    bus = data.get("bus") if isinstance(data, dict) else None
    if not isinstance(bus, dict) or bus.get("curve") is None:
        return None
    # Imported here: the rig config pulls in the game and key-output modules, which only a CURVE bus needs here.
    from gamerig.daemon.rig_config import load_rig_config

    return load_rig_config(config_path).bus.security()  # the full check, as gamerigd made it


def _log_level() -> int:
    """$GAMERIG_LOG_LEVEL's level, INFO when unset or unknown (said on stderr, not fatal)."""
    name = os.environ.get(LOG_LEVEL_ENV, "INFO").upper()
    level = logging.getLevelName(name)
    if isinstance(level, int):
        return level
    print(f"{LOG_LEVEL_ENV}={name!r} is not a logging level (DEBUG, INFO, WARNING, ERROR): using INFO", file=sys.stderr)
    return logging.INFO


def service_main(
    name: str,
    run: Callable[[Service, Path], None],
    argv: Sequence[str] | None = None,
    security_loader: Callable[[Path], BusSecurity | None] = security_from_rig_config,
) -> int:
    """Parse ``--endpoints JSON --config PATH``, run the service, return the exit code.

    security_loader gives the bus's CURVE keys from the config (None: no CURVE); the default
    reads the rig config's bus.curve, which is what gamerigd's proxy uses.
    """
    logging.basicConfig(level=_log_level(), format=f"%(asctime)s {name}[%(process)d] %(levelname)s %(message)s")
    parser = argparse.ArgumentParser(prog=f"gamerig.services.{name}")
    parser.add_argument("--endpoints", required=True, help="the bus endpoints as JSON (Endpoints.to_json)")
    parser.add_argument("--config", required=True, type=Path, help="the rig's YAML config")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code else EXIT_OK
    try:
        endpoints = Endpoints.from_json(args.endpoints)
        security = security_loader(args.config)
    except ValueError as exc:  # ConfigError is one
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        with Service(name, endpoints, security) as service:
            run(service, args.config)
    except KeyboardInterrupt:
        return EXIT_OK
    except Exception:
        log.exception("%s crashed", name)
        return EXIT_CRASH
    return EXIT_OK
