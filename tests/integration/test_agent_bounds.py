"""The Deliberate Lab agents' spend bounds (issue 27), on the emulators with a fake OpenAI server:
a move that keeps failing ends with the agent blocked and a record, and fixing its stage wakes
it; a chat turn that keeps failing is acknowledged with a record naming the agent; idle agents
are nudged a bounded number of times per message."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from chat_docs import add_mediator, chat_experiment, persona_prompt
from experiment_state import errors, participant
from raw_docs import agent, human, stage, write_experiment

from shared.models import ParticipantStatus
from tests.fakes import fake_openai as openai

pytestmark = pytest.mark.usefixtures("clean")

MODEL_ATTEMPTS = 2
"""Provider attempts per model call (``DLAB_MODEL_MAX_ATTEMPTS``), kept small to be quick."""
WORK_ATTEMPTS = 3
"""``DLAB_WORK_MAX_ATTEMPTS``' default: attempts of one move."""
DELIVERIES = 5
"""``DLAB_DELIVERY_MAX_FAILURES``' default: failed deliveries of one event before it is acked."""


@pytest.fixture
def fake(db, monkeypatch):
    """A fake OpenAI server that answers 503 until told otherwise, with quick provider retries."""
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE")
    monkeypatch.setenv("DLAB_MODEL_MAX_ATTEMPTS", str(MODEL_ATTEMPTS))
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_S", "0.05")
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_MAX_S", "0.1")
    with openai.FakeOpenAI(api_key="sk-test", default=openai.error(503, "overloaded")) as server:
        db.document("experimenterData/x@y.z").set(
            {"apiKeys": {"openAIApiKey": {"apiKey": "sk-test", "baseUrl": server.base_url}}}
        )
        yield server


def _survey() -> dict:
    return stage("survey", "survey", questions=[{"id": "q", "kind": "check", "questionTitle": "?"}])


def test_a_move_that_keeps_failing_ends_blocked_and_fixing_its_stage_wakes_it(runtime, db, fake):
    e = write_experiment(db, [stage("intro", "info"), _survey(), stage("end", "info")])
    pid = agent(db, e, "intro", api_type="OPENAI")
    runtime.wait_until_idle(timeout=120)
    stuck = participant(db, e, pid)
    assert stuck.current_stage_id == "survey"
    assert len(fake.requests) == WORK_ATTEMPTS * MODEL_ATTEMPTS  # then no more model calls
    blocked = stuck.agent_blocked_on or {}
    assert blocked.get("document") == f"experiments/{e}/stages/survey"
    (record,) = [r for r in errors(db, e) if r.id == blocked.get("errorId")]
    assert record.document == f"experiments/{e}/participants/{pid}"
    assert "503" in record.reason and record.ended_after_attempts == 3
    assert "gave up after 3 attempt(s)" in blocked["reason"]
    runtime.tick()  # the watchdog does not re-drive an ended move either
    runtime.wait_until_idle(timeout=60)
    assert len(fake.requests) == WORK_ATTEMPTS * MODEL_ATTEMPTS

    fake.default = openai.text(json.dumps({"q": True}))  # the provider is back: fix the stage
    db.document(f"experiments/{e}/stages/survey").update({"name": "Survey (fixed)"})
    runtime.wait_until_idle(timeout=120)
    done = participant(db, e, pid)
    assert done.current_status == ParticipantStatus.SUCCESS
    assert done.agent_blocked_on is None


def test_touching_a_blocked_agent_rearms_its_move(runtime, db, fake):
    e = write_experiment(db, [_survey(), stage("end", "info")])
    pid = agent(db, e, "survey", api_type="OPENAI")
    runtime.wait_until_idle(timeout=120)
    assert participant(db, e, pid).agent_blocked_on is not None
    fake.default = openai.text(json.dumps({"q": True}))
    db.document(f"experiments/{e}/participants/{pid}").update({"name": "Touched"})
    runtime.wait_until_idle(timeout=120)
    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS
    assert len(fake.requests) == WORK_ATTEMPTS * MODEL_ATTEMPTS + 1


def _human_message(db, e: str, mid: str, text: str) -> None:
    db.document(f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/chats/{mid}").set(
        {
            "id": mid,
            "type": "participant",
            "message": text,
            "senderId": "human-1",
            "timestamp": datetime.now(UTC),
            "profile": {"name": "Hu"},
        }
    )


def test_a_chat_turn_that_keeps_failing_is_acknowledged_with_a_record_naming_the_agent(
    runtime, db, fake
):
    e = chat_experiment(db, mediator=False)
    add_mediator(db, e, api_type="OPENAI")
    human(db, e, "chat")
    runtime.wait_until_idle(timeout=60)
    _human_message(db, e, "h1", "What shall we fund?")
    runtime.wait_until_idle(timeout=180)
    mediator = f"experiments/{e}/mediators/med-1"
    gave_up = [r for r in errors(db, e) if r.field == "(delivery)"]  # its opening, its reply
    assert [r.document for r in gave_up] == [mediator] * 2
    assert all("after 5 failed deliveries" in r.reason for r in gave_up)
    assert len(fake.requests) == len(gave_up) * DELIVERIES * MODEL_ATTEMPTS
    asked = len(fake.requests)
    runtime.wait_until_idle(timeout=30)
    assert len(fake.requests) == asked


NOT_READY = {"explanation": "", "shouldRespond": False, "response": "", "readyToEndChat": False}


def _nudges(fake: openai.FakeOpenAI) -> int:
    """Readiness-only questions the provider received."""
    return sum("ready to end" in json.dumps(r.body).lower() for r in fake.requests)


def test_idle_nudges_stop_at_the_bound_and_a_new_message_reopens_it(runtime, db, fake, monkeypatch):
    """Two agents in a chat nobody writes in (they decline to speak and say they are not ready):
    the watchdog asks each DLAB_IDLE_NUDGES times per message, then counts it as ready, with no
    model call, so the chat ends instead of waiting for ever."""
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")  # each tick stands for the idle time passing
    monkeypatch.setenv("DLAB_IDLE_NUDGES", "3")
    fake.default = openai.text(json.dumps(NOT_READY))
    e = chat_experiment(db, mediator=False)
    config = persona_prompt(db, e, max_responses=5, structured=True, api_type="OPENAI")
    ids = [agent(db, e, "chat", number=i, agentConfig=config, api_type="OPENAI") for i in range(2)]
    runtime.wait_until_idle(timeout=60)

    def nudged_in(ticks: int) -> int:
        before = _nudges(fake)
        for _ in range(ticks):
            runtime.tick()
            runtime.wait_until_idle(timeout=60)
        return _nudges(fake) - before

    _human_message(db, e, "h1", "Which project first?")
    runtime.wait_until_idle(timeout=60)
    assert nudged_in(3) == 3 * len(ids)
    assert all(participant(db, e, p).current_stage_id == "chat" for p in ids)
    _human_message(db, e, "h2", "Anyone?")  # a new message: a new allowance
    runtime.wait_until_idle(timeout=60)
    assert nudged_in(3) == 3 * len(ids)
    assert all(participant(db, e, p).current_stage_id == "chat" for p in ids)
    assert nudged_in(3) == 0  # spent: counted as ready instead
    assert all(participant(db, e, p).current_status == ParticipantStatus.SUCCESS for p in ids)
