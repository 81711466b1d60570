"""Ready to end a chat: discussion threads, leaving, and the conditions on both."""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from typing import Any

from google.cloud import firestore
from google.cloud.firestore_v1.field_path import FieldPath

from functions import rooms, store, transactions
from functions.agents import cohort_lock, roles
from functions.agents.moves import complete_stage_from_outside
from functions.chat import messages
from functions.rooms import Room
from shared.models import (
    ChatMessage,
    ChatPublicData,
    ChatStage,
    ConversationStage,
    ParticipantProfile,
    PrivateChatStage,
    now,
)


class Readiness(StrEnum):
    """What came of a participant being ready to end (or of asking it whether it is)."""

    TOO_EARLY = "too-early"
    TOO_FEW_TURNS = "too-few-turns"
    THREAD_READY = "thread-ready"
    LEFT = "left"
    ALREADY_LEFT = "already-left"
    ALREADY_ASKED = "readiness-already-asked"
    QUERY_FAILED = "readiness-failed"
    NOT_READY = "not-ready"
    THREAD_MOVED_ON = "thread-moved-on"
    """Decided in a thread the discussion has since left: dropped, not applied to the next."""
    ASKED_EVERYONE = "asked-everyone"
    """Nobody may answer the message: every present agent not yet ready was asked."""


def too_early(stage: ConversationStage, public: ChatPublicData) -> bool:
    """timeMinimumInMinutes not yet passed since the discussion started."""
    start = public.discussion_start_timestamp
    if not stage.time_minimum_in_minutes or start is None:
        return bool(stage.time_minimum_in_minutes)
    return now() < start + timedelta(minutes=stage.time_minimum_in_minutes)


def time_is_up(stage: ConversationStage, public: ChatPublicData) -> bool:
    if public.discussion_end_timestamp is not None:
        return True
    start = public.discussion_start_timestamp
    if not stage.time_limit_in_minutes or start is None:
        return False
    return now() >= start + timedelta(minutes=stage.time_limit_in_minutes)


def on_last_thread(stage: ConversationStage, public: ChatPublicData) -> bool:
    if not isinstance(stage, ChatStage) or not stage.discussions:
        return True
    current = public.current_discussion_id
    return current is None or current == stage.discussions[-1].id


def _sent(participant: ParticipantProfile, history: list[ChatMessage]) -> int:
    return sum(1 for m in history if m.sender_id == participant.public_id and not m.is_error)


def turns_left(
    stage: ConversationStage, participant: ParticipantProfile, history: list[ChatMessage]
) -> int:
    """Private chat: messages the participant must still send (minNumberOfTurns)."""
    if not isinstance(stage, PrivateChatStage):
        return 0
    return max(stage.min_number_of_turns - _sent(participant, history), 0)


def conversation_over(
    stage: ConversationStage, participant: ParticipantProfile, history: list[ChatMessage]
) -> bool:
    """Private chat: maxNumberOfTurns sent and answered (DL's frontend ends it there)."""
    if not isinstance(stage, PrivateChatStage) or stage.max_number_of_turns is None:
        return False
    replies = [m for m in history if not m.is_error]  # an error message answers nothing
    answered = bool(replies) and replies[-1].sender_id != participant.public_id
    return _sent(participant, history) >= stage.max_number_of_turns and answered


def participant_ready(
    room: Room,
    stage: ConversationStage,
    participant: ParticipantProfile,
    *,
    record: bool = True,
    decided_in: str | None = None,
) -> Readiness:
    """Act on a participant's readiness. ``record`` writes DL's private-chat answer
    ``readyToEndChat`` (not when reacting to that answer). ``decided_in`` is the thread the
    agent saw when it decided: a model call outlasts a thread switch, and its readiness for
    the old thread must not mark the new one, or make the agent leave a last thread unseen."""
    history = rooms.history(room) if room.is_private else []
    public = rooms.state(room, history)
    if decided_in is not None and decided_in != public.current_discussion_id:
        return Readiness.THREAD_MOVED_ON
    if too_early(stage, public):
        return Readiness.TOO_EARLY
    if turns_left(stage, participant, history):
        return Readiness.TOO_FEW_TURNS
    answer = store.ref(store.stage_data_path(room.experiment_id, participant.private_id, stage.id))
    if not on_last_thread(stage, public):
        marks = {"discussionTimestampMap": {public.current_discussion_id: now()}}
        answer.set({"id": stage.id, "kind": "chat", **marks}, merge=True)
        return Readiness.THREAD_READY
    if room.is_private and record:  # DL's private-chat answer
        answer.set({"id": stage.id, "kind": stage.kind, "readyToEndChat": True}, merge=True)
    return Readiness.LEFT if leave(room, stage, participant) else Readiness.ALREADY_LEFT


