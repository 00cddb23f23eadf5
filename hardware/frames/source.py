"""The one interface every frame source shares: a device, a reader thread, the newest frame.

A `Device` is an immutable description of where frames come from (a camera path, a file, a URL, a
screen region); `Device.open()` connects and returns a `Capture` that reads one frame at a time.
`FrameSource` runs a reader thread over a device: it keeps only the newest frame (so a slow consumer
never sees a backlog), reopens a lost device with capped exponential backoff, and reports its state.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np

log = logging.getLogger(__name__)


class SourceError(Exception):
    """A frame source failed; the message says which source and why."""


class SourceLost(SourceError):
    """The device could not be opened or stopped delivering frames; the reader will retry."""


class SourceEnded(SourceError):
    """A finite source (a video file without looping) has delivered its last frame."""


class SourceClosed(SourceError):
    """The source was closed by its owner; no more frames will come."""


class FrameTimeout(TimeoutError):
    """No new frame arrived within the read timeout."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One captured image.

    image: BGR uint8, shape (height, width, 3).
    timestamp: time.monotonic() taken right after the device delivered the frame, before decoding
        where the backend allows it.
    sequence: 1 for the first frame the source captured, +1 for each later one; a gap between two
        frames a consumer receives is the number of frames it never saw.
    """

    image: np.ndarray
    timestamp: float
    sequence: int


class Capture(Protocol):
    """An open connection to a device."""

    def read(self) -> tuple[np.ndarray, float]:
        """Block for the next frame (bounded by the device's own timeout); return (BGR image, monotonic time).

        Raises SourceLost when the device fails, SourceEnded when a finite source is exhausted.
        """
        ...

    def close(self) -> None:
        """Release the device; safe to call more than once."""
        ...


class Device(Protocol):
    """Where frames come from; opening it is the only thing that touches the outside world."""

    def open(self) -> Capture:
        """Connect to the device; raise SourceLost with the reason when it cannot be opened."""
        ...


class SourceState(str, enum.Enum):
    """What the reader thread is doing."""

    CONNECTING = "connecting"  # opening the device for the first time
    STREAMING = "streaming"  # frames are arriving
    DISCONNECTED = "disconnected"  # the device was lost or could not be opened; retrying with backoff
    ENDED = "ended"  # a finite source delivered its last frame
    CLOSED = "closed"  # closed by its owner


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """A snapshot of a source's health, for logs and the daemon's status report."""

    state: SourceState
    reconnects: int  # successful reopenings after the device was lost
    last_error: str | None
    captured: int  # frames read from the device
    delivered: int  # frames handed to the consumer

    @property
    def dropped(self) -> int:
        """Frames captured but replaced by a newer one before the consumer asked."""
        return self.captured - self.delivered


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays between reopen attempts: initial, then doubled each failure, never above cap (seconds)."""

    initial: float = 0.1
    cap: float = 5.0

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.cap:
            raise ValueError(f"backoff needs 0 < initial <= cap, got initial={self.initial} cap={self.cap}")

    def delay(self, failures: int) -> float:
        """The wait after `failures` consecutive failed attempts (failures >= 1)."""
        return min(self.cap, self.initial * 2 ** min(failures - 1, 62))


class Pacer:
    """Sleeps so that successive ticks come every `period` seconds, like a device with a frame clock.

    A consumer that falls behind by more than one period is resynchronised instead of allowed to
    catch up with a burst, as a camera would simply have dropped those frames.
    """

    def __init__(self, period: float) -> None:
        self._period = period
        self._next: float | None = None

    def wait(self) -> None:
        """Sleep until the next tick is due."""
        now = time.monotonic()
        if self._next is None or now - self._next > self._period:
            self._next = now
        elif self._next > now:
            time.sleep(self._next - now)
        self._next += self._period


class FrameSource:
    """Reads a device on a background thread and hands out only the newest frame.

    Use as a context manager or call close(). read() never blocks longer than its timeout.
    """

    def __init__(self, device: Device, *, backoff: Backoff = Backoff(), name: str | None = None) -> None:
        self._device = device
        self._backoff = backoff
        self.name = name or repr(device)
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._latest: Frame | None = None
        self._delivered_sequence = 0
        self._state = SourceState.CONNECTING
        self._reconnects = 0
        self._last_error: str | None = None
        self._captured = 0
        self._delivered = 0
        self._thread = threading.Thread(target=self._run, name=f"frames:{self.name}", daemon=True)
        self._thread.start()

    def read(self, timeout: float) -> Frame:
        """Return the newest frame not yet returned, waiting at most `timeout` seconds for one.

        Raises FrameTimeout if none arrives in time, SourceEnded once a finite source has no newer
        frame, SourceClosed after close().
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                if self._state is SourceState.CLOSED:
                    raise SourceClosed(f"{self.name}: closed")
                latest = self._latest
                if latest is not None and latest.sequence > self._delivered_sequence:
                    self._delivered_sequence = latest.sequence
                    self._delivered += 1
                    return latest
                if self._state is SourceState.ENDED:
                    raise SourceEnded(f"{self.name}: no more frames")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise FrameTimeout(
                        f"{self.name}: no new frame within {timeout:.3g} s "
                        f"(state {self._state.value}, last error: {self._last_error})"
                    )
                self._lock.wait(remaining)

    def status(self) -> SourceStatus:
        """The current state, reconnect count, last error and frame counters."""
        with self._lock:
            return SourceStatus(self._state, self._reconnects, self._last_error, self._captured, self._delivered)

    def close(self, timeout: float = 2.0) -> None:
        """Stop the reader thread and release the device, waiting at most `timeout` seconds.

        A device stuck in a blocking read is released by its own read timeout; if the thread is still
        alive after `timeout`, it is left to finish on its own (it is a daemon thread) and logged.
        """
        self._stop.set()
        self._set_state(SourceState.CLOSED)
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("%s: reader thread still blocked in the device after %.3g s", self.name, timeout)

    def __enter__(self) -> FrameSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _run(self) -> None:
        failures = 0  # consecutive attempts that gave no frame; drives the backoff
        opened_before = False
        while not self._stop.is_set():
            try:
                capture = self._device.open()
            except Exception as error:  # noqa: BLE001 (the reader thread must outlive any device fault)
                failures += 1
                self._lost(_as_lost(error), self._backoff.delay(failures))
                continue
            if opened_before:
                with self._lock:
                    self._reconnects += 1
                log.info("%s: reconnected", self.name)
            opened_before = True
            try:
                outcome = self._stream(capture)
            finally:
                capture.close()
            if outcome is None:
                return
            error, read_any = outcome
            failures = 1 if read_any else failures + 1
            self._lost(error, self._backoff.delay(failures))

    def _stream(self, capture: Capture) -> tuple[SourceLost, bool] | None:
        """Read frames until stopped, ended or lost; when lost, return the error and whether any frame came."""
        read_any = False
        while not self._stop.is_set():
            try:
                image, timestamp = capture.read()
            except SourceEnded:
                self._set_state(SourceState.ENDED)
                return None
            except Exception as error:  # noqa: BLE001 (the reader thread must outlive any device fault)
                return _as_lost(error), read_any
            read_any = True
            with self._lock:
                if self._state is SourceState.CLOSED:
                    return None
                self._captured += 1
                self._latest = Frame(image, timestamp, self._captured)
                self._state = SourceState.STREAMING
                self._lock.notify_all()
        return None

    def _lost(self, error: SourceLost, retry_in: float) -> None:
        with self._lock:
            if self._state is SourceState.CLOSED:
                return
            if self._state is not SourceState.DISCONNECTED:
                log.warning("%s: %s; retrying in %.3g s", self.name, error, retry_in)
            self._state = SourceState.DISCONNECTED
            self._last_error = str(error)
            self._lock.notify_all()
        self._stop.wait(retry_in)

    def _set_state(self, state: SourceState) -> None:
        with self._lock:
            if self._state is not SourceState.CLOSED:
                self._state = state
            self._lock.notify_all()


def _as_lost(error: Exception) -> SourceLost:
    """A device fault as SourceLost; an unexpected one (cv2.error, OSError) is logged with its traceback."""
    if isinstance(error, SourceLost):
        return error
    log.error("unexpected device fault", exc_info=error)
    lost = SourceLost(f"{type(error).__name__}: {error}")
    lost.__cause__ = error
    return lost
