"""hardware/realtime.py: real-time scheduling for the calling thread only, or a clear refusal."""

from __future__ import annotations

import logging
import os
import threading

import pytest

from gamerig.hardware.realtime import try_realtime


def test_a_thread_gets_sched_fifo_for_itself_or_a_log_line_saying_it_was_refused(caplog: pytest.LogCaptureFixture) -> None:
    seen: dict[str, object] = {}

    def frame_loop() -> None:
        seen["granted"] = try_realtime(1, "a test loop")
        seen["policy"] = os.sched_getscheduler(0)

    caplog.set_level(logging.INFO, logger="gamerig.hardware.realtime")
    thread = threading.Thread(target=frame_loop)
    thread.start()
    thread.join()
    if seen["granted"]:
        assert seen["policy"] == os.SCHED_FIFO
    else:
        assert "a test loop: SCHED_FIFO 1 refused" in caplog.text
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # the thread that started it keeps normal scheduling
