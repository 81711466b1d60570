"""Settings that would crash or stall an agent are refused when the document is read, with an
error naming the document and the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.models import DocumentError, ErrorRecord, ModelLogEntry, PromptConfig
from shared.models._base import parse_document
from shared.models.stages import parse_stage

PATH = "experiments/e/stages/s"


def _stage_error(**fields: Any) -> DocumentError:
    data = {"id": "s", "kind": "survey", **fields}
    with pytest.raises(DocumentError) as caught:
        parse_stage(PATH, data)
    assert caught.value.document == PATH
    return caught.value


def _scale(**fields: Any) -> dict[str, Any]:
    return {"id": "q", "kind": "scale", "lowerValue": 1, "upperValue": 5, **fields}


def test_an_inverted_scale_names_the_question_and_field() -> None:
    error = _stage_error(questions=[_scale(), _scale(lowerValue=7, upperValue=3)])
    assert error.field == "questions[1].upperValue"
    assert "below lowerValue 7" in error.reason


def test_a_one_point_scale_is_allowed() -> None:
    parse_stage(PATH, {"id": "s", "kind": "survey", "questions": [_scale(upperValue=1)]})


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"progress": {"minParticipants": -2}}, "progress.minParticipants"),
        ({"questions": [_scale(stepSize=0)]}, "questions[0].stepSize"),
        (
            {"questions": [{"id": "t", "kind": "text", "minCharCount": -1}]},
            "questions[0].minCharCount",
        ),
        (
            {"questions": [{"id": "t", "kind": "text", "minCharCount": 9, "maxCharCount": 3}]},
            "questions[0].maxCharCount",
        ),
    ],
)
def test_negative_or_inconsistent_counts_in_a_stage(fields: dict[str, Any], field: str) -> None:
    assert _stage_error(**fields).field == field


@pytest.mark.parametrize(
    ("fields", "kind", "field"),
    [
        ({"maxNumberOfTurns": 0}, "privateChat", "maxNumberOfTurns"),
        ({"minNumberOfTurns": -1}, "privateChat", "minNumberOfTurns"),
        ({"timeLimitInMinutes": -5}, "chat", "timeLimitInMinutes"),
    ],
)
def test_negative_counts_in_a_chat_stage(fields: dict[str, Any], kind: str, field: str) -> None:
    with pytest.raises(DocumentError) as caught:
        parse_stage(PATH, {"id": "s", "kind": kind, **fields})
    assert caught.value.field == field


PROMPT = "experiments/e/agentMediators/m/prompts/chat"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"chatSettings": "nope"}, "chatSettings"),
        ({"chatSettings": {"wordsPerMinute": -3}}, "chatSettings.wordsPerMinute"),
        ({"chatSettings": {"maxResponses": -1}}, "chatSettings.maxResponses"),
        (
            {"chatSettings": {"minMessagesBeforeResponding": -1}},
            "chatSettings.minMessagesBeforeResponding",
        ),
        ({"numRetries": -1}, "numRetries"),
        ({"numRetries": 1000}, "numRetries"),
    ],
)
def test_bad_mediator_prompt_settings(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(DocumentError) as caught:
        parse_document(PromptConfig, PROMPT, {"id": "chat", "type": "chat", **fields})
    assert (caught.value.document, caught.value.field) == (PROMPT, field)


def test_no_typing_delay_is_still_allowed() -> None:
    config = parse_document(
        PromptConfig, PROMPT, {"id": "chat", "type": "chat", "chatSettings": {"wordsPerMinute": 0}}
    )
    assert config.chat_settings is not None and config.chat_settings.words_per_minute == 0


def test_a_model_log_too_large_for_firestore_is_cut_with_a_marker() -> None:
    entry = ModelLogEntry(
        id="l",
        experiment_id="e",
        prompt="é" * 1_000_000,
        response={"text": "a" * 1_000_000, "parsedResponse": {"a": "b" * 1_000_000}},
    )
    stored = entry.to_firestore()
    assert len(json.dumps(stored, ensure_ascii=False).encode()) < 1_000_000
    assert stored["prompt"].endswith("more bytes]") and "…[truncated: " in stored["prompt"]
    assert isinstance(stored["response"]["parsedResponse"], str)  # kept as cut JSON text
    small = ModelLogEntry(id="l", experiment_id="e", prompt="short", response={"text": "ok"})
    assert small.prompt == "short" and small.response.text == "ok"


def test_an_error_record_reason_is_cut_too() -> None:
    record = ErrorRecord(id="r", function="f", document="d", field="name", reason="N" * 10**6)
    assert len(record.reason.encode()) < 21_000 and "truncated" in record.reason
