"""Real-time scheduling for the threads that stand for hardware: the relay's presses, and the
simulator's frame loop (the target machine, which in a real rig is another computer)."""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)


def try_realtime(priority: int, what: str) -> bool:
    """Ask for SCHED_FIFO ``priority`` for the calling thread (and the threads it starts); False,
    with a log line naming ``what``, if the system refuses."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (PermissionError, OSError, AttributeError) as exc:
        log.info("%s: SCHED_FIFO %d refused (%s); running with normal scheduling", what, priority, exc)
        return False
    log.info("%s: running with SCHED_FIFO priority %d", what, priority)
    return True
