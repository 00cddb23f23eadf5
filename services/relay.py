"""The relay service: executes the ai's plans through the configured key output, and keeps it safe.

    python -m gamerig.services.relay --endpoints JSON --config PATH

It opens the key output of the config's ``keys`` section (hardware/keys: a relay board, uinput or
XTEST), which releases every output at once: on every start, so a restart after a crash or a kill
is also the release of whatever the dead process left closed.  Then it executes ``plan.keys`` in
order (services/relay_runner.py: never a plan past its deadline, stopping mid-plan when the deadline
passes, each a counted deadline miss; plans the bus already dropped as expired count too; none of
its keys before its optional ``start_t``, a time.monotonic() like ``deadline_t``, nor any key before
its own time in the optional ``key_t``, where null is no wait), and
publishes ``relay.key`` per press, ``relay.done`` per plan and ``relay.state`` (on every change and
once a second).

Safe state: ``wd.halt`` (or a ``wd.state`` saying halted, which a late subscriber gets first),
``ctl.stop`` and ``ctl.pause`` release everything at once and drop the plan; nothing is executed
until ``wd.resume`` / ``ctl.play`` lift what set them (both must be lifted).  A lost serial port
is reported (``link: lost``) and nothing is pressed while it is gone (the driver refuses, the plan
ends).  SIGTERM/SIGINT: KeyOutput's handler releases in the signal handler itself, then the
service stops and closes the output (released again).  SIGKILL: nothing in the process can run
(the max-hold guard is a thread of the dead process; an ADR2200 has no timeout of its own): the
relay stays closed until the supervisor restarts this service, whose start releases it.  main()
therefore opens the key output before it even imports the bus.  Measured by the SIGKILL test
(tests/integration/test_relay_service.py, load average 2.2 on the shared 2-core machine, 4 runs):
0.27-0.53 s from the new process's start to the relay opening at the board; the supervisor's
restart delay comes on top.

It asks for SCHED_FIFO priority 10 (steadier press timing, see hardware/keys/key_output.py) and
carries on without it if refused.  Config read: ``keys`` (all of it: hold_ms and gap_ms are the
press cadence).  Tested in tests/integration/test_relay_service.py: this process driving the
ADR2200 driver against the simulator's VirtualRelayBoard over a real pty, on a real proxy.
"""

from __future__ import annotations

import argparse
import functools
import logging
import queue
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gamerig.daemon.config_errors import ConfigError, load_yaml
from gamerig.hardware.keys import KeyOutput, KeyOutputConfig, KeyOutputError, LinkState, load_key_output_config, open_key_output
from gamerig.hardware.keys.serial_link import StateCallback
from gamerig.hardware.realtime import try_realtime

from .relay_runner import Plan, PlanDone, PlanRunner

if TYPE_CHECKING:  # the bus is imported only after the release at start (see main)
    from gamerig.daemon.bus import Message

    from .lifecycle import Service

log = logging.getLogger("gamerig.services.relay")

POLL_S = 0.005  # the longest a press waits to be published, and a halt to be seen
STATE_PERIOD_S = 1.0
OPEN_RETRY_S = 0.5
REALTIME_PRIORITY = 10


@dataclass(frozen=True)
class RelaySettings:
    """What the relay service reads from the rig config: the key output (its ``keys`` section)."""

    keys: KeyOutputConfig

    @classmethod
    def from_file(cls, path: Path) -> RelaySettings:
        """Read only the ``keys`` section, so a restart reaches its release as soon as it can."""
        data = load_yaml(path)
        if not isinstance(data, dict) or "keys" not in data:
            raise ConfigError(path, "keys", "required: the key output section")
        return cls(load_key_output_config(data["keys"], path, section="keys"))


