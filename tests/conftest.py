"""Shared test settings."""

import signal
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests must give the same verdict on every run and every machine (CI
# included), and the first call of a numba kernel compiles for seconds, which
# must not count as a slow example.
settings.register_profile("gamerig", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("gamerig")

# A test run started in the background by a script (`make test &`, nohup) ignores SIGINT, and the
# processes the tests start would inherit that; the tests that press Ctrl-C on one need what a
# terminal gives.  A Python handler here is reset to the default in every child at exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

INTEGRATION = Path(__file__).parent / "integration"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """An integration test is ``real_time`` unless its module says it is ``off_the_clock``: `make
    test` runs every other test over all cores first, then these one at a time, as a second
    test beside them would make them miss their deadlines."""
    for item in items:
        if item.path.is_relative_to(INTEGRATION) and item.get_closest_marker("off_the_clock") is None:
            item.add_marker(pytest.mark.real_time)
