"""Chat stages written as raw documents (a mediator persona, its prompt, agent personas with
chat settings), and the chat read back, for the chat tests."""

from __future__ import annotations

from collections import Counter

from experiment_state import participant, settle
from raw_docs import agent, stage, write_experiment

from emulator.chaos import ChaosSettings
from shared.models import ParticipantStatus


def all_done(db, e, ids):
    return lambda: all(
        participant(db, e, p).current_status == ParticipantStatus.SUCCESS for p in ids
    )


def chat_experiment(db, discussions=(), mediator=True, experiment_id="", **chat_fields):
    chat = {**stage("chat", "chat", discussions=list(discussions), **chat_fields)}
    chat["progress"] = {**chat["progress"], "waitForAllParticipants": True}
    stages = [stage("intro", "info"), chat, stage("end", "info")]
    e = write_experiment(db, stages, experiment_id=experiment_id)
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
        add_mediator(db, e)
    return e


def add_mediator(
    db, e, stage_id="chat", kind="chat", api_type="SCRIPTED", structured=False, **chat_settings
):
    """The persona "host" with a prompt for ``stage_id``, and its mediator in cohort-a."""
    base = f"experiments/{e}"
    db.document(f"{base}/agentMediators/host").set(
        {"id": "host", "name": "Host", "type": "mediator"}
    )
    prompt = {
        "id": stage_id,
        "type": kind,
        "prompt": [
            {"type": "TEXT", "text": "You facilitate the discussion."},
            {"type": "STAGE_CONTEXT", "stageId": stage_id},
        ],
    }
    if chat_settings:
        prompt["chatSettings"] = {"maxResponses": 100, **chat_settings}
    if structured:
        prompt["structuredOutputConfig"] = CHAT_OUTPUT
    db.document(f"{base}/agentMediators/host/prompts/{stage_id}").set(prompt)
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
                "modelSettings": {"apiType": api_type, "modelName": "s"},
            },
        }
    )


NOT_ELECTIONS = (
    "initial-",
    "ready-",
    "quota-",
    "left-",
    "turn-",
    "answered-",
)  # locks, asks, slots


def chat_base(e, private_of="", stage_id="chat", cohort="cohort-a"):
    if private_of:
        return f"experiments/{e}/participants/{private_of}/stageData/{stage_id}"
    return f"experiments/{e}/cohorts/{cohort}/publicStageData/{stage_id}"


def chat_messages(db, e, private_of="", stage_id="chat", cohort="cohort-a"):
    """The group chat, or ``private_of``'s private chat, in time order."""
    chats = "privateChats" if private_of else "chats"
    col = db.collection(f"{chat_base(e, private_of, stage_id, cohort)}/{chats}")
    return [s.to_dict() for s in col.order_by("timestamp").get()]


def trigger_logs(db, e, private_of="", stage_id="chat", cohort="cohort-a"):
    col = db.collection(f"{chat_base(e, private_of, stage_id, cohort)}/triggerLogs")
    return {s.id: s.to_dict() for s in col.get()}


def check_single_responders(db, e, private_of="", stage_id="chat", cohort="cohort-a"):
    """At most one participant and one mediator reply per message; every elected reply was
    written; no message twice."""
    messages = chat_messages(db, e, private_of, stage_id, cohort)
    logs = trigger_logs(db, e, private_of, stage_id, cohort)
    replies = [
        log
        for log_id, log in logs.items()
        if not log_id.startswith(NOT_ELECTIONS) and "messageId" in log
    ]
    per_trigger = Counter(
        log_id.rsplit("-", 1)[0]
        for log_id in logs
        if not log_id.startswith(NOT_ELECTIONS) and "messageId" in logs[log_id]
    )
    assert all(n <= 2 for n in per_trigger.values())  # one participant, one mediator
    written = {m["id"] for m in messages}
    assert all(r["messageId"] in written for r in replies)
    ids = [m["id"] for m in messages]
    assert len(ids) == len(set(ids))
    return messages


