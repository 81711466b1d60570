"""The pure parts of a person in the loop and of the conversation export: the memory's recorded
changes, the human agent's settings (strict, bounded), the deadline every delivery computes
alike, and the JSON Lines records."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from functions.conductor.human import deadline_of
from shared.conductor import memory
from shared.conductor.documents import Remembered, Step, StepKind
from shared.conductor.human import HumanConfig, OnDeadline
from tools import conversation_export


def _kept(**values: object) -> dict[str, Remembered]:
    return {k: Remembered(value=v, agent="a", turn=1, step=1) for k, v in values.items()}


def test_memory_changes_name_each_field_that_changed_with_its_value_before():
    before = _kept(name="Riley", topic="proxy")
    after = _kept(name="Riley", topic="firewall", answer="Open 443.")
    changed = [(c.field, c.before, c.after) for c in memory.changes(before, after)]
    assert changed == [("topic", "proxy", "firewall"), ("answer", None, "Open 443.")]
    assert memory.changes(before, before) == []


def test_the_human_settings_are_strict_and_bounded():
    config = HumanConfig.model_validate({"deadlineSeconds": 60, "onDeadline": "finish"})
    assert (config.deadline_seconds, config.on_deadline) == (60, OnDeadline.FINISH)
    assert HumanConfig.model_validate({"deadline_seconds": 5}).deadline_seconds == 5
    for bad in ({"deadlineSecond": 60}, {"deadlineSeconds": 0}, {"onDeadline": "wait"}):
        with pytest.raises(ValidationError):
            HumanConfig.model_validate(bad)


def test_every_delivery_computes_the_same_deadline():
    created = datetime(2026, 1, 1, tzinfo=UTC)
    step = Step(index=5, kind=StepKind.HUMAN, agent="reviewer", created_at=created)
    config = HumanConfig(deadline_seconds=90)
    assert deadline_of(step, config) == deadline_of(step, config) == created + timedelta(seconds=90)


def test_a_record_keeps_the_document_apart_from_its_envelope():
    stamp = datetime(2026, 1, 1, 12, tzinfo=UTC)
    data = {"type": "model", "createdAt": stamp, "nested": [{"at": stamp}]}
    record = conversation_export._record("attempt", "c1", data, 3, "a1")
    line = json.loads(conversation_export.jsonl([record]))
    assert (line["type"], line["step"], line["id"]) == ("attempt", 3, "a1")
    assert line["data"] == {
        "type": "model",
        "createdAt": "2026-01-01T12:00:00+00:00",
        "nested": [{"at": "2026-01-01T12:00:00+00:00"}],
    }
