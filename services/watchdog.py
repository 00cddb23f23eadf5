"""The watchdog service: heartbeats, stale frames, deadline misses and the reality check, on the bus.

    python -m gamerig.services.watchdog --endpoints JSON --config PATH

It hears ``hb.*``, ``obs.*``, ``plan.keys``, ``predict.board``, ``relay.*`` and ``ai.state``, feeds
them with their arrival time to ``watchdog_core.Watchdog`` (every rule is there, pure) and
publishes what it answers: ``wd.halt``, ``wd.resync``, ``wd.resume`` and ``wd.state``.  It takes
every message waiting before it checks the health (after a stall of its own it must not judge the
camera by the oldest frame in its queue), and checks every ``POLL_S`` even when nothing arrives, so a camera that goes silent halts play as
surely as one that freezes.  Messages the bus drops as malformed are added to the ``malformed``
counter; the heartbeat's stats carry the counters and whether play is halted.

Config: the rig config's ``watchdog`` section (daemon/rig_config.py).  Tested in
tests/integration/test_watchdog_service.py: this process on a real proxy and real sockets.

Measured end to end (2 Dec 2026, load 5-8 on the shared 2-core machine; the simulator at 60 fps,
the camera and watchdog services on a real proxy, ai and relay heartbeats from a script): five
camera freezes each halted play 38-58 ms after ``Target.freeze_camera`` (3 frame periods are
50 ms), each reason "no new camera frame for 50-55 ms (3 frame periods of 16.5-16.8 ms)", and
no halt in the 20 s of play without faults that followed.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from gamerig.daemon.rig_config import load_rig_config

from .lifecycle import Service, service_main
from .watchdog_core import Watchdog

log = logging.getLogger("gamerig.services.watchdog")

#: The longest wait for a message before the health is checked again: well under a frame period.
POLL_S = 0.005
#: How long a (re)started watchdog waits for the proxy's replay of its predecessor's counts: long,
#: since a busy machine can take over a second to answer, and a missed replay resets what status shows.
PREDECESSOR_WAIT_S = 5.0
SUBSCRIPTIONS = ("hb.", "obs.", "plan.keys", "predict.board", "relay.", "ai.state")
#: The decisions an operator reads in the journal, with their reasons (wd.state is periodic).
LOGGED = ("wd.halt", "wd.resume", "wd.resync")


def run(service: Service, config_path: Path) -> None:
    """The service loop (see the module docstring)."""
    config = load_rig_config(config_path)
    inbox = service.subscriber(SUBSCRIPTIONS)
    predecessor = service.subscriber(["wd.state"])  # the proxy replays the last one: a restart keeps the counts
    service.publisher.wait_connected(1.0)
    inbox.wait_connected(1.0)
    dog = Watchdog(config.watchdog, time.monotonic())
    if not predecessor.wait_connected(PREDECESSOR_WAIT_S):
        log.warning("no answer from the bus proxy in %s s: the counts start from zero", PREDECESSOR_WAIT_S)
    elif (last := predecessor.receive(0)) is not None:  # the replay comes before the proxy's answer
        dog.continue_from(last.body)
    predecessor.close()
    _publish(service, dog.start(time.monotonic()))
    service.set_state("active", dog.reason)
    dropped = 0
    while not service.stopping:
        out = []
        message = inbox.receive(POLL_S)
        while message is not None:  # everything waiting first, then the health
            out += dog.receive(message.topic, message.body, time.monotonic())
            message = inbox.receive(0)
        now = time.monotonic()
        out += dog.tick(now)
        malformed = inbox.counters["malformed"]
        dog.count_malformed(malformed - dropped)
        dropped = malformed
        halted = dog.halted
        _publish(service, out)
        if any(topic in ("wd.halt", "wd.resume") for topic, _ in out):
            service.set_state("active", dog.reason if halted else "")
        service.stats = {"halted": halted, **dog.counters, "max_halt_s": round(dog.max_halt_s, 3)}
        service.heartbeat_if_due(now)


def _publish(service: Service, out: list[tuple[str, dict]]) -> None:
    for topic, body in out:
        if topic in LOGGED:
            log.info("%s: %s", topic, body.get("reason", ""))
        service.publisher.publish(topic, body)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the watchdog service; returns the exit code."""
    return service_main("watchdog", run, argv)


if __name__ == "__main__":
    sys.exit(main())
