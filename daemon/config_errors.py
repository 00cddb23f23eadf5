"""The one error type for bad configuration: it names the file and the key."""

from __future__ import annotations

from pathlib import Path


class ConfigError(ValueError):
    """A configuration file is missing, malformed, or has a bad key or value."""

    def __init__(self, path: Path | str, key: str | None, reason: str) -> None:
        self.path = Path(path)
        self.key = key
        self.reason = reason
        where = f"{self.path}: {key}" if key else str(self.path)
        super().__init__(f"{where}: {reason}")
