"""The camera service: hosts the frame source and the recognizer, publishes what the camera sees.

    python -m gamerig.services.camera --endpoints JSON --config PATH

Opens the rig config's ``camera.source`` (hardware/frames: a reader thread keeps only the newest
frame and reopens a lost source by itself) and loads ``camera.calibration``
(daemon/calibration_store.py) once the first frame gives the frame size.  Every frame goes
through ``camera_pipeline.RecognitionPipeline`` (the vision bench's recognition) with the capture
time from ``camera_repeats.RepeatClock`` (a frozen camera's repeated picture keeps its first
capture time); its ``obs.event`` bodies are published, then its ``obs.frame`` (lifespan 0.25 s).

No frame for ``NO_FRAME_S`` (a lost, silent or ended source): an ``obs.frame`` with status
``none`` every ``NO_FRAME_S``, still carrying the last capture time, and ``cam.state`` says
``connected: false``.  No calibration, or one made at another frame size: status ``none``,
calibration ``lost``, and the reason names the problem; ``ctl.calibrate`` makes one.  Nothing of
this crashes the loop.

Requests: ``ctl.snapshot {request_id}`` -> ``cam.snapshot`` with the newest frame as a JPEG at most
``SNAPSHOT_WIDTH`` wide; ``ctl.calibrate {request_id, out, png}`` (optional ``corners``,
``frames``, ``every_s``: camera_calibrate.py) -> ``cam.calibrated {request_id, ok, message,
corners, preview}`` (preview: a preview box was found) after the calibration ran on live frames
(the fit on a thread of its own: frames and heartbeats go on); a good one replaces the running
one at once.
``cam.state`` every ``STATE_EVERY_S``; the heartbeat's stats carry the counters and the per-frame
processing time p50/p99 (wall time from the frame's arrival to its obs.frame, in ms).  Both say
how the cells are read (``cells_read_by``: ``undecided`` until the first frames of play show
whether the game fills its cells, then ``middles`` or ``whole``; see games/tetris/cell_look.py).

Measured (2 Dec 2026, shared 2-core machine at load 3-8): the pipeline per frame on the
simulator's stream (``nes`` skin, level 5, random keys, 829 frames, thread CPU time) p50 0.95 ms,
p99 7.1 ms (the p99 is the once-a-second re-check), wall p50 1.0 ms, p99 13 ms; in the service,
arrival to obs.frame p50 1.2-1.6 ms, p99 7.6-22 ms.  Tested in
tests/integration/test_camera_service.py against the simulator's real MJPEG stream.
"""

from __future__ import annotations

import base64
import sys
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from gamerig.daemon import calibration_store
from gamerig.daemon.config_errors import ConfigError
from gamerig.daemon.rig_config import CameraConfig, load_rig_config
from gamerig.hardware.frames import Frame, FrameSource, FrameTimeout, SourceEnded, SourceState, open_source

from .camera_calibrate import CalibrationRequest, LiveCalibration
from .camera_pipeline import FrameResult, RecognitionPipeline
from .camera_repeats import RepeatClock
from .lifecycle import Service, service_main

#: The longest wait for a frame before requests, heartbeats and the no-frame report get a turn.
READ_TIMEOUT_S = 0.05
#: Without a frame for this long the camera reports "none" (and again every this long).
NO_FRAME_S = 0.1
STATE_EVERY_S = 1.0
FRAME_LIFESPAN_S = 0.25
SNAPSHOT_WIDTH = 320
SNAPSHOT_QUALITY = 80
#: Frames whose processing time the p50/p99 in the heartbeat are taken over.
TIMING_WINDOW = 300


