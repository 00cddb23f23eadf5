"""Reading config files, and the one error type for bad configuration: it names the file and the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """A configuration file is missing, malformed, or has a bad key or value."""

    def __init__(self, path: Path | str, key: str | None, reason: str) -> None:
        self.path = Path(path)
        self.key = key
        self.reason = reason
        where = f"{self.path}: {key}" if key else str(self.path)
        super().__init__(f"{where}: {reason}")


def load_yaml(path: Path) -> Any:
    """A YAML file's content; an unreadable file or bad YAML is a one-line ConfigError."""
    try:
        return yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(path, None, f"cannot read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(path, None, f"not valid YAML: {_yaml_problem(exc)}") from exc


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's message on one line: what is wrong and where."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else problem
