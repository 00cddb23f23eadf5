"""A small real MJPEG-over-HTTP server on 127.0.0.1 (multipart/x-mixed-replace), for tests and the simulator.

Every frame carries the server's time.monotonic() at sending, written as black/white blocks along
the top rows (see `stamp` / `read_stamp`); CLOCK_MONOTONIC is shared by all processes on the machine,
so a client can compute a frame's age even when the server runs in another process.

In process:  with MjpegServer(fps=30) as server: url = server.url
Subprocess:  python tests/support/mjpeg_server.py [--port N] [--fps F]  (prints "listening <port>")
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import socket
import threading
import time
from collections.abc import Callable

import cv2
import numpy as np

BOUNDARY = "frameboundary"
STAMP_BITS = 32
STAMP_BLOCK = 8  # pixels per bit; big enough to survive JPEG compression
STAMP_UNIT = 1e-4  # seconds per count: 32 bits cover about 5 days of monotonic time


def stamp(image: np.ndarray, seconds: float) -> None:
    """Write `seconds` (a monotonic time) into the top STAMP_BLOCK rows of `image`, in place."""
    value = int(seconds / STAMP_UNIT) % (1 << STAMP_BITS)
    for bit in range(STAMP_BITS):
        level = 255 if value >> bit & 1 else 0
        image[:STAMP_BLOCK, bit * STAMP_BLOCK : (bit + 1) * STAMP_BLOCK] = level


def read_stamp(image: np.ndarray, now: float) -> float:
    """The monotonic time written by `stamp`, unwrapped to the period nearest `now`."""
    row = image[STAMP_BLOCK // 2, STAMP_BLOCK // 2 :: STAMP_BLOCK][:STAMP_BITS]
    bits = row.mean(axis=-1) > 127 if row.ndim == 2 else row > 127
    value = sum(1 << bit for bit, on in enumerate(bits) if on)
    period = (1 << STAMP_BITS) * STAMP_UNIT
    seconds = value * STAMP_UNIT
    return seconds + round((now - seconds) / period) * period


def moving_bar(width: int, height: int) -> Callable[[int], np.ndarray]:
    """A frame maker: grey background with a bar that moves one step per frame."""

    def make(index: int) -> np.ndarray:
        image = np.full((height, width, 3), 96, np.uint8)
        x = index * 4 % width
        image[:, x : x + 8] = (0, 200, 255)
        return image

    return make


class MjpegServer:
    """Serves frames at `fps` to every client; stop() drops all connections as a crashed server would."""

    def __init__(
        self,
        port: int = 0,
        fps: float = 30.0,
        make_frame: Callable[[int], np.ndarray] | None = None,
        quality: int = 80,
    ) -> None:
        self._period = 1.0 / fps
        self._make_frame = make_frame or moving_bar(320, 240)
        self._quality = quality
        self._stopping = threading.Event()
        self.paused = threading.Event()  # while set, clients stay connected but get no frames
        self._clients: set[socket.socket] = set()
        self._clients_lock = threading.Lock()
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/stream.mjpg"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    def start(self) -> MjpegServer:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, cut every open connection and free the port."""
        self._stopping.set()
        self._httpd.shutdown()
        with self._clients_lock:
            for client in self._clients:
                with contextlib.suppress(OSError):  # already closed by the client
                    client.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()
        self._thread.join(2.0)

    def __enter__(self) -> MjpegServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _encode(self, index: int) -> bytes:
        image = self._make_frame(index)
        stamp(image, time.monotonic())
        ok, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, self._quality])
        assert ok, "JPEG encoding failed"
        return jpeg.tobytes()

    def _serve_client(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", f"multipart/x-mixed-replace; boundary={BOUNDARY}")
        handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()
        with self._clients_lock:
            self._clients.add(handler.connection)
        try:
            index = 0
            next_due = time.monotonic()
            while not self._stopping.is_set():
                next_due += self._period
                time.sleep(max(0.0, next_due - time.monotonic()))
                if self.paused.is_set():
                    continue
                jpeg = self._encode(index)
                index += 1
                head = f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(jpeg)}\r\n\r\n"
                handler.wfile.write(head.encode("ascii") + jpeg + b"\r\n")
                handler.wfile.flush()
        except OSError:
            pass  # the client went away
        finally:
            with self._clients_lock:
                self._clients.discard(handler.connection)

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                server._serve_client(self)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass  # one line per request would drown test output

        return Handler


def main() -> None:
    """Serve until killed; print the port once listening so a parent process can connect."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fps", type=float, default=30.0)
    args = parser.parse_args()
    server = MjpegServer(port=args.port, fps=args.fps).start()
    print(f"listening {server.port}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
