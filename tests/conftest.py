"""Shared test settings."""

from hypothesis import settings

# Property tests must give the same verdict on every run and every machine (CI
# included), and the first call of a numba kernel compiles for seconds, which
# must not count as a slow example.
settings.register_profile("gamerig", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("gamerig")
