"""The chat's, debate's, society's and conductor's deployment settings: their defaults, their
variables parsed, and a bad value refused naming its variable."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from functions.chat.settings import ChatSettings, chat_settings
from functions.conductor.settings import ConductorSettings, conductor_settings
from functions.debate.settings import DebateSettings, debate_settings
from functions.society.settings import SocietyDeploySettings, society_settings
from shared.conductor.documents import NoValidReply, Semantics, ValidationMessage
from shared.settings import DlabSettings

CLASSES: list[type[DlabSettings]] = [
    ChatSettings,
    ConductorSettings,
    DebateSettings,
    SocietyDeploySettings,
]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defaults are what an unset environment gives: unset every variable these classes read."""
    for cls in CLASSES:
        for field in cls.model_fields.values():
            monkeypatch.delenv(str(field.validation_alias), raising=False)


def test_chat_defaults() -> None:
    settings = chat_settings()
    assert settings.idle_after == timedelta(seconds=120)
    assert settings.stalled_after == timedelta(seconds=30)
    assert (settings.idle_nudges, settings.watchdog_max_reads) == (3, 1000)
    assert (settings.chat_conductor_max_picks, settings.fanout_memory_seconds) == (2, 300.0)


def test_chat_reads_its_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "7.5")
    monkeypatch.setenv("DLAB_STALLED_SECONDS", "0")
    monkeypatch.setenv("DLAB_IDLE_NUDGES", "0")
    settings = chat_settings()
    assert settings.idle_after == timedelta(seconds=7.5)
    assert settings.stalled_after == timedelta(0)
    assert settings.idle_nudges == 0


def test_an_empty_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLAB_IDLE_NUDGES", "")
    assert chat_settings().idle_nudges == 3


@pytest.mark.parametrize(
    ("cls", "variable", "value"),
    [
        (ChatSettings, "DLAB_IDLE_NUDGES", "-1"),
        (ChatSettings, "DLAB_IDLE_NUDGES", "three"),
        (ChatSettings, "DLAB_WATCHDOG_MAX_READS", "1"),  # needs 2: an experiment and an agent
        (ChatSettings, "DLAB_CHAT_CONDUCTOR_MAX_PICKS", "0"),
        (ChatSettings, "DLAB_IDLE_AGENT_SECONDS", "-5"),
        (DebateSettings, "DLAB_DEBATE_STALE_SECONDS", "3601"),
        (SocietyDeploySettings, "DLAB_SOCIETY_CLOSE_SHARD_SIZE", "0"),
        (SocietyDeploySettings, "DLAB_SOCIETY_CLOSE_SHARD_SIZE", "5001"),
        (ConductorSettings, "DLAB_CONDUCTOR_STALLED_SECONDS", "-1"),
        (ConductorSettings, "DLAB_CONDUCTOR_VALIDATION_MESSAGE", "loud"),
        (ConductorSettings, "DLAB_CONDUCTOR_NO_VALID_REPLY", "retry"),
    ],
)
def test_a_bad_value_is_refused_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, cls: type[DlabSettings], variable: str, value: str
) -> None:
    with pytest.raises(ValidationError, match=variable):
        cls.of({variable: value})
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError, match=variable):
        cls.current()


def test_debate_defaults_and_stale_after(monkeypatch: pytest.MonkeyPatch) -> None:
    assert debate_settings().stale_after == timedelta(seconds=5)
    assert DebateSettings.of({"DLAB_DEBATE_STALE_SECONDS": "0.5"}).stale_after == timedelta(
        seconds=0.5
    )
    monkeypatch.setenv("DLAB_DEBATE_STALE_SECONDS", "12")
    assert debate_settings().stale_after == timedelta(seconds=12)


def test_society_shard_size(monkeypatch: pytest.MonkeyPatch) -> None:
    assert society_settings().society_close_shard_size == 500
    monkeypatch.setenv("DLAB_SOCIETY_CLOSE_SHARD_SIZE", "1")
    assert society_settings().society_close_shard_size == 1


def test_conductor_defaults_are_diskurs() -> None:
    settings = conductor_settings()
    assert settings.conductor_stalled_seconds == 30.0
    assert settings.conductor_validation_message == ValidationMessage.VERBATIM
    assert settings.conductor_no_valid_reply == NoValidReply.CARRY_ON
    assert settings.workflow_dirs == ""


def test_conductor_semantics_the_workflow_overrides_the_deployment() -> None:
    deployment = ConductorSettings.of(
        {"DLAB_CONDUCTOR_VALIDATION_MESSAGE": "wrapped", "DLAB_CONDUCTOR_NO_VALID_REPLY": "fail"}
    )
    neither = deployment.semantics(Semantics())
    assert neither.validation_message == ValidationMessage.WRAPPED
    assert neither.no_valid_reply == NoValidReply.FAIL
    own = deployment.semantics(
        Semantics(
            validation_message=ValidationMessage.VERBATIM, no_valid_reply=NoValidReply.CARRY_ON
        )
    )
    assert own.validation_message == ValidationMessage.VERBATIM
    assert own.no_valid_reply == NoValidReply.CARRY_ON
    mixed = deployment.semantics(Semantics(no_valid_reply=NoValidReply.CARRY_ON))
    assert mixed.validation_message == ValidationMessage.WRAPPED
    assert mixed.no_valid_reply == NoValidReply.CARRY_ON