class Camera:
    """The camera service's state and its work per loop turn."""

    def __init__(self, service: Service, config: CameraConfig, source: FrameSource) -> None:
        self.service = service
        self.config = config
        self.source = source
        self.clock = RepeatClock()
        self.pipeline: RecognitionPipeline | None = None
        self.problem = "no frame yet"  # why there is no pipeline
        self._loaded_for: tuple[int, int] | None = None  # frame size the calibration was loaded for
        self.job: LiveCalibration | None = None
        self.counts = dict.fromkeys(("frames", "observations", "unsure", "none"), 0)
        self.image: np.ndarray | None = None
        self.last: dict[str, Any] | None = None  # the last obs.frame body
        self.frame_seq = 0
        self.t_capture = 0.0
        self._frame_at = -float("inf")  # when the last frame arrived
        self._none_at = -float("inf")
        self._state_at = -float("inf")
        self._fps_window: deque[float] = deque()
        self._timings: deque[float] = deque(maxlen=TIMING_WINDOW)

    # ---- frames ------------------------------------------------------------------------------

    def step(self) -> None:
        """Wait for one frame (at most READ_TIMEOUT_S) and handle it, or report its absence."""
        try:
            frame = self.source.read(READ_TIMEOUT_S)
        except (FrameTimeout, SourceEnded) as exc:
            self._no_frame(str(exc))
            return
        self._frame(frame)

    def _frame(self, frame: Frame) -> None:
        arrived = time.monotonic()
        self._frame_at = arrived
        self.image = frame.image
        self.frame_seq = frame.sequence
        self.t_capture = self.clock.capture_time(frame.image, frame.timestamp)
        self._ensure_pipeline(frame.image.shape)
        if self.job is not None:
            self._calibrating(frame.image, self.t_capture)
        if self.pipeline is None:
            result = FrameResult(self._none_body(f"not calibrated: {self.problem}", "lost"), [])
        else:
            result = self.pipeline.process(frame.image, self.t_capture, frame.sequence)
        for body in result.events:
            self.service.publisher.publish("obs.event", body)
        self._publish_frame(result.frame)
        self._timings.append(time.monotonic() - arrived)
        self._fps_window.append(arrived)

    def _no_frame(self, why: str) -> None:
        now = time.monotonic()
        if now - self._frame_at < NO_FRAME_S or now - self._none_at < NO_FRAME_S:
            return
        self._none_at = now
        calibration = self.pipeline.calibration if self.pipeline is not None else "lost"
        self._publish_frame(self._none_body(f"no frame from the source: {why}", calibration))

    def _none_body(self, reason: str, calibration: str) -> dict[str, Any]:
        return {
            "frame_seq": self.frame_seq, "t_capture": self.t_capture, "status": "none", "reason": reason,
            "board": None, "falling": None, "next_piece": None, "level": None, "calibration": calibration,
        }

    def _publish_frame(self, body: dict[str, Any]) -> None:
        self.last = body
        self.counts["frames"] += 1
        self.counts[{"ok": "observations", "unsure": "unsure", "none": "none"}[body["status"]]] += 1
        self.service.publisher.publish("obs.frame", body, FRAME_LIFESPAN_S)

    # ---- calibration -----------------------------------------------------------------------------

    def _ensure_pipeline(self, shape: tuple[int, ...]) -> None:
        """Load the calibration file for this frame size, once per size."""
        size = (shape[1], shape[0])
        if self._loaded_for == size:
            return
        self._loaded_for, self.pipeline = size, None
        path = self.config.calibration
        try:
            record = calibration_store.load(path, size)
        except ConfigError as exc:
            self.problem = f"{exc} (calibrate with gamerigctl calibrate)"
            return
        self._use(record, _reference(path, record, shape))

    def _use(self, record: calibration_store.CalibrationRecord, reference: np.ndarray | None) -> None:
        self.pipeline = RecognitionPipeline(record.well, record.preview, reference, self.config.k)
        self.problem = ""

    def calibrate(self, body: dict[str, Any]) -> None:
        """Start a ``ctl.calibrate`` request (answered when its frames are in)."""
        if self.job is not None:
            self._calibrated(body.get("request_id"), False, "a calibration is already running")
            return
        try:
            request = CalibrationRequest.from_body(body, self.config.calibration)
        except ValueError as exc:
            self._calibrated(body.get("request_id"), False, f"bad request: {exc}")
            return
        self.job = LiveCalibration(request, self.config.source)

    def _calibrating(self, image: np.ndarray, t_capture: float) -> None:
        assert self.job is not None
        job = self.job
        if not job.complete:
            job.offer(image, t_capture)
            if job.complete:
                job.finish_in_background()
            return
        outcome = job.outcome
        if outcome is None:
            return  # still fitting
        self.job = None
        if outcome.record is not None:
            self._use(outcome.record, outcome.reference)
            self._loaded_for = outcome.record.frame_size
        preview = outcome.record is not None and outcome.record.preview is not None
        self._calibrated(job.request.request_id, outcome.ok, outcome.message, outcome.corners, preview)

    def _calibrated(
        self, request_id: Any, ok: bool, message: str, corners: list[list[float]] | None = None, preview: bool = False
    ) -> None:
        body = {"request_id": request_id, "ok": ok, "message": message, "corners": corners, "preview": preview}
        self.service.publisher.publish("cam.calibrated", body)

    # ---- requests and state ------------------------------------------------------------------------

    def snapshot(self, body: dict[str, Any]) -> None:
        """Answer ``ctl.snapshot`` with the newest frame, downscaled, as a base64 JPEG."""
        reply: dict[str, Any] = {"request_id": body.get("request_id"), "jpeg_b64": None, "width": 0, "height": 0,
                                 "board": None, "falling": None}
        if self.image is not None:
            height, width = self.image.shape[:2]
            scale = min(1.0, SNAPSHOT_WIDTH / width)
            small = cv2.resize(self.image, (round(width * scale), round(height * scale)), interpolation=cv2.INTER_AREA)
            ok, data = cv2.imencode(".jpg", small, [cv2.IMWRITE_JPEG_QUALITY, SNAPSHOT_QUALITY])
            if ok:
                reply.update(jpeg_b64=base64.b64encode(data.tobytes()).decode("ascii"), width=small.shape[1], height=small.shape[0])
        if self.last is not None:
            reply.update(board=self.last["board"], falling=self.last["falling"])
        self.service.publisher.publish("cam.snapshot", reply)

    def connected(self) -> bool:
        """True while the source streams and a frame came within NO_FRAME_S."""
        return self.source.status().state is SourceState.STREAMING and time.monotonic() - self._frame_at < NO_FRAME_S

    def report(self) -> None:
        """cam.state when due, the lifecycle state and the heartbeat's stats."""
        now = time.monotonic()
        while self._fps_window and now - self._fps_window[0] > STATE_EVERY_S:
            self._fps_window.popleft()
        calibration = self.pipeline.calibration if self.pipeline is not None else "lost"
        cells_read_by = self.pipeline.reader.look if self.pipeline is not None else None
        connected = self.connected()
        if now - self._state_at >= STATE_EVERY_S:
            self._state_at = now
            self.service.publisher.publish("cam.state", {
                "source": self.config.source, "connected": connected, "fps": round(len(self._fps_window) / STATE_EVERY_S, 1),
                "calibration": calibration, "cells_read_by": cells_read_by, **self.counts,
            })
        problems = [text for ok, text in (
            (connected, "no frames from the source"),
            (self.pipeline is not None, f"not calibrated: {self.problem}"),
            (self.pipeline is None or calibration not in ("moved", "lost"), f"calibration {calibration}"),
        ) if not ok]
        message = "; ".join(problems)
        state = "active" if connected else "ready"
        if (state, message) != (self.service.state, self.service.message):
            self.service.set_state(state, message)
        timings = 1000 * np.asarray(self._timings) if self._timings else np.zeros(1)
        self.service.stats = {
            **self.counts, "repeats": self.clock.repeats, "calibration": calibration,
            "cells_read_by": cells_read_by,
            "process_ms_p50": round(float(np.percentile(timings, 50)), 2),
            "process_ms_p99": round(float(np.percentile(timings, 99)), 2),
        }
        self.service.heartbeat_if_due(now)


def _reference(path: Path, record: calibration_store.CalibrationRecord, shape: tuple[int, ...]) -> np.ndarray | None:
    """The calibration's reference frame (for the re-check), when it is there and of this size."""
    if record.reference_frame is None:
        return None
    image = cv2.imread(str(path.with_name(record.reference_frame)), cv2.IMREAD_COLOR)
    return image if image is not None and image.shape == tuple(shape) else None


def run(service: Service, config_path: Path) -> None:
    """The service loop (see the module docstring)."""
    config = load_rig_config(config_path).camera
    requests = service.subscriber(["ctl.snapshot", "ctl.calibrate"])
    requests.wait_connected(1.0)
    with open_source(config.source) as source:
        camera = Camera(service, config, source)
        service.set_state("ready", "waiting for the first frame")
        while not service.stopping:
            camera.step()
            while (request := requests.receive(0)) is not None:
                if request.topic == "ctl.snapshot":
                    camera.snapshot(request.body)
                else:
                    camera.calibrate(request.body)
            camera.report()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the camera service; returns the exit code."""
    return service_main("camera", run, argv)


if __name__ == "__main__":
    sys.exit(main())
