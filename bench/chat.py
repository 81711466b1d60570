"""A group chat written as raw documents, and read back, for the chat measurements.

One chat stage, agent participants already at it, no mediator. The agents' persona caps nothing
that matters here (``maxResponses`` is large), types instantly (no ``wordsPerMinute``), and
answers with a schema that has no ``readyToEndChat``, so nobody leaves: the benchmark decides
how long a conversation lasts. ``minMessagesBeforeResponding: 1`` keeps the agents from opening an
empty chat, so the conversation starts with the benchmark's own (human) message.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from collections.abc import Iterable
from typing import Any

from google.cloud import firestore

from bench.stack import epoch

COHORT = "cohort-a"
STAGE = "chat"
PERSONA = "talker"
HUMAN = "human-1"
CREATOR = "bench@example.com"

NEVER_READY = {
    "enabled": True,
    "type": "JSON_SCHEMA",
    "appendToPrompt": True,
    "schema": {
        "type": "OBJECT",
        "properties": [
            {"name": "explanation", "schema": {"type": "STRING"}},
            {"name": "shouldRespond", "schema": {"type": "BOOLEAN"}},
            {"name": "response", "schema": {"type": "STRING"}},
        ],
    },
}
"""Deliberate Lab's chat output config without readyToEndChat: agents never leave on their own."""

_OPEN = {"minParticipants": 0, "waitForAllParticipants": False, "showParticipantProgress": True}
_NO_TEXT = {"primaryText": "", "infoText": "", "helpText": ""}


@dataclasses.dataclass(frozen=True)
class ChatRoom:
    experiment_id: str
    agent_ids: list[str]
    public_ids: dict[str, str]
    """private id -> public id."""

    @property
    def base(self) -> str:
        return f"experiments/{self.experiment_id}"

    @property
    def public_path(self) -> str:
        return f"{self.base}/cohorts/{COHORT}/publicStageData/{STAGE}"

    @property
    def chats_path(self) -> str:
        return f"{self.public_path}/chats"


def create(
    db: firestore.Client,
    agents: int,
    *,
    policy: str = "race",
    api_type: str = "SCRIPTED",
    rng: random.Random,
) -> ChatRoom:
    """Experiment, chat stage, cohort, persona and its prompt, a human and ``agents`` agents."""
    e = f"bench-chat-{rng.getrandbits(32):08x}"
    base = f"experiments/{e}"
    batch = db.batch()
    batch.set(
        db.document(base),
        {
            "id": e,
            "versionId": 19,
            "stageIds": [STAGE],
            "metadata": {"name": e, "creator": CREATOR},
        },
    )
    batch.set(
        db.document(f"{base}/stages/{STAGE}"),
        {
            "id": STAGE,
            "kind": "chat",
            "name": "Group chat",
            "descriptions": _NO_TEXT,
            "progress": _OPEN,
            "discussions": [],
            "electionPolicy": policy,
        },
    )
    batch.set(
        db.document(f"{base}/cohorts/{COHORT}"), {"id": COHORT, "stageUnlockMap": {STAGE: True}}
    )
    batch.set(
        db.document(f"{base}/cohorts/{COHORT}/publicStageData/{STAGE}"),
        {"id": STAGE, "kind": "chat", "currentDiscussionId": None, "discussionTimestampMap": {}},
    )
    batch.set(db.document(f"{base}/agentParticipants/{PERSONA}"), {"id": PERSONA, "name": PERSONA})
    batch.set(
        db.document(f"{base}/agentParticipants/{PERSONA}/prompts/{STAGE}"),
        {
            "id": STAGE,
            "type": "chat",
            "prompt": [  # as DL's default chat prompt: who the agent is, the chat so far
                {"type": "TEXT", "text": "You are taking part in a group discussion."},
                {"type": "PROFILE_INFO"},
                {"type": "PROFILE_CONTEXT"},
                {"type": "STAGE_CONTEXT", "stageId": STAGE},
                {"type": "CHAT_PARTICIPANT_INSTRUCTIONS"},
            ],
            "chatSettings": {
                "maxResponses": 10_000,
                "minMessagesBeforeResponding": 1,
                "canSelfTriggerCalls": False,
                "initialMessage": "",
                "wordsPerMinute": None,
            },
            "structuredOutputConfig": NEVER_READY,
        },
    )
    batch.set(db.document(f"{base}/participants/{HUMAN}"), _participant(HUMAN, "human-1", None))
    batch.commit()
    ids: list[str] = []
    publics: dict[str, str] = {}
    batch, pending = db.batch(), 0
    for i in range(agents):
        private_id = f"agent-{i:03d}-{rng.getrandbits(24):06x}"
        public_id = f"agent-{i:03d}"
        config = {
            "agentId": PERSONA,
            "promptContext": "A resident who likes to talk things through.",
            "modelSettings": {"apiType": api_type, "modelName": "bench-model"},
        }
        batch.set(
            db.document(f"{base}/participants/{private_id}"),
            _participant(private_id, public_id, config),
        )
        ids.append(private_id)
        publics[private_id] = public_id
        pending += 1
        if pending == 400:
            batch.commit()
            batch, pending = db.batch(), 0
    if pending:
        batch.commit()
    return ChatRoom(e, ids, publics)


