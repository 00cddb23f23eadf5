"""The supervisor with stand-in services, as a real process for tests/integration/test_supervisor.py.

    python supervisor_run.py RUNTIME_DIR LOG '{"relay": ["--crashes", "2"], ...}'

Runs gamerig.daemon.supervisor exactly as gamerigd does (run_until_signalled, notify from the
environment's NOTIFY_SOCKET), with tests/support/supervisor_service.py in place of each service.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gamerig.daemon.bus import Endpoints, ensure_runtime_dir
from gamerig.daemon.sd_notify import Notifier
from gamerig.daemon.supervisor import SERVICE_NAMES, Supervisor, Timeouts, run_until_signalled

STAND_IN = Path(__file__).with_name("supervisor_service.py")


def main() -> int:
    runtime_dir, log, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    endpoints = Endpoints.default(ensure_runtime_dir(runtime_dir))
    commands = {
        name: [sys.executable, str(STAND_IN), name, "--endpoints", endpoints.to_json(), "--log", log, *extra.get(name, [])]
        for name in SERVICE_NAMES
    }
    timeouts = Timeouts(heartbeat_s=1.0, relay_safe_s=2.0, stop_s=1.0, hung_s=2.0)
    return run_until_signalled(Supervisor(commands, endpoints, timeouts=timeouts, notifier=Notifier()))


if __name__ == "__main__":
    sys.exit(main())
