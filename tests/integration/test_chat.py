"""Group chat with agent participants and a mediator, on the real emulators and functions."""

from __future__ import annotations

from collections import Counter

import pytest
from experiment_state import doc, errors, model_logs, participant, settle
from raw_docs import agent, stage, write_experiment

from functions.chat.watchdog import IDLE_ENV
from shared.models import ParticipantStatus

THREADS = [
    {"id": "t1", "type": "DEFAULT", "description": "Which project first?"},
    {"id": "t2", "type": "DEFAULT", "description": "How to fund it?"},
]


@pytest.fixture(autouse=True)
def _idle_now(monkeypatch):
    """Every watchdog tick counts every chat agent as idle (ticks stand for time passing)."""
    monkeypatch.setenv(IDLE_ENV, "0")


def _all_done(db, e, ids):
    return lambda: all(
        participant(db, e, p).current_status == ParticipantStatus.SUCCESS for p in ids
    )


def _chat_experiment(db, discussions=(), mediator=True, **chat_fields):
    chat = {**stage("chat", "chat", discussions=list(discussions), **chat_fields)}
    chat["progress"] = {**chat["progress"], "waitForAllParticipants": True}
    e = write_experiment(db, [stage("intro", "info"), chat, stage("end", "info")])
    base = f"experiments/{e}"
    db.document(f"{base}/cohorts/cohort-a/publicStageData/chat").set(
        {
            "id": "chat",
            "kind": "chat",
            "currentDiscussionId": discussions[0]["id"] if discussions else None,
            "discussionTimestampMap": {},
        }
    )
    if mediator:
        db.document(f"{base}/agentMediators/host").set(
            {"id": "host", "name": "Host", "type": "mediator"}
        )
        db.document(f"{base}/agentMediators/host/prompts/chat").set(
            {
                "id": "chat",
                "type": "chat",
                "prompt": [
                    {"type": "TEXT", "text": "You facilitate the discussion."},
                    {"type": "STAGE_CONTEXT", "stageId": "chat"},
                ],
            }
        )
        db.document(f"{base}/mediators/med-1").set(
            {
                "privateId": "med-1",
                "publicId": "med-1",
                "name": "Host",
                "avatar": "🤖",
                "currentStatus": "active",
                "currentCohortId": "cohort-a",
                "agentConfig": {
                    "agentId": "host",
                    "modelSettings": {"apiType": "SCRIPTED", "modelName": "s"},
                },
            }
        )
    return e


def _messages(db, e):
    col = db.collection(f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/chats")
    return [s.to_dict() for s in col.order_by("timestamp").get()]


def _logs(db, e):
    col = db.collection(f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/triggerLogs")
    return {s.id: s.to_dict() for s in col.get()}


def _check_single_responders(db, e):
    messages = _messages(db, e)
    logs = _logs(db, e)
    replies = [
        log
        for log_id, log in logs.items()
        if not log_id.startswith("initial-") and "messageId" in log
    ]
    per_trigger = Counter(
        log_id.rsplit("-", 1)[0]
        for log_id in logs
        if not log_id.startswith("initial-") and "messageId" in logs[log_id]
    )
    assert all(n <= 2 for n in per_trigger.values())  # one participant, one mediator
    written = {m["id"] for m in messages}
    assert all(r["messageId"] in written for r in replies)
    ids = [m["id"] for m in messages]
    assert len(ids) == len(set(ids))
    return messages


def test_agents_only_chat_starts_runs_and_everyone_moves_on(runtime, db):
    e = _chat_experiment(db)
    ids = [agent(db, e, "intro", number=i) for i in range(3)]
    settle(runtime, _all_done(db, e, ids))
    messages = _check_single_responders(db, e)
    assert any(m["type"] == "participant" for m in messages)
    assert any(log.private_id == "med-1" for log in model_logs(db, e))  # the mediator took part
    left = [m for m in messages if m.get("leftChatBy")]
    assert sorted(m["leftChatBy"] for m in left) == [f"agent-{i}" for i in range(3)]
    for pid in ids:
        assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS
    assert errors(db, e) == []


def test_threads_advance_only_when_everyone_is_ready(runtime, db):
    e = _chat_experiment(db, discussions=THREADS)
    ids = [agent(db, e, "intro", number=i) for i in range(3)]
    settle(runtime, _all_done(db, e, ids))
    messages = _check_single_responders(db, e)
    public = doc(db, f"experiments/{e}/cohorts/cohort-a/publicStageData/chat")
    assert public["currentDiscussionId"] == "t2"
    assert set(public["discussionTimestampMap"]["t1"]) == {f"agent-{i}" for i in range(3)}
    switch = next(
        i for i, m in enumerate(messages) if m["type"] == "system" and m["discussionId"] == "t2"
    )
    # nobody spoke in thread 2 before the switch; the announcement restarted the conversation
    assert all(m["discussionId"] == "t1" for m in messages[:switch] if m["type"] != "system")
    assert any(m["discussionId"] == "t2" and m["type"] == "participant" for m in messages[switch:])
    for pid in ids:
        assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS
