"""Record a running rig's bus to a JSON-lines file, to look into a run afterwards: what the camera
saw, what the ai planned and predicted, which keys the relay pressed and what the watchdog said,
in the order they came (`gamerigctl bench rig --keep DIR` writes DIR/bus.jsonl).

Each line is one message: its topic, source, sequence number, send time (``t``, this host's
monotonic clock, as the services stamp it) and body; bytes in a body (a snapshot's JPEG) are
written as their length only.  Give it a subscriber that keeps expired messages (the recorder
reads in bursts, between the bench's other work, and an observation lives 0.25 s); malformed
and repeated ones it drops and counts as every consumer on the bus does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from .bus import Message, Subscriber


class BusRecorder:
    """Writes the messages ``subscriber`` receives to ``out``, while :meth:`record_for` runs."""

    def __init__(self, subscriber: Subscriber, out: TextIO) -> None:
        self._subscriber = subscriber
        self._out = out

    def record_for(self, seconds: float) -> None:
        """Write each message that arrives within ``seconds``; returns when they have passed."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            message = self._subscriber.receive(remaining)
            if message is not None:
                self._out.write(json.dumps(_record(message), default=_unencodable) + "\n")


@contextmanager
def recording(subscriber: Subscriber, path: Path) -> Iterator[BusRecorder]:
    """A recorder of ``subscriber``'s messages into the file ``path`` (replaced); the subscriber
    is closed on the way out, before its ZeroMQ context can be terminated."""
    try:
        with open(path, "w", encoding="utf-8") as out:
            yield BusRecorder(subscriber, out)
    finally:
        subscriber.close()


def _record(message: Message) -> dict[str, object]:
    return {"topic": message.topic, "source": message.source, "seq": message.seq, "t": message.t_mono, "body": message.body}


def _unencodable(value: object) -> str:
    """What JSON cannot hold: bytes by their length, anything else by its repr."""
    return f"<{len(value)} bytes>" if isinstance(value, (bytes, bytearray)) else repr(value)
