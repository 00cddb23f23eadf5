"""The simulated IP camera's server: JPEG frames as an MJPEG-over-HTTP stream on 127.0.0.1.

``multipart/x-mixed-replace`` with one JPEG per part, the format cheap IP cameras and mjpg-streamer
serve; ``cv2.VideoCapture(url, cv2.CAP_FFMPEG)`` opens it like a camera (FFmpeg recognises the
format from the content type, the URL path does not matter).  The producer calls
:meth:`MjpegStreamServer.publish` once per frame with bytes already encoded, so any number of
clients cost one encode; each client thread sends the newest frame it has not sent yet, so a slow
client skips frames instead of building a backlog (as a camera does).

:meth:`disconnect` imitates a camera that drops off the network: every connection is cut, the
listening socket is closed (new connections are refused), and after the given time it listens on
the same port again.  The CPU time of the client threads is counted for the simulator's
``sim_cpu_fraction`` (:attr:`cpu_seconds`).
"""

from __future__ import annotations

import contextlib
import http.server
import logging
import socket
import threading
import time

BOUNDARY = "gamerigframe"
_WAIT_S = 0.25  # how often an idle client thread looks at the stop flags
_RETRY_S = 0.2  # between attempts to listen again after a disconnect

log = logging.getLogger(__name__)


class MjpegStreamServer:
    """Serves published JPEGs to every client; ``url`` is what a camera client opens."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1") -> None:
        self._host = host
        self._cond = threading.Condition()
        self._jpeg: bytes | None = None
        self._sequence = 0
        self._generation = 0  # +1 on every disconnect: client threads of older generations end
        self._clients: set[socket.socket] = set()
        self._cpu = 0.0
        self._stopped = False
        self._reconnect: threading.Timer | None = None
        self._httpd: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._listen(port)
        assert self._httpd is not None
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://{host}:{self.port}/stream.mjpg"

    # ---- the producer side ---------------------------------------------------------------

    def publish(self, jpeg: bytes) -> None:
        """Make ``jpeg`` the newest frame; waiting clients send it."""
        with self._cond:
            self._jpeg = jpeg
            self._sequence += 1
            self._cond.notify_all()

    @property
    def frames_published(self) -> int:
        """Frames published so far."""
        return self._sequence

    @property
    def client_count(self) -> int:
        """Clients connected now."""
        with self._cond:
            return len(self._clients)

    @property
    def cpu_seconds(self) -> float:
        """CPU time spent by client threads so far."""
        with self._cond:
            return self._cpu

    @property
    def online(self) -> bool:
        """False while disconnected (connections refused)."""
        with self._cond:
            return self._httpd is not None

    # ---- faults and lifetime -------------------------------------------------------------

    def disconnect(self, seconds: float) -> None:
        """Cut every client and refuse connections for ``seconds``, then listen on the same port again."""
        if seconds <= 0:
            raise ValueError(f"disconnect time must be > 0 s, got {seconds}")
        with self._cond:
            if self._reconnect is not None:
                self._reconnect.cancel()
        self._go_offline()
        timer = threading.Timer(seconds, self._come_back)
        timer.daemon = True
        with self._cond:
            self._reconnect = timer
        timer.start()

    def stop(self) -> None:
        """Stop serving for good: cut every client and free the port."""
        with self._cond:
            self._stopped = True
            if self._reconnect is not None:
                self._reconnect.cancel()
        self._go_offline()

    def __enter__(self) -> MjpegStreamServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _listen(self, port: int) -> None:
        httpd = http.server.ThreadingHTTPServer((self._host, port), self._handler_class())
        httpd.daemon_threads = True
        thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), name="sim-mjpeg-accept", daemon=True)
        with self._cond:
            self._httpd, self._thread = httpd, thread
        thread.start()

    def _go_offline(self) -> None:
        with self._cond:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
            self._generation += 1
            for client in self._clients:
                with contextlib.suppress(OSError):  # already closed by the client
                    client.shutdown(socket.SHUT_RDWR)
            self._cond.notify_all()
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None:
            thread.join(2.0)

    def _come_back(self) -> None:
        with self._cond:
            if self._stopped or self._httpd is not None:
                return
        try:
            self._listen(self.port)
        except OSError as error:  # the port was taken meanwhile: keep trying, as a camera would
            log.warning("camera stream cannot listen on port %d again (%s); retrying", self.port, error)
            timer = threading.Timer(_RETRY_S, self._come_back)
            timer.daemon = True
            with self._cond:
                self._reconnect = timer
            timer.start()

    # ---- the client side -------------------------------------------------------------------

    def _serve(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        started = time.thread_time()
        with self._cond:
            generation, sent = self._generation, self._sequence
            self._clients.add(handler.connection)
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", f"multipart/x-mixed-replace; boundary={BOUNDARY}")
            handler.send_header("Cache-Control", "no-cache")
            handler.send_header("Connection", "close")
            handler.end_headers()
            while True:
                with self._cond:
                    self._cond.wait_for(
                        lambda: self._sequence != sent or self._generation != generation, timeout=_WAIT_S
                    )
                    if self._generation != generation:
                        return
                    if self._sequence == sent or self._jpeg is None:
                        continue
                    sent, jpeg = self._sequence, self._jpeg
                head = f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(jpeg)}\r\n\r\n"
                handler.wfile.write(head.encode("ascii") + jpeg + b"\r\n")
                handler.wfile.flush()
                with self._cond:  # counted as it goes, so a long-lived client shows in the figures
                    now = time.thread_time()
                    self._cpu += now - started
                    started = now
        except OSError:
            pass  # the client went away, or a disconnect cut it
        finally:
            with self._cond:
                self._cpu += time.thread_time() - started
                self._clients.discard(handler.connection)

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                server._serve(self)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass  # one line per request would drown the simulator's output

        return Handler