def leave(room: Room, stage: ConversationStage, participant: ParticipantProfile) -> bool:
    """Complete the chat stage; only the invocation that made the move posts the system message,
    so the agent leaves once however often it is told to.

    Several turns may tell one agent to leave at once (its reply, a readiness query, the
    watchdog); a lock taken with an atomic create lets one of them try, so they do not contend
    in transactions on the participant document."""
    owner = {"privateId": participant.private_id, "publicId": participant.public_id}
    with messages.lock(room, messages.left_lock_id(participant.private_id), owner) as held:
        if not held.taken:
            return False
        if not complete_stage_from_outside(room.experiment_id, participant.private_id, stage.id):
            return False
        held.keep(mark_done=True)  # done: never taken for a dead leave's (``turn._refused``)
    name = participant.name or "A participant"
    message = messages.system_message(
        f"{name} has left the chat.",
        rooms.state(room).current_discussion_id,
        messages.message_id(room, "left", participant.private_id),
        senderId=participant.public_id,
        **{messages.LEFT_CHAT_FIELD: participant.public_id},
    )
    messages.write(room, message)
    return True


def mirror_thread_readiness(
    experiment_id: str, stage: ChatStage, participant: ParticipantProfile, answer: dict[str, Any]
) -> None:
    """DL's updateCurrentChatDiscussionId: copy the participant's thread timestamps into public
    data, and move every one to the next thread when all active participants are ready."""
    cohort_id = participant.current_cohort_id
    public_path = store.public_stage_data_path(experiment_id, cohort_id, stage.id)
    marks = answer.get("discussionTimestampMap") or {}
    if not marks:
        return
    fields = {
        FieldPath("discussionTimestampMap", d, participant.public_id).to_api_repr(): t
        for d, t in marks.items()
    }

    def mark() -> None:
        store.ref(public_path).set(ChatPublicData.fields(id=stage.id, kind="chat"), merge=True)
        store.ref(public_path).update(fields)

    transactions.retry_contended(mark)
    advance_thread(experiment_id, cohort_id, stage)


def advance_thread(experiment_id: str, cohort_id: str, stage: ChatStage) -> str | None:
    """Move to the next thread if everyone active in the cohort is ready for the current one;
    announce it with a system message (which triggers the agents, so the conversation restarts).
    Returns the new discussion id, or None when nothing moved."""
    members = {
        m.public_id
        for m in cohort_lock.cohort_members(experiment_id, cohort_id)
        if stage.id not in m.timestamps.completed_stages  # who left cannot hold a thread back
        and roles.takes_part(m)  # nor an observer or an inactive persona
    }
    ids = [d.id for d in stage.discussions]
    room = Room(experiment_id, cohort_id, stage.id)

    def body(transaction: firestore.Transaction) -> str | None:
        public = rooms.group_state(room, transaction)
        current = public.current_discussion_id
        if current not in ids or current == ids[-1]:
            return None
        ready = set(public.discussion_timestamp_map.get(current, {}))
        if not members or not members <= ready:
            return None
        following = ids[ids.index(current) + 1]
        moved = ChatPublicData.fields(current_discussion_id=following)
        transaction.update(store.ref(room.public_path), moved)
        messages.mark_thread(room, following, transaction)
        return following

    following = transactions.run(body)
    if following is not None:
        description = next(d.description for d in stage.discussions if d.id == following)
        text = f"The discussion has moved on to the next topic: {description or following}"
        named = messages.message_id(room, "thread", following)
        messages.write(room, messages.system_message(text, following, named))
    return following
