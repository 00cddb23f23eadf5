"""`gamerigctl bench keys`: the ADR2200 driver pressing keys on the virtual target machine.

The virtual machine (:class:`Machine`: game, camera, MJPEG stream, the virtual ADR2200 board on a
real pty) runs in a spawned child process, as the target is another machine for a real rig (so the
driver and the simulator do not share an interpreter lock); the real driver
(:func:`open_key_output`: KeyOutput over RelayBoard over pyserial, with its readback after every
command) runs here and opens the board's pty by its symlink, and one HTTP client here reads the
whole camera stream, so every frame is really sent.  It presses left, right, rotate in turn with
the default 60 ms hold, waiting the 60 ms gap between presses itself so each press starts at its call.

Per press: roundtrip = the keyboard model's accepted press edge (its contact time: when the board
finished the close command) minus the time just before ``KeyOutput.press`` was called; hold error =
|received hold (release edge minus press edge) - 60 ms|.  Times compare across the two processes
because time.monotonic() is the system-wide CLOCK_MONOTONIC.  Over the window of the presses:
sim_fps = camera frames streamed per second and sim_cpu_fraction = CPU time of the simulator over
wall time, both from :meth:`Machine.performance` (thread CPU of the frame loop, the stream's client
threads and the relay board's thread; the camera's random frame drops are off so fps measures what
the pipeline sustains).  sim_process_cpu_fraction is the whole child process (its control server
and interpreter overhead included); driver_process_cpu_fraction this process (the driver's
spin-waits and threads, the stream client).  The driver's own timing_stats() are reported as
driver_*; path_hold_error_ms_p99 is what the pty and the simulator's side added to each hold
(|received hold - the hold the driver timed|), so hold_error is split into the driver's share and
the rest.

Not measured: the key edge inside the game is the contact time; the game reads keys once per frame
(up to 16.7 ms later, by design of the target machine, not of the rig), and that frame is in the
ground truth, not here.  The pty transfers instantly (no 9600-baud pacing: a real ADR2200 adds about
4 ms of wire time to each command, equally to press and release).

Measured 2026-12-02 on the shared 2-core machine with other helpers' tests and benchmarks running,
`gamerigctl bench keys --presses 300 --json`, normal scheduling (1-minute load average at the end):

- load 1.0: roundtrip p50 0.30 / p99 1.68 ms; hold error p99 5.36 ms (driver's own p99 4.32);
  sim_fps 60.0, sim_cpu_fraction 0.18.
- load 1.2: roundtrip p99 1.98 ms (max 9.4); hold error p99 7.01 ms (driver 4.30); 59.9 fps, 0.17.
- load 1.6: roundtrip p99 1.78 ms; hold error p99 9.69 ms (driver 5.19); 60.0 fps, 0.16 (whole
  sim process 0.22).
- load 2.0: roundtrip p99 4.84 ms (max 20); hold error p99 9.55 ms (max 148: the simulator
  process was not run for 0.15 s), driver 5.35; 59.8 fps, 0.17 (process 0.23).
- load 3.6: roundtrip p99 5.26 ms; hold error p99 20.1 ms, driver 15.5, pty + board 17.7;
  59.6 fps, 0.16.
- load 2.2 (this version, 17:35 UTC): roundtrip p50 0.28 / p99 4.20 ms (max 5.5); hold error p50
  0.29 / p99 11.6 ms (driver 8.8, pty + board 6.1); 59.95 fps, 0.17 (whole sim process 0.23).
- quiet machine, nothing else running (19:00 UTC, load 0.3-0.4), three runs in a row: roundtrip
  p99 1.17, 1.09, 0.87 ms (p50 0.27-0.28); hold error p99 2.12, 3.25, 2.80 ms (median 2.80; p50
  0.09-0.10; driver's own p99 0.17); 60.0 fps at 0.16-0.17 of a core (whole process 0.22).

Against the issue's targets: sim 60 fps at <= 0.5 core is met (59.6-60.0 fps at 0.16-0.18 of a
core in the simulator's threads, 0.22-0.23 for its whole process).  Roundtrip p99 <= 5 ms is met
up to load 2 and missed at load 3.6 (5.3 ms).  Hold error p99 <= 3 ms is met on a quiet machine (median of
three runs 2.80 ms, one run of the three 3.25 ms) and missed whenever other work shares the two
cores (5-20 ms at load 1-3.6).  Why: the tail is the scheduler's, not the code's.  A bare ``time.sleep(0.06)`` in an idle Python process here
overshoots p99 6.9 ms (max 13 ms) at load 2.6; the driver's own hold error (its thread waking
late after the hold, seen by its own clock) is 4-15 ms at p99 in the same runs while its median is
0.04 ms, and the simulator's process (pty reader, then the board) adds a similar tail to each
edge.  Raising the priority made it worse here (``chrt -f 10``: hold error p99 26.7 ms, roundtrip
p99 11.4 ms; ``nice -n -10``: hold error p99 25.7 ms, and once the driver saw a truncated RPK
reply, ``got b'0'`` within 0.25 s), most likely because the kernel worker that moves pty data
then waits behind the raised processes.  With the simulator in the driver's process (an earlier
version) the interpreter lock added more: hold error p99 6.7 ms with Python's 5 ms switch
interval, 3.6 ms at 0.5 ms (hence :func:`prefer_the_board` in the simulator's process).  A
quiet machine or a dedicated core for the relay process is needed for the 3 ms target.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from gamerig.hardware.keys import KeyOutput, KeyOutputConfig, KeyOutputError, load_key_output_config, open_key_output
from gamerig.hardware.sim.keyboard import KeyEdge
from gamerig.hardware.sim.machine import Machine, MachineOptions, prefer_the_board
from gamerig.hardware.sim.target import SimPerformance, TargetOptions

PROG = "gamerigctl bench keys"
USAGE_ERROR = 2
INTERRUPTED = 130
KEYS = ("left", "right", "rotate")
#: The stream and the board settle (first frames filmed, the driver's start-up) before the window.
WARM_UP_S = 1.0


class StreamClient(threading.Thread):
    """One HTTP client reading and discarding the camera stream, so every frame is really sent."""

    def __init__(self, url: str) -> None:
        super().__init__(name="bench-stream-client", daemon=True)
        self._response = urllib.request.urlopen(url, timeout=5.0)  # noqa: S310 - our own 127.0.0.1 stream

    def run(self) -> None:
        try:
            while self._response.read1(1 << 16):
                pass
        except (OSError, ValueError):  # closed by stop(), or the stream went away
            pass

    def stop(self) -> None:
        self._response.close()
        self.join(2.0)


def measure(presses: int) -> dict[str, Any]:
    """Run the benchmark (see the module docstring); returns the --json object."""
    with tempfile.TemporaryDirectory(prefix="gamerig-bench-keys-") as folder:
        with _MachineProcess(os.path.join(folder, "relay")) as machine:
            config = load_key_output_config(machine.key_config, "<bench keys>")
            with open_key_output(config) as keys:
                client = StreamClient(machine.url)
                client.start()
                try:
                    time.sleep(WARM_UP_S)
                    machine.begin()
                    process_start = time.process_time()
                    calls = [_press(keys, KEYS[n % len(KEYS)], config) for n in range(presses)]
                    process_cpu = time.process_time() - process_start
                    window, sim_process_cpu, edges = machine.end()
                    stats = keys.timing_stats()
                finally:
                    client.stop()
    roundtrips, hold_errors, path_errors = _match(calls, edges)
    errors = [c.error for c in calls if c.error is not None]
    return {
        "presses": presses,
        "received": len(roundtrips),
        "missing": presses - len(roundtrips),
        "failed": len(errors),
        "first_error": errors[0] if errors else None,
        "roundtrip_ms_p50": _percentile(roundtrips, 50),
        "roundtrip_ms_p99": _percentile(roundtrips, 99),
        "roundtrip_ms_max": max(roundtrips, default=0.0),
        "hold_error_ms_p50": _percentile(hold_errors, 50),
        "hold_error_ms_p99": _percentile(hold_errors, 99),
        "hold_error_ms_max": max(hold_errors, default=0.0),
        "path_hold_error_ms_p99": _percentile(path_errors, 99),
        "sim_fps": window.fps,
        "sim_cpu_fraction": window.cpu_fraction,
        "sim_process_cpu_fraction": sim_process_cpu,
        "driver_process_cpu_fraction": process_cpu / window.wall_s,
        "window_s": window.wall_s,
        "driver_hold_error_ms_p50": stats.hold_error.p50_ms,
        "driver_hold_error_ms_p99": stats.hold_error.p99_ms,
        "driver_hold_error_ms_max": stats.hold_error.max_ms,
        "driver_gap_error_ms_p99": stats.gap_error.p99_ms,
        "driver_hold_jitter_ms": stats.hold_jitter_ms,
        "driver_guard_releases": stats.guard_releases,
        "load_average_1m": os.getloadavg()[0],
    }


@dataclass(frozen=True)
class _Call:
    key: str
    called: float  # time.monotonic() just before KeyOutput.press
    hold_ms: float
    driver_hold_ms: float = 0.0  # the hold as the driver timed it (close command to open command)
    error: str | None = None  # the driver's KeyOutputError, if the press failed


def _press(keys: KeyOutput, key: str, config: KeyOutputConfig) -> _Call:
    """One press; then the gap passes here, so the next press starts at its call.  A press the
    driver fails (it has released the key then) is recorded with its error, and the run goes on."""
    called = time.monotonic()
    try:
        record = keys.press(key)
    except KeyOutputError as error:
        return _Call(key, called, config.hold_ms, error=str(error))
    finally:
        time.sleep(config.gap_ms / 1000.0)
    return _Call(key, called, config.hold_ms, record.measured_hold_ms)


def _match(calls: list[_Call], edges: list[KeyEdge]) -> tuple[list[float], list[float], list[float]]:
    """Roundtrips, hold errors and path hold errors (ms) of the presses whose press and release
    edges both arrived (each looked for between its call and the next one).  The path hold error
    is |received hold - the driver's timed hold|: what the pty and the board's side added."""
    roundtrips: list[float] = []
    hold_errors: list[float] = []
    path_errors: list[float] = []
    for call, following in zip(calls, [*(c.called for c in calls[1:]), float("inf")]):
        if call.error is not None:
            continue
        mine = [e for e in edges if e.key == call.key and call.called <= e.t < following]
        down = next((e for e in mine if e.pressed), None)
        up = next((e for e in mine if not e.pressed and down is not None and e.t >= down.t), None)
        if down is not None and up is not None:
            roundtrips.append((down.t - call.called) * 1000.0)
            hold_errors.append(abs((up.t - down.t) * 1000.0 - call.hold_ms))
            path_errors.append(abs((up.t - down.t) * 1000.0 - call.driver_hold_ms))
    return roundtrips, hold_errors, path_errors


class _MachineProcess:
    """The virtual machine in a child process of its own, as the target is another machine for a
    real rig: the driver here and the simulator there do not share an interpreter lock.  Times
    compare across the two because time.monotonic() is the system-wide CLOCK_MONOTONIC."""

    def __init__(self, link_path: str) -> None:
        context = multiprocessing.get_context("spawn")  # no fork of a process with threads
        self._conn, child_conn = context.Pipe()
        self._process = context.Process(target=_run_machine, args=(link_path, child_conn), name="bench-keys-sim")
        self._process.start()
        child_conn.close()
        self.key_config, self.url = self._conn.recv()

    def begin(self) -> None:
        """Start the measured window."""
        self._conn.send("begin")

    def end(self) -> tuple[SimPerformance, float, list[KeyEdge]]:
        """End the window: the simulator's performance and whole-process CPU fraction over it, and
        every key edge so far."""
        self._conn.send("end")
        return self._conn.recv()

    def __enter__(self) -> _MachineProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._conn.close()  # the child's recv fails, and it stops its machine
        self._process.join(5.0)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join()


def _run_machine(link_path: str, conn: Connection) -> None:
    """The child: run the machine, report on request, stop when the parent says or goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it closes the pipe
    prefer_the_board()
    options = MachineOptions(target=TargetOptions(camera_drop_probability=0.0), link_path=link_path)
    with Machine(options) as machine:
        conn.send((machine.key_config(), machine.target.url))
        try:
            conn.recv()  # begin
            start, process_start = machine.performance(), time.process_time()
            conn.recv()  # end
            window, process_cpu = machine.performance().since(start), time.process_time() - process_start
            conn.send((window, process_cpu / window.wall_s, machine.target.keyboard.edges()))
            conn.recv()  # the parent closes the pipe when it is done
        except EOFError:  # the parent ended the run early (a failure there): just stop the machine
            pass


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def format_report(report: dict[str, Any]) -> str:
    """The human-readable table."""
    rows = [
        ("presses (received / missing / failed)", f"{report['presses']} ({report['received']} / {report['missing']} / {report['failed']})"),
        ("first driver error", str(report["first_error"])),
        ("roundtrip p50 / p99 / max", _ms(report, "roundtrip_ms")),
        ("hold error p50 / p99 / max", _ms(report, "hold_error_ms")),
        ("driver hold error p50 / p99 / max", _ms(report, "driver_hold_error_ms")),
        ("pty + board hold error p99", f"{report['path_hold_error_ms_p99']:.2f} ms"),
        ("driver gap error p99", f"{report['driver_gap_error_ms_p99']:.2f} ms"),
        ("driver hold jitter", f"{report['driver_hold_jitter_ms']:.2f} ms"),
        ("driver guard releases", str(report["driver_guard_releases"])),
        ("sim fps", f"{report['sim_fps']:.1f}"),
        ("sim CPU (of one core)", f"{report['sim_cpu_fraction']:.3f}"),
        ("sim process CPU", f"{report['sim_process_cpu_fraction']:.3f}"),
        ("driver process CPU", f"{report['driver_process_cpu_fraction']:.3f}"),
        ("window / load average", f"{report['window_s']:.1f} s / {report['load_average_1m']:.2f}"),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def _ms(report: dict[str, Any], prefix: str) -> str:
    return " / ".join(f"{report[f'{prefix}_{q}']:.2f}" for q in ("p50", "p99", "max")) + " ms"


def run(args: argparse.Namespace) -> int:
    """Run the benchmark from parsed arguments; returns the exit code."""
    if args.presses < 1:
        print(f"{PROG}: error: --presses must be at least 1, got {args.presses}", file=sys.stderr)
        return USAGE_ERROR
    try:
        report = measure(args.presses)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except (KeyOutputError, EOFError, OSError) as error:  # the driver could not start, or the simulator died
        print(f"{PROG}: error: {error or type(error).__name__}", file=sys.stderr)
        return 1
    print(json.dumps(report) if args.json else format_report(report))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `keys` to the `bench` command's subcommands."""
    parser = subparsers.add_parser(
        "keys",
        help="measure key presses through the ADR2200 driver on the virtual target machine",
        description=(
            "Press keys through the ADR2200 driver over a real pty into the simulator's virtual board"
            " and report the round trip to the key edge in the game, the hold error, and the"
            " simulator's fps and CPU."
        ),
    )
    parser.add_argument("--presses", type=int, default=300, help="how many presses (default 300, about 40 s)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.set_defaults(func=run)
