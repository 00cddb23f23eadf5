"""The simulator's control interface: faults in and ground truth out over HTTP on 127.0.0.1.

For a simulator running in another process (``gamerigctl sim``, ``make demo``) tests and benchmarks
cannot call :class:`Target` methods, so this small server offers them as plain HTTP:

- ``POST /fault`` with a fault spec as the body (``freeze=2``, ``junk=3@5``, ``freeze=1@200p``: see
  :mod:`.faults`): 204 when accepted (applied now, or scheduled ``@SECONDS`` or ``@PIECESp`` from
  now), 400 with the reason if not;
- ``GET /truth``: the newest frame record as JSON; ``GET /edges`` and ``GET /received``: every key
  edge and every key the game read, as JSON lists.

It is a separate server from the camera stream, so a camera disconnect does not cut control.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any

from .faults import TARGET_FAULTS, FaultKind, FaultSchedule, parse_fault
from .ground_truth import GroundTruth

_MAX_BODY = 1024


class ControlServer:
    """HTTP control of a running simulator; see the module docstring.  ``url`` ends without a slash."""

    def __init__(
        self,
        truth: GroundTruth,
        actions: Mapping[str, Callable[[Any], None]],
        kinds: Mapping[str, FaultKind] = TARGET_FAULTS,
        port: int = 0,
        pieces: Callable[[], int] | None = None,
    ) -> None:
        self._truth = truth
        self._pieces = pieces
        self._actions = actions
        self._kinds = kinds
        self._schedules: list[FaultSchedule] = []
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="sim-control", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, cancel faults still scheduled, free the port."""
        for schedule in self._schedules:
            schedule.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(2.0)

    def __enter__(self) -> ControlServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _fault(self, spec: str) -> None:
        fault = parse_fault(spec, self._kinds)
        schedule = FaultSchedule([fault], self._actions, self._pieces)
        if fault.at > 0 or fault.at_piece is not None:
            self._schedules.append(schedule.start())
        else:
            self._actions[fault.name](fault.value)

    def _get(self, path: str) -> object:
        if path == "/truth":
            latest = self._truth.latest()
            return asdict(latest) if latest is not None else None
        if path == "/edges":
            return [asdict(e) for e in self._truth.edges()]
        if path == "/received":
            return [asdict(k) for k in self._truth.received()]
        raise KeyError(path)

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                try:
                    body = json.dumps(server._get(self.path)).encode()
                except KeyError:
                    self._reply(404, f"no such resource {self.path}; try /truth, /edges, /received")
                    return
                self._reply(200, body, "application/json")

            def do_POST(self) -> None:  # noqa: N802
                if self.path != "/fault":
                    self._reply(404, f"no such resource {self.path}; POST a fault spec to /fault")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 < length <= _MAX_BODY:
                    self._reply(400, f"the body must be a fault spec of 1..{_MAX_BODY} bytes")
                    return
                try:
                    server._fault(self.rfile.read(length).decode("utf-8", "replace"))
                except ValueError as error:  # a bad spec, or a value the simulator refuses
                    self._reply(400, str(error))
                    return
                self._reply(204, b"")

            def _reply(self, status: int, body: str | bytes, kind: str = "text/plain; charset=utf-8") -> None:
                data = body.encode() if isinstance(body, str) else body
                self.send_response(status)
                if status != 204:
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if status != 204:
                    self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass  # tests poll often; one line per request would drown their output

        return Handler
