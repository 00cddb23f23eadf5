"""Release every open key output when the process ends: at interpreter exit and on SIGTERM/SIGINT.

Key outputs register themselves here when they open. The first registration from the main thread
installs handlers for SIGTERM and SIGINT that release everything and then hand the signal on to
whatever handled it before (Python's KeyboardInterrupt for SIGINT, the default action, which ends
the process, for SIGTERM): the signal is never swallowed. A handler installed later by someone else
replaces this one and takes over the duty of closing the outputs. SIGKILL and power loss cannot be
handled by any process; the max-hold guard does not help there either, only the board can.

Tested with real child processes and real signals (tests/integration/test_key_release_on_exit.py).
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
import weakref
from types import FrameType
from typing import Any, Protocol

log = logging.getLogger(__name__)

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Releasable(Protocol):
    """Anything that can release all its outputs without raising, from any thread or a signal handler."""

    def emergency_release(self) -> None: ...


_open: weakref.WeakSet[Any] = weakref.WeakSet()
_previous: dict[int, Any] = {}
_registry_lock = threading.Lock()
_atexit_registered = False


def protect(target: Releasable) -> None:
    """Release `target` at exit and on SIGTERM/SIGINT until unprotect(target)."""
    global _atexit_registered
    with _registry_lock:
        _open.add(target)
        if not _atexit_registered:
            atexit.register(release_everything)
            _atexit_registered = True
    _install_signal_handlers()


def unprotect(target: Releasable) -> None:
    """Stop guarding `target` (it was closed)."""
    with _registry_lock:
        _open.discard(target)


def release_everything() -> None:
    """Release every registered output; never raises."""
    with _registry_lock:
        targets = list(_open)
    for target in targets:
        try:
            target.emergency_release()
        except Exception:  # noqa: BLE001 - one failing device must not stop the others being released
            log.exception("releasing %r at exit failed", target)


def _install_signal_handlers() -> None:
    if threading.current_thread() is not threading.main_thread():
        if not _previous:
            log.warning("key outputs opened outside the main thread: no SIGTERM/SIGINT release until one opens in it")
        return
    for signum in HANDLED_SIGNALS:
        current = signal.getsignal(signum)
        if current is not _on_signal:
            _previous[signum] = current
            signal.signal(signum, _on_signal)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """Release everything, then let the signal do what it would have done without us."""
    release_everything()
    previous = _previous.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL or previous is None:  # None: a handler not installed from Python
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
