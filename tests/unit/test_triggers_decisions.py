"""The triggers' pure decisions: which writes are the user's and which the backend's own, which
stages a cohort write newly unlocked, a chat message read from its event, a field path quoted;
the HTTP entry point's handler called within the function's deadline and name."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from functions import _http_entry, deadline, errors
from functions._events import FirestoreEvent
from functions.registry import FunctionSpec, HttpTrigger
from functions.triggers import chat, debate, participant, stage_data, wake
from shared.models import DocumentError


def _event(
    before: dict[str, Any] | None, after: dict[str, Any] | None, **params: str
) -> FirestoreEvent:
    return FirestoreEvent("1", "written", "debates/d1", params, before, after)


@pytest.mark.parametrize(
    ("before", "after", "changed"),
    [
        ({"name": "a"}, {"name": "a", "status": "running"}, False),  # the backend's own
        ({"status": "running"}, {"status": "done", "decision": {"x": 1}}, False),
        ({"name": "a", "numRounds": 2}, {"name": "a", "numRounds": 3}, True),
        ({"failure": {"r": 1}, "paused": True}, {"paused": False}, True),  # a touch
        (None, {"name": "a"}, True),
        ({"name": "a"}, {"name": "a"}, False),
    ],
)
def test_debate_user_changed(
    before: dict[str, Any] | None, after: dict[str, Any] | None, changed: bool
) -> None:
    assert debate._user_changed(_event(before, after)) is changed


@pytest.mark.parametrize(
    ("before", "after", "only"),
    [
        ({"x": 1}, {"x": 1, "agentBlockedOn": {"document": "d"}}, True),
        ({"x": 1, "agentBlockedOn": {"document": "d"}}, {"x": 1}, True),
        ({"x": 1}, {"x": 2, "agentBlockedOn": {"document": "d"}}, False),
        ({"x": 1}, {"x": 2}, False),
        ({"x": 1}, {"x": 1}, False),  # nothing changed: not a mark either
    ],
)
def test_participant_update_only_marked_blocked(
    before: dict[str, Any], after: dict[str, Any], only: bool
) -> None:
    assert participant._only_marked_blocked(_event(before, after)) is only


@pytest.mark.parametrize(
    ("before", "after", "unlocked"),
    [
        (None, {"stageUnlockMap": {"s2": True, "s1": True, "s3": False}}, ["s1", "s2"]),
        ({"stageUnlockMap": {"s1": True}}, {"stageUnlockMap": {"s1": True, "s2": True}}, ["s2"]),
        ({"stageUnlockMap": {"s1": True}}, {"stageUnlockMap": {"s1": True}}, []),
        ({"stageUnlockMap": {"s1": True}}, None, []),
        ({}, {"stageUnlockMap": None}, []),
    ],
)
def test_newly_unlocked(
    before: dict[str, Any] | None, after: dict[str, Any] | None, unlocked: list[str]
) -> None:
    assert wake.newly_unlocked(before, after) == unlocked


def test_stage_data_field_paths_are_quoted() -> None:
    assert stage_data._field("answers", "q1") == "answers.q1"
    assert stage_data._field("answers", "q-1") == "answers.`q-1`"


def test_chat_message_of_an_event_takes_its_id_from_the_path() -> None:
    event = FirestoreEvent(
        "1",
        "created",
        "experiments/e/cohorts/c/publicStageData/s/chats/m1",
        {"chatId": "m1"},
        None,
        {"message": "hi", "type": "participant"},
    )
    message = chat._message(event)
    assert (message.id, message.message) == ("m1", "hi")
    bad = FirestoreEvent("1", "created", event.document, {"chatId": "m1"}, None, {"type": 3})
    with pytest.raises(DocumentError) as raised:
        chat._message(bad)
    assert raised.value.document == event.document


def test_http_entry_calls_the_handler_within_the_deadline_and_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}

    def handler(request: Any) -> str:
        seen["request"] = request
        seen["function"] = errors.current_function()
        seen["remaining"] = deadline.remaining()
        return "answered"

    module = types.ModuleType("t39u_http_handlers")
    module.handler = handler  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    spec = FunctionSpec(
        name="t39uApi",
        trigger=HttpTrigger(),
        handler=f"{module.__name__}:handler",
        description="a test's",
        timeout_s=60,
    )
    entry = _http_entry.http_function(spec)
    assert entry.__name__ == "t39uApi" and entry.__doc__ == "a test's"
    request: Any = "the request"
    assert entry(request) == "answered"
    assert seen["request"] == "the request" and seen["function"] == "t39uApi"
    assert 45 < seen["remaining"] <= 50  # the timeout less the safety margin
    assert errors.current_function() == "backend" and deadline.remaining() is None
