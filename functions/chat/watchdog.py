"""The watchdog (scheduled): no function sleeps to keep time, so chat time limits and idle agents
are handled here, on each tick."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, TypeVar

from google.cloud import firestore

from functions import documents, rooms, store, transactions
from functions.chat import agents, messages, readiness
from functions.rooms import Room
from functions.wire import AgentTurn, publish_turns
from shared import paths
from shared.models import (
    ChatPublicData,
    ChatStage,
    ConversationStage,
    DocumentError,
    ParticipantProfile,
    PrivateChatStage,
    now,
    parse_document,
)

StageCache = dict[tuple[str, str], ConversationStage | None]
T = TypeVar("T")

IDLE_ENV = "DLAB_IDLE_AGENT_SECONDS"
DEFAULT_IDLE_S = 120.0
TIMER_ENDED = "The timer for this stage has ended; you can no longer respond."


def idle_after() -> timedelta:
    return timedelta(seconds=float(os.environ.get(IDLE_ENV, DEFAULT_IDLE_S)))


def tick() -> dict[str, int]:
    """One pass; returns counts (ended chats, woken agents) for logs and tests."""
    return {"ended": _end_timed_out_chats(), "woken": _wake_idle_agents()}


def _stage(cache: StageCache, experiment_id: str, stage_id: str) -> ConversationStage | None:
    key = (experiment_id, stage_id)
    if key not in cache:
        try:
            stage = store.read_stage(experiment_id, stage_id)
        except DocumentError:
            stage = None
        cache[key] = stage if isinstance(stage, ConversationStage) else None
    return cache[key]


def _scan(
    query: Any, pattern: str, parse: documents.Parse[T], id_field: str
) -> Iterator[tuple[dict[str, str], T]]:
    """The documents of a collection-group query, validated, with the values of the path
    pattern's wildcards (documents elsewhere in the tree are left out)."""
    pairs = documents.valid(
        query.get(), lambda path, data: (path, parse(path, data)), id_field=id_field
    )
    for path, doc in pairs:
        params = paths.match(pattern, path)
        if params is not None:
            yield params, doc


def _end_timed_out_chats() -> int:
    ended, cache = 0, StageCache()
    chats = (
        store.db()
        .collection_group("publicStageData")
        .where(filter=firestore.FieldFilter("kind", "==", "chat"))
    )
    for params, public in _scan(chats, paths.PUBLIC_STAGE_DATA, _parse_public, "id"):
        if public.discussion_end_timestamp is not None:
            continue
        stage = _stage(cache, params["experimentId"], params["stageId"])
        if isinstance(stage, ChatStage) and readiness.time_is_up(stage, public):
            ended += end_chat(params["experimentId"], params["cohortId"], stage)
    return ended


def _parse_public(path: str, data: dict[str, Any]) -> ChatPublicData:
    return parse_document(ChatPublicData, path, data)


def _parse_participant(path: str, data: dict[str, Any]) -> ParticipantProfile:
    return parse_document(ParticipantProfile, path, data)


def end_chat(experiment_id: str, cohort_id: str, stage: ChatStage) -> bool:
    """Stamp discussionEndTimestamp once, announce it, and move the agent participants on."""
    ref = store.ref(store.public_stage_data_path(experiment_id, cohort_id, stage.id))

    room = Room(experiment_id, cohort_id, stage.id)

    def body(transaction: Any) -> ChatPublicData | None:
        public = rooms.group_state(room, transaction)
        if public.discussion_end_timestamp is not None:
            return None
        transaction.set(ref, {"discussionEndTimestamp": now()}, merge=True)
        return public

    public = transactions.run(body)
    if public is None:
        return False
    note = messages.system_message(TIMER_ENDED, public.current_discussion_id, timerEnded=True)
    messages.write(room, note)
    for private_id in agents.participants_at(experiment_id, cohort_id, stage.id):
        profile = store.read(ParticipantProfile, store.participant_path(experiment_id, private_id))
        readiness.leave(room, stage, profile)
    return True


def _wake_idle_agents() -> int:
    """Agent participants at a chat where nothing happened for a while are asked (readiness
    only, no message) whether they are ready to end; in a private chat they get a turn that
    may follow their own message (to go on, or end). Nobody is left waiting forever."""
    turns, cache, nonce = [], StageCache(), uuid.uuid4().hex[:12]
    cutoff = now() - idle_after()
    in_progress = (
        store.db()
        .collection_group("participants")
        .where(filter=firestore.FieldFilter("currentStatus", "==", "IN_PROGRESS"))
    )
    for params, member in _scan(in_progress, paths.PARTICIPANT, _parse_participant, "privateId"):
        experiment_id, private_id = params["experimentId"], params["participantId"]
        stage_id, cohort_id = member.current_stage_id, member.current_cohort_id
        if not (member.is_agent and stage_id and cohort_id):
            continue
        stage = _stage(cache, experiment_id, stage_id)
        if stage is None:
            continue
        private = isinstance(stage, PrivateChatStage)
        room = Room(experiment_id, cohort_id, stage.id, private_id if private else "")
        history = rooms.history(room)
        last = history[-1].timestamp if history else member.timestamps.ready_stages.get(stage.id)
        if last is None or last > cutoff:
            continue
        trigger = history[-1].id if history else ""
        turns.append(
            AgentTurn.in_room(
                room,
                "participant",
                private_id,
                trigger_chat_id=trigger,
                readiness_only=not private,
                nonce=nonce,
                nudge=private,
            )
        )
    publish_turns(*turns)
    return len(turns)