def check_no_message_twice(db, e, stage_id="chat", cohort="cohort-a"):
    """No message twice, in a chat of agents only: each message has one response slot, and all
    but the agent's opening were elected as the one reply of its type to the message they
    answer. (Comparing texts would not do: the scripted model repeats itself now and then.)"""
    messages = check_single_responders(db, e, stage_id=stage_id, cohort=cohort)
    logs = trigger_logs(db, e, stage_id=stage_id, cohort=cohort)
    slots = Counter(log["messageId"] for i, log in logs.items() if i.startswith("quota-"))
    elected = Counter(
        log["messageId"]
        for i, log in logs.items()
        if "messageId" in log and not i.startswith("quota-")
    )
    slot_of = {log["messageId"]: log for i, log in logs.items() if i.startswith("quota-")}
    unelected = Counter()
    for m in messages:
        if m["type"] == "system":
            continue
        assert slots[m["id"]] == 1, m
        assert elected[m["id"]] <= 1, m
        if not elected[m["id"]]:  # an opening message: its lock was taken, once per agent
            responder = slot_of[m["id"]]
            assert f"initial-{responder['agentType']}-{responder['privateId']}" in logs, m
            unelected[m["senderId"]] += 1
    assert all(n == 1 for n in unelected.values()), unelected
    return messages


def _chat_output(*fields):
    """A chat structured output config with these BOOLEAN/STRING fields (DL's shape)."""
    kinds = {"shouldRespond": "BOOLEAN", "readyToEndChat": "BOOLEAN"}
    return {
        "enabled": True,
        "type": "JSON_SCHEMA",
        "appendToPrompt": True,
        "schema": {
            "type": "OBJECT",
            "properties": [{"name": f, "schema": {"type": kinds.get(f, "STRING")}} for f in fields],
        },
    }


CHAT_OUTPUT = _chat_output("explanation", "shouldRespond", "response", "readyToEndChat")
NEVER_READY = _chat_output("explanation", "shouldRespond", "response")
ALWAYS_SPEAKS = _chat_output("explanation", "response", "readyToEndChat")


def persona_prompt(
    db,
    e,
    max_responses,
    persona="talker",
    ready_field=True,
    min_messages=0,
    stage_id="chat",
    kind="chat",
    api_type="SCRIPTED",
    structured=False,
):
    """Agent participants with a persona whose chat prompt caps their messages (and, without
    ``ready_field``, whose replies never say they are ready to end)."""
    base = f"experiments/{e}/agentParticipants/{persona}"
    db.document(base).set({"id": persona, "name": persona})
    prompt = {
        "id": stage_id,
        "type": kind,
        "prompt": [
            {"type": "TEXT", "text": "Discuss."},
            {"type": "STAGE_CONTEXT", "stageId": stage_id},
        ],
        "chatSettings": {
            "maxResponses": max_responses,
            "minMessagesBeforeResponding": min_messages,
            "canSelfTriggerCalls": False,
            "initialMessage": "",
        },
    }
    if not ready_field or structured:
        prompt["structuredOutputConfig"] = CHAT_OUTPUT if ready_field else NEVER_READY
    db.document(f"{base}/prompts/{stage_id}").set(prompt)
    return {"agentId": persona, "modelSettings": {"apiType": api_type, "modelName": "s"}}


def run_duplicated(runtime, db, agents, seed, **chat_fields):
    """A chat with a mediator and ``agents`` agents (maxResponses 3) run to the end with every
    Firestore and Pub/Sub event delivered twice; returns the experiment id."""
    twice = ChaosSettings(seed=seed, duplicate_rate=1.0, max_delay_s=0.05, fault_rate=0.0)
    with runtime.chaos(twice):
        e = chat_experiment(db, **chat_fields)
        config = persona_prompt(db, e, max_responses=3)
        ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(agents)]
        settle(runtime, all_done(db, e, ids))
    return e