class RelayService:
    """The loop between the bus and a PlanRunner; see the module docstring."""

    def __init__(self, service: Service, output: KeyOutput, settings: RelaySettings, events: queue.Queue, realtime: bool) -> None:
        self.service = service
        self.output = output
        self.events = events  # (topic, body) from the runner thread and the link watcher
        self.link = "connected"
        self.stopped_by: set[str] = set()  # "wd" and/or "ctl": both must be lifted to execute again
        self.deadline_misses = 0
        self.plans = 0
        self.presses = 0
        self.realtime = realtime
        self.runner = PlanRunner(
            output,
            settings.keys.hold_ms / 1000.0,
            settings.keys.gap_ms / 1000.0,
            on_key=lambda k: events.put(("relay.key", k)),
            on_done=lambda d: events.put(("relay.done", d)),
        )
        self._state_sent: tuple[Any, ...] | None = None
        self._state_at = -float("inf")
        self._expired_seen = 0

    def run(self) -> None:
        """Until SIGTERM: control messages first (a halt never waits behind plans), then plans,
        then what the runner reported."""
        import zmq

        service = self.service
        plans = service.subscriber(["plan.keys"])
        control = service.subscriber(["wd.", "ctl."])
        poller = zmq.Poller()
        poller.register(plans.socket, zmq.POLLIN)
        poller.register(control.socket, zmq.POLLIN)
        service.publisher.wait_connected(1.0)
        service.set_state("active")
        try:
            while not service.stopping:
                ready = dict(poller.poll(POLL_S * 1000))
                if control.socket in ready:
                    while (message := control.receive(0)) is not None:
                        self.on_control(message)
                if plans.socket in ready:
                    while (message := plans.receive(0)) is not None:
                        self.on_plan(message)
                self._count_expired(plans.counters["expired"])
                self._drain_events()
                self._publish_state()
                service.heartbeat_if_due()
        finally:
            self.runner.close()
            self._drain_events()
            self._publish_state(force=True)

    # ---- inputs ----------------------------------------------------------------------------

    def on_control(self, message: Message) -> None:
        """wd.halt / wd.resume / wd.state and ctl.play / ctl.pause / ctl.stop."""
        topic = message.topic
        if topic == "wd.halt" or (topic == "wd.state" and message.body.get("halted") is True):
            self._stop("wd", f"watchdog: {message.body.get('reason') or 'halt'}")
        elif topic == "wd.resume" or (topic == "wd.state" and message.body.get("halted") is False):
            self._lift("wd")
        elif topic in ("ctl.stop", "ctl.pause"):
            self._stop("ctl", topic)
        elif topic == "ctl.play":
            self._lift("ctl")

    def on_plan(self, message: Message) -> None:
        """Hand a well-formed plan to the runner; answer a malformed one with relay.done ok=false."""
        body = message.body
        plan_id = body.get("plan_id")
        try:
            plan = _plan(body, self.output.keys)
        except ValueError as exc:
            log.warning("plan %r rejected: %s", plan_id, exc)
            self._done(PlanDone(plan_id, False, f"malformed plan: {exc}", 0, time.monotonic()))
            return
        self.plans += 1
        if self.stopped_by:
            self._done(PlanDone(plan_id, False, f"not executed: stopped by {', '.join(sorted(self.stopped_by))}", 0, time.monotonic()))
            return
        self.runner.submit(plan)

    # ---- outputs ---------------------------------------------------------------------------

    def _stop(self, who: str, reason: str) -> None:
        first = not self.stopped_by
        self.stopped_by.add(who)
        if first or who == "wd":  # every halt re-latches: idempotent, releases again
            self.runner.halt(reason)
        self._publish_state(force=True)

    def _lift(self, who: str) -> None:
        if who not in self.stopped_by:
            return
        self.stopped_by.discard(who)
        if not self.stopped_by:
            self.runner.resume()
        self._publish_state(force=True)

    def _drain_events(self) -> None:
        while True:
            try:
                topic, event = self.events.get_nowait()
            except queue.Empty:
                return
            if topic == "relay.key":
                self.presses += 1
                self.service.publisher.publish("relay.key", {"plan_id": event.plan_id, "key": event.key, "down_t": event.down_t, "up_t": event.up_t})
            elif topic == "relay.done":
                self._done(event)
            elif topic == "link":
                self.link = event
                self._publish_state(force=True)

    def _done(self, done: PlanDone) -> None:
        if done.deadline_miss:
            self.deadline_misses += 1
        body = {"plan_id": done.plan_id, "ok": done.ok, "reason": done.reason, "pressed": done.pressed, "t_done": done.t_done}
        self.service.publisher.publish("relay.done", body)

    def _count_expired(self, expired: int) -> None:
        """Plans the bus dropped as older than their lifespan (= their deadline) were missed too."""
        if expired > self._expired_seen:
            self.deadline_misses += expired - self._expired_seen
            self._expired_seen = expired

    def _publish_state(self, force: bool = False) -> None:
        outputs = self.output.state()
        safe = bool(self.stopped_by) and not any(outputs.values())
        key = (tuple(outputs.items()), self.link, safe, self.deadline_misses)
        now = time.monotonic()
        if not force and key == self._state_sent and now - self._state_at < STATE_PERIOD_S:
            return
        body = {"outputs": outputs, "link": self.link, "safe": safe, "deadline_misses": self.deadline_misses}
        self.service.publisher.publish("relay.state", body)
        self._state_sent, self._state_at = key, now
        self.service.stats = {
            "plans": self.plans,
            "presses": self.presses,
            "deadline_misses": self.deadline_misses,
            "link": self.link,
            "safe": safe,
            "stopped_by": sorted(self.stopped_by),
            "realtime": self.realtime,
        }


