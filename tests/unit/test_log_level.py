"""The services' log level comes from $GAMERIG_LOG_LEVEL; a wrong name must not stop a service."""

import logging

import pytest

from gamerig.services.lifecycle import LOG_LEVEL_ENV, _log_level


def test_the_level_is_info_unless_the_environment_names_another(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOG_LEVEL_ENV, raising=False)
    assert _log_level() == logging.INFO
    monkeypatch.setenv(LOG_LEVEL_ENV, "debug")
    assert _log_level() == logging.DEBUG


def test_an_unknown_level_is_reported_and_info_used(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(LOG_LEVEL_ENV, "chatty")
    assert _log_level() == logging.INFO
    assert "GAMERIG_LOG_LEVEL='CHATTY' is not a logging level" in capsys.readouterr().err