def _participant(
    private_id: str, public_id: str, agent_config: dict[str, Any] | None
) -> dict[str, Any]:
    stamp = dt.datetime.now(dt.UTC)
    return {
        "privateId": private_id,
        "publicId": public_id,
        "name": public_id,
        "avatar": "🙂",
        "currentStageId": STAGE,
        "currentCohortId": COHORT,
        "currentStatus": "IN_PROGRESS",
        "agentConfig": agent_config,
        "timestamps": {
            "startExperiment": stamp,
            "acceptedTOS": stamp,
            "completedStages": {},
            "readyStages": {STAGE: stamp},
            "cohortTransfers": {},
        },
    }


def say_as_human(db: firestore.Client, room: ChatRoom, message_id: str, text: str) -> None:
    """What the participant's browser writes when the human sends a message."""
    db.document(f"{room.chats_path}/{message_id}").set(
        {
            "id": message_id,
            "type": "participant",
            "message": text,
            "senderId": HUMAN,
            "timestamp": dt.datetime.now(dt.UTC),
            "profile": {"name": "human-1", "avatar": "🧑"},
        }
    )


def end_discussion(db: firestore.Client, room: ChatRoom) -> None:
    """As the watchdog does when the time limit passes: no turn speaks after this."""
    db.document(room.public_path).update({"discussionEndTimestamp": dt.datetime.now(dt.UTC)})


@dataclasses.dataclass(frozen=True)
class Message:
    id: str
    type: str
    sender: str
    text: str
    committed: float
    """Epoch seconds the emulator committed it (its create time)."""


def messages(db: firestore.Client, room: ChatRoom) -> list[Message]:
    """The chat in commit order."""
    out = []
    for snap in db.collection(room.chats_path).get():
        d = snap.to_dict() or {}
        out.append(
            Message(
                d.get("id", snap.id),
                d.get("type", ""),
                d.get("senderId", ""),
                d.get("message", ""),
                epoch(snap.create_time) or 0.0,
            )
        )
    return sorted(out, key=lambda m: m.committed)


def message_count(db: firestore.Client, room: ChatRoom) -> int:
    result = db.collection(room.chats_path).count().get()
    return int(result[0][0].value)


def trigger_logs(db: firestore.Client, room: ChatRoom) -> dict[str, dict[str, Any]]:
    return {s.id: s.to_dict() or {} for s in db.collection(f"{room.public_path}/triggerLogs").get()}


@dataclasses.dataclass(frozen=True)
class ModelCall:
    description: str
    participant_id: str
    status: str
    latency_ms: float
    parsed: Any


def model_calls(db: firestore.Client, experiment_id: str) -> list[ModelCall]:
    """Every model call attempt of the experiment (its log entries, without the prompts)."""
    fields = [
        "description",
        "participantId",
        "latencyMs",
        "response.status",
        "response.parsedResponse",
    ]
    out = []
    for snap in db.collection(f"experiments/{experiment_id}/logs").select(fields).get():
        d = snap.to_dict() or {}
        response = d.get("response") or {}
        out.append(
            ModelCall(
                d.get("description", ""),
                d.get("participantId", ""),
                response.get("status", ""),
                float(d.get("latencyMs") or 0.0),
                response.get("parsedResponse"),
            )
        )
    return out


def reply_calls(calls: Iterable[ModelCall]) -> dict[str, list[ModelCall]]:
    """'chat reply to {messageId}' attempts, by the message answered."""
    out: dict[str, list[ModelCall]] = {}
    for call in calls:
        if call.description.startswith("chat reply to "):
            out.setdefault(call.description.removeprefix("chat reply to "), []).append(call)
    return out