def _plan(body: dict[str, Any], known: Sequence[str]) -> Plan:
    """A plan.keys body as a Plan; ValueError naming what is wrong."""
    deadline_t = _number(body.get("deadline_t"), "deadline_t")
    start_t = -float("inf") if body.get("start_t") is None else _number(body["start_t"], "start_t")
    if start_t > deadline_t:
        raise ValueError(f"start_t {start_t} is after deadline_t {deadline_t}")
    keys = _keys(body.get("keys"), known)
    return Plan(body.get("plan_id"), keys, deadline_t, start_t, _key_times(body.get("key_t"), len(keys)))


def _key_times(value: object, count: int) -> tuple[float, ...]:
    """The optional ``key_t``: one time per key, the earliest it may go down (null: no wait)."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) != count:
        raise ValueError(f"key_t must be a list of {count} times, one per key, got {value!r}")
    return tuple(-float("inf") if t is None else _number(t, "key_t") for t in value)


def _keys(value: object, known: Sequence[str]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"keys must be a list of key names, got {value!r}")
    unknown = [k for k in value if k not in known]
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (configured: {', '.join(known)})")
    return tuple(value)


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def _open_output(service: Service, settings: RelaySettings, config_path: Path, on_link_state: StateCallback) -> KeyOutput | None:
    """Open the key output, retrying while the device is missing (reported as fault); None if stopped first."""
    while not service.stopping:
        try:
            return open_key_output(settings.keys, config_path, on_link_state=on_link_state)
        except KeyOutputError as exc:
            service.set_state("fault", f"cannot open the key output: {exc}")
            deadline = time.monotonic() + OPEN_RETRY_S
            while not service.stopping and time.monotonic() < deadline:
                service.heartbeat_if_due()
                time.sleep(0.05)
    return None


class LinkEvents(queue.Queue):
    """Link state changes, queued for the service loop (the callback runs in the serial watcher
    thread with the link's lock held, so it must do nothing else)."""

    def on_link_state(self, state: LinkState, detail: str) -> None:
        self.put(("link", "connected" if state is LinkState.CONNECTED else "lost"))


def run(service: Service, config_path: Path, early: tuple[KeyOutput, LinkEvents] | None = None) -> None:
    """The relay service (see the module docstring); ``early``: the output main() already opened."""
    settings = RelaySettings.from_file(config_path)
    output, events = early if early is not None else (None, LinkEvents())
    if output is None:
        output = _open_output(service, settings, config_path, events.on_link_state)
        if output is None:
            return
    with output:
        RelayService(service, output, settings, events, try_realtime(REALTIME_PRIORITY, "relay")).run()


def release_first(argv: Sequence[str] | None) -> tuple[KeyOutput, LinkEvents] | None:
    """Open the configured key output (which releases every output) before anything else is set
    up: after a crash or a kill of the previous relay process, this is what opens the relays it
    left closed.  None if it cannot (the service reports why and retries)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--config", type=Path)
    known, _ = parser.parse_known_args(argv)
    if known.config is None:
        return None
    events = LinkEvents()
    try:
        settings = RelaySettings.from_file(known.config)
        return open_key_output(settings.keys, known.config, on_link_state=events.on_link_state), events
    except (ConfigError, KeyOutputError, OSError) as exc:
        log.warning("release at start deferred: %s", exc)
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: ``python -m gamerig.services.relay --endpoints JSON --config PATH``."""
    early = release_first(argv)
    from .lifecycle import service_main  # only now: the bus's imports come after the release

    return service_main("relay", functools.partial(run, early=early), argv)


if __name__ == "__main__":
    sys.exit(main())
