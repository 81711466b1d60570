"""``DlabSettings.current()``: the settings as the environment has them at each call, built
again only when one of the class's variables changed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from functions.settings import BackboneSettings, backbone_settings


def test_the_settings_follow_the_environment_and_are_built_once_per_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DLAB_LEASE_SECONDS", "12")
    first = backbone_settings()
    assert first.lease_seconds == 12
    assert backbone_settings() is first
    monkeypatch.setenv("DLAB_LEASE_SECONDS", "13")
    assert backbone_settings().lease_seconds == 13
    monkeypatch.setenv("DLAB_WORK_MAX_ATTEMPTS", "7")  # any of the class's variables counts
    assert backbone_settings().work_max_attempts == 7
    monkeypatch.delenv("DLAB_LEASE_SECONDS")
    monkeypatch.delenv("DLAB_WORK_MAX_ATTEMPTS")
    assert backbone_settings().lease_seconds == BackboneSettings().lease_seconds == 30


def test_a_mistyped_value_fails_at_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLAB_LEASE_SECONDS", "-1")
    for _ in range(2):
        with pytest.raises(ValidationError, match="DLAB_LEASE_SECONDS"):
            backbone_settings()
