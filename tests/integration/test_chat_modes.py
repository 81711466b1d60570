"""Private chats and turn-based group chats, on the real emulators and functions."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime

import pytest
from chat_docs import (
    add_mediator,
    all_done,
    chat_messages,
    check_single_responders,
    persona_prompt,
    trigger_logs,
)
from experiment_state import errors, participant, settle
from raw_docs import agent, human, stage, write_experiment

from functions.chat.turn import DECLINED
from functions.chat.watchdog import IDLE_ENV
from shared.llm.providers import MODEL_OVERRIDE_ENV
from shared.models import ParticipantStatus
from tests.fakes import Recorded, Step
from tests.fakes import fake_openai as openai

MEDIATOR_MARK = "You facilitate the discussion."  # chat_docs' mediator prompt
DECLINE_MARK = DECLINED.format(name="Host")


@pytest.fixture(autouse=True)
def _idle_now(monkeypatch):
    monkeypatch.setenv(IDLE_ENV, "0")


def private_experiment(db, mediator=True, **stage_fields):
    e = write_experiment(
        db,
        [
            stage("intro", "info"),
            stage("pchat", "privateChat", **stage_fields),
            stage("end", "info"),
        ],
    )
    if mediator:
        add_mediator(db, e, "pchat", "privateChat")
    return e


def test_private_chats_with_a_mediator_run_to_the_end(runtime, db):
    e = private_experiment(db, minNumberOfTurns=2)
    ids = [agent(db, e, "intro", number=i) for i in range(3)]
    settle(runtime, all_done(db, e, ids))
    for pid in ids:
        messages = check_single_responders(db, e, private_of=pid, stage_id="pchat")
        kinds = Counter(m["type"] for m in messages)
        assert kinds["mediator"] >= 1 and kinds["participant"] >= 2, kinds  # minNumberOfTurns
        public = participant(db, e, pid).public_id
        senders = {m["senderId"] for m in messages if m["type"] != "system"}
        assert senders <= {public, "med-1"}  # nobody else's conversation leaks in
        print(pid, [(m["type"], m["message"][:40]) for m in messages])
    assert chat_messages(db, e, stage_id="pchat") == []
    assert errors(db, e) == []


def _declining_mediator(request: Recorded) -> Step:
    """The mediator never answers; the agent participant asks, and says goodbye (ready to end)
    once it has seen the mediator decline."""
    prompt = json.dumps(request.body["messages"])
    if MEDIATOR_MARK in prompt:
        reply = {
            "explanation": "x",
            "shouldRespond": False,
            "response": "",
            "readyToEndChat": False,
        }
    else:
        seen = DECLINE_MARK in prompt
        text = "Thanks, goodbye." if seen else "Which option do you recommend?"
        reply = {
            "explanation": "x",
            "shouldRespond": True,
            "response": text,
            "readyToEndChat": seen,
        }
    return openai.text(json.dumps(reply))


@pytest.fixture
def fake_openai(db, monkeypatch):
    monkeypatch.delenv(MODEL_OVERRIDE_ENV)
    with openai.FakeOpenAI(api_key="sk-test") as fake:
        db.document("experimenterData/x@y.z").set(
            {"apiKeys": {"openAIApiKey": {"apiKey": "sk-test", "baseUrl": fake.base_url}}}
        )
        yield fake


def test_a_declining_mediator_writes_nothing_and_the_agent_does_not_hang(runtime, db, fake_openai):
    """DL #938 / #1011: shouldRespond false from a mediator in a private chat."""
    fake_openai.responder = _declining_mediator
    e = private_experiment(db, mediator=False)
    add_mediator(
        db,
        e,
        "pchat",
        "privateChat",
        api_type="OPENAI",
        structured=True,
        initialMessage="Hello! How can I help?",
    )
    config = persona_prompt(
        db, e, 100, stage_id="pchat", kind="privateChat", api_type="OPENAI", structured=True
    )
    pid = agent(db, e, "intro", agentConfig=config)
    runtime.wait_until_idle(timeout=60)  # no watchdog tick: nothing may depend on one
    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS
    messages = check_single_responders(db, e, private_of=pid, stage_id="pchat")
    said = [(m["type"], m["message"]) for m in messages]
    assert said[0] == ("mediator", "Hello! How can I help?")
    assert ("participant", "Which option do you recommend?") in said
    assert ("participant", "Thanks, goodbye.") in said
    assert [m for m in messages if m["type"] == "mediator"] == [messages[0]]  # only the opening
    notices = [m for m in messages if m.get("declinedBy")]
    assert notices and all(m["declinedBy"] == "med-1" for m in notices)
    answer = db.document(f"experiments/{e}/participants/{pid}/stageData/pchat").get().to_dict()
    assert answer["readyToEndChat"] is True
    assert errors(db, e) == []


def test_a_human_in_a_private_chat_gets_the_mediator(runtime, db):
    e = private_experiment(db, mediator=False)
    add_mediator(db, e, "pchat", "privateChat", initialMessage="Hi, I am your guide.")
    pid = human(db, e, "pchat")
    runtime.wait_until_idle(timeout=60)
    (opening,) = chat_messages(db, e, private_of=pid, stage_id="pchat")
    assert opening["message"] == "Hi, I am your guide." and opening["senderId"] == "med-1"
    base = f"experiments/{e}/participants/{pid}/stageData/pchat"
    db.document(f"{base}/privateChats/h1").set(
        {
            "id": "h1",
            "type": "participant",
            "message": "What is this study about?",
            "senderId": pid,
            "timestamp": datetime.now(UTC),
            "profile": {"name": "Hu"},
        }
    )
    runtime.wait_until_idle(timeout=60)
    messages = check_single_responders(db, e, private_of=pid, stage_id="pchat")
    assert [m["type"] for m in messages] == ["mediator", "participant", "mediator"]
    assert "h1-mediator" in trigger_logs(db, e, private_of=pid, stage_id="pchat")
    # the human ends the chat the way DL's client does: readyToEndChat in its answer
    db.document(base).set({"id": "pchat", "kind": "privateChat", "readyToEndChat": True})
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, pid).current_stage_id == "end"
