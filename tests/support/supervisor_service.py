"""A stand-in service for the supervisor's tests: speaks the lifecycle heartbeat and nothing else.

    python supervisor_service.py NAME --endpoints JSON --log FILE [--crashes N] [--hangs N]
                                 [--crash-after S] [--crash-code C] [--ignore-sigterm]

Publishes hb.NAME every 0.25 s (lifespan 1.0) with the contract's body. The relay stand-in also
publishes relay.state: safe false on ctl.play, safe true on ctl.stop; the camera stand-in answers
ctl.snapshot and ctl.calibrate. Appends one line per event
to --log ("<t_mono> <name> <event> <pid>"): started, safe, sigterm, crash, hang. With --crashes N it exits C (1)
after --crash-after seconds on each of its first N starts (counted in FILE.<name>.starts); with
--hangs N it stops heartbeating then instead, and hangs (SIGTERM is logged but cannot end it).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import zmq

from gamerig.daemon.bus import Endpoints, Publisher, Subscriber


def log(path: str, name: str, event: str) -> None:
    with open(path, "a") as file:  # one short append per line: lines from several processes do not mix
        file.write(f"{time.monotonic():.6f} {name} {event} {os.getpid()}\n")


def count_start(path: str) -> int:
    with open(path, "a") as file:
        file.write("x")
    with open(path) as file:
        return len(file.read())


def answer_camera_request(publisher: Publisher, topic: str, body: dict) -> None:
    """The camera stand-in answers snapshot and calibrate requests, echoing what it was asked."""
    if topic == "ctl.snapshot":
        publisher.publish("cam.snapshot", {"request_id": body["request_id"], "jpeg_b64": "", "width": 0, "height": 0,
                                           "board": None, "falling": None})
    elif topic == "ctl.calibrate":
        publisher.publish("cam.calibrated", {"request_id": body["request_id"], "ok": True,
                                             "message": f"out={body['out']} png={body['png']}", "corners": None})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("--endpoints", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--crashes", type=int, default=0)
    parser.add_argument("--hangs", type=int, default=0)
    parser.add_argument("--crash-code", type=int, default=1)
    parser.add_argument("--crash-after", type=float, default=0.5)
    parser.add_argument("--ignore-sigterm", action="store_true")
    args = parser.parse_args()
    starts = count_start(f"{args.log}.{args.name}.starts")
    crash_at = time.monotonic() + args.crash_after if starts <= args.crashes + args.hangs else None
    stopping = False

    def on_sigterm(*_: object) -> None:
        nonlocal stopping
        log(args.log, args.name, "sigterm")
        stopping = not args.ignore_sigterm

    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    endpoints = Endpoints.from_json(args.endpoints)
    context = zmq.Context()
    publisher = Publisher(context, endpoints, args.name)
    subscriber = Subscriber(context, endpoints, ["ctl."])
    publisher.wait_connected(2.0)
    log(args.log, args.name, "started")
    started = time.monotonic()
    next_beat = 0.0
    try:
        while not stopping:
            now = time.monotonic()
            if crash_at is not None and now >= crash_at and starts > args.crashes:
                log(args.log, args.name, "hang")
                while True:
                    time.sleep(1)
            if crash_at is not None and now >= crash_at:
                log(args.log, args.name, "crash")
                print(f"{args.name} stand-in: crashing on purpose (start {starts})", file=sys.stderr)
                return args.crash_code
            if now >= next_beat:
                body = {"state": "active", "pid": os.getpid(), "uptime_s": now - started, "message": "stand-in",
                        "stats": {"starts": starts}}
                publisher.publish(f"hb.{args.name}", body, lifespan_s=1.0)
                next_beat = now + 0.25
            message = subscriber.receive(0.05)
            if message is not None and args.name == "camera":
                answer_camera_request(publisher, message.topic, message.body)
            if message is not None and args.name == "relay" and message.topic in ("ctl.play", "ctl.stop"):
                safe = message.topic == "ctl.stop"
                if safe:  # logged before it is published: the supervisor's SIGTERM may follow at once
                    log(args.log, args.name, "safe")
                publisher.publish("relay.state", {"outputs": {}, "link": "connected", "safe": safe, "deadline_misses": 0})
        return 0
    finally:
        publisher.close()
        subscriber.close()
        context.term()


if __name__ == "__main__":
    sys.exit(main())
