"""The watchdog (scheduled): no function sleeps to keep time, so chat time limits and idle agents
are handled here, on each tick."""

from __future__ import annotations

import os
import uuid
from datetime import timedelta
from typing import Any

from google.cloud import firestore

from functions import store, transactions
from functions.chat import agents, messages, readiness
from functions.chat.room import Room
from functions.chat.turn_request import Turn, publish
from shared import paths
from shared.models import (
    ChatStage,
    ConversationStage,
    DocumentError,
    ParticipantProfile,
    PrivateChatStage,
    now,
)

IDLE_ENV = "DLAB_IDLE_AGENT_SECONDS"
DEFAULT_IDLE_S = 120.0
TIMER_ENDED = "The timer for this stage has ended; you can no longer respond."


def idle_after() -> timedelta:
    return timedelta(seconds=float(os.environ.get(IDLE_ENV, DEFAULT_IDLE_S)))


def tick() -> dict[str, int]:
    """One pass; returns counts (ended chats, woken agents) for logs and tests."""
    return {"ended": _end_timed_out_chats(), "woken": _wake_idle_agents()}


def _stage(cache: dict, experiment_id: str, stage_id: str) -> ConversationStage | None:
    key = (experiment_id, stage_id)
    if key not in cache:
        try:
            stage = store.read_stage(experiment_id, stage_id)
        except DocumentError:
            stage = None
        cache[key] = stage if isinstance(stage, ConversationStage) else None
    return cache[key]


def _end_timed_out_chats() -> int:
    ended, cache = 0, {}
    query = (
        store.db()
        .collection_group("publicStageData")
        .where(filter=firestore.FieldFilter("kind", "==", "chat"))
    )
    for snap in query.get():
        params = paths.match(paths.PUBLIC_STAGE_DATA, snap.reference.path)
        data = snap.to_dict() or {}
        if params is None or data.get("discussionEndTimestamp") is not None:
            continue
        stage = _stage(cache, params["experimentId"], params["stageId"])
        if not isinstance(stage, ChatStage) or not readiness.time_is_up(stage, data):
            continue
        if end_chat(params["experimentId"], params["cohortId"], stage):
            ended += 1
    return ended


def end_chat(experiment_id: str, cohort_id: str, stage: ChatStage) -> bool:
    """Stamp discussionEndTimestamp once, announce it, and move the agent participants on."""
    ref = store.ref(store.public_stage_data_path(experiment_id, cohort_id, stage.id))

    def body(transaction: Any) -> dict | None:
        data = store.snapshot_data(ref.path, transaction) or {}
        if data.get("discussionEndTimestamp") is not None:
            return None
        transaction.set(ref, {"discussionEndTimestamp": now()}, merge=True)
        return data

    data = transactions.run(body)
    if data is None:
        return False
    room = Room(experiment_id, cohort_id, stage.id)
    note = messages.system_message(TIMER_ENDED, data.get("currentDiscussionId"), timerEnded=True)
    messages.write(room, note)
    for private_id in agents.participants_at(experiment_id, cohort_id, stage.id):
        profile = store.read(ParticipantProfile, store.participant_path(experiment_id, private_id))
        readiness.leave(room, stage, profile)
    return True


def _wake_idle_agents() -> int:
    """Agent participants at a chat where nothing happened for a while are asked (readiness
    only, no message) whether they are ready to end; in a private chat they get a turn that
    may follow their own message (to go on, or end). Nobody is left waiting forever."""
    turns, cache, nonce = [], {}, uuid.uuid4().hex[:12]
    cutoff = now() - idle_after()
    query = (
        store.db()
        .collection_group("participants")
        .where(filter=firestore.FieldFilter("currentStatus", "==", "IN_PROGRESS"))
    )
    for snap in query.get():
        params = paths.match(paths.PARTICIPANT, snap.reference.path)
        data = snap.to_dict() or {}
        if params is None or not data.get("agentConfig"):
            continue
        e, stage_id, cohort_id = (
            params["experimentId"],
            data.get("currentStageId"),
            data.get("currentCohortId"),
        )
        stage = _stage(cache, e, stage_id) if stage_id and cohort_id else None
        if stage is None:
            continue
        private = isinstance(stage, PrivateChatStage)
        room = Room(e, cohort_id, stage.id, snap.id if private else "")
        history = messages.history(room)
        arrived = ((data.get("timestamps") or {}).get("readyStages") or {}).get(stage.id)
        last = history[-1].timestamp if history else arrived
        if last is None or last > cutoff:
            continue
        trigger = history[-1].id if history else ""
        turns.append(
            Turn(
                e,
                cohort_id,
                stage.id,
                trigger,
                "participant",
                snap.id,
                readiness_only=not private,
                nonce=nonce,
                participant_id=room.participant_id,
                nudge=private,
            )
        )
    publish(*turns)
    return len(turns)
