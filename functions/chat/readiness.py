"""Ready to end a chat: discussion threads, leaving, and the readiness-only query."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from google.cloud.firestore_v1.field_path import FieldPath

from functions import store, transactions
from functions.agents import cohort_lock
from functions.agents.progression import complete_stage_from_outside
from functions.chat import messages
from functions.chat.room import Room
from shared.models import (
    ChatMessage,
    ChatStage,
    ConversationStage,
    ParticipantProfile,
    PrivateChatStage,
    now,
)


def public_data(experiment_id: str, cohort_id: str, stage_id: str) -> dict[str, Any]:
    return (
        store.snapshot_data(store.public_stage_data_path(experiment_id, cohort_id, stage_id)) or {}
    )


def chat_state(room: Room, history: list[ChatMessage] | None = None) -> dict[str, Any]:
    """The group chat's public data; for a private chat (which has none), its start is the
    first message (as in DL)."""
    if not room.is_private:
        return public_data(room.experiment_id, room.cohort_id, room.stage_id)
    history = messages.history(room) if history is None else history
    return {"discussionStartTimestamp": history[0].timestamp if history else None}


def too_early(stage: ConversationStage, public: dict[str, Any]) -> bool:
    """timeMinimumInMinutes not yet passed since the discussion started."""
    start = public.get("discussionStartTimestamp")
    if not stage.time_minimum_in_minutes or start is None:
        return bool(stage.time_minimum_in_minutes)
    return now() < start + timedelta(minutes=stage.time_minimum_in_minutes)


def time_is_up(stage: ConversationStage, public: dict[str, Any]) -> bool:
    if public.get("discussionEndTimestamp") is not None:
        return True
    start = public.get("discussionStartTimestamp")
    if not stage.time_limit_in_minutes or start is None:
        return False
    return now() >= start + timedelta(minutes=stage.time_limit_in_minutes)


def on_last_thread(stage: ConversationStage, public: dict[str, Any]) -> bool:
    if not isinstance(stage, ChatStage) or not stage.discussions:
        return True
    current = public.get("currentDiscussionId")
    return current is None or current == stage.discussions[-1].id


def turns_left(stage: ConversationStage, participant: ParticipantProfile, history) -> int:
    """Private chat: messages the participant must still send (minNumberOfTurns)."""
    if not isinstance(stage, PrivateChatStage):
        return 0
    sent = [m for m in history if m.sender_id == participant.public_id and not m.is_error]
    return max(stage.min_number_of_turns - len(sent), 0)


def conversation_over(
    stage: ConversationStage, participant: ParticipantProfile, history: list[ChatMessage]
) -> bool:
    """Private chat: maxNumberOfTurns sent and answered (DL's frontend ends it there)."""
    if not isinstance(stage, PrivateChatStage) or stage.max_number_of_turns is None:
        return False
    sent = [m for m in history if m.sender_id == participant.public_id and not m.is_error]
    answered = bool(history) and history[-1].sender_id != participant.public_id
    return len(sent) >= stage.max_number_of_turns and answered


def participant_ready(
    room: Room, stage: ConversationStage, participant: ParticipantProfile, *, record: bool = True
) -> str:
    """Act on a participant's readiness; returns what happened (for logs and tests). ``record``
    writes DL's private-chat answer ``readyToEndChat`` (not when reacting to that answer)."""
    history = messages.history(room) if room.is_private else []
    public = chat_state(room, history)
    if too_early(stage, public):
        return "too-early"
    if turns_left(stage, participant, history):
        return "too-few-turns"
    if not on_last_thread(stage, public):
        discussion = public["currentDiscussionId"]
        path = store.stage_data_path(room.experiment_id, participant.private_id, stage.id)
        store.ref(path).set(
            {
                "id": stage.id,
                "kind": "chat",
                "discussionTimestampMap": {discussion: now()},
            },
            merge=True,
        )
        return "thread-ready"
    if room.is_private and record:  # DL's private-chat answer
        path = store.stage_data_path(room.experiment_id, participant.private_id, stage.id)
        store.ref(path).set(
            {"id": stage.id, "kind": stage.kind, "readyToEndChat": True}, merge=True
        )
    leave(room, stage, participant)
    return "left"


def leave(room: Room, stage: ConversationStage, participant: ParticipantProfile) -> bool:
    """Complete the chat stage; only the invocation that made the move posts the system message,
    so the agent leaves once however often it is told to.

    Several turns may tell one agent to leave at once (its reply, a readiness query, the
    watchdog); a lock taken with an atomic create lets one of them try, so they do not contend
    in transactions on the participant document. A failed attempt releases the lock."""
    lock = f"left-{participant.private_id}"
    owner = {"privateId": participant.private_id, "publicId": participant.public_id}
    if not messages.take_lock(room, lock, owner):
        return False
    try:
        left = complete_stage_from_outside(room.experiment_id, participant.private_id, stage.id)
    except BaseException:
        messages.release_lock(room, lock)
        raise
    if not left:
        messages.release_lock(room, lock)
        return False
    public = chat_state(room)
    name = participant.name or "A participant"
    message = messages.system_message(
        f"{name} has left the chat.",
        public.get("currentDiscussionId"),
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
    store.ref(public_path).set({"id": stage.id, "kind": "chat"}, merge=True)
    store.ref(public_path).update(
        {
            FieldPath("discussionTimestampMap", d, participant.public_id).to_api_repr(): t
            for d, t in marks.items()
        }
    )
    advance_thread(experiment_id, cohort_id, stage)


def advance_thread(experiment_id: str, cohort_id: str, stage: ChatStage) -> str | None:
    """Move to the next thread if everyone active in the cohort is ready for the current one;
    announce it with a system message (which triggers the agents, so the conversation restarts).
    Returns the new discussion id, or None when nothing moved."""
    members = {
        m.public_id
        for m in cohort_lock.cohort_members(experiment_id, cohort_id)
        if stage.id not in m.timestamps.completed_stages  # who left cannot hold a thread back
    }
    ids = [d.id for d in stage.discussions]
    ref = store.ref(store.public_stage_data_path(experiment_id, cohort_id, stage.id))

    def body(transaction: Any) -> str | None:
        public = store.snapshot_data(ref.path, transaction) or {}
        current = public.get("currentDiscussionId")
        if current not in ids or current == ids[-1]:
            return None
        ready = set((public.get("discussionTimestampMap") or {}).get(current, {}))
        if not members or not members <= ready:
            return None
        following = ids[ids.index(current) + 1]
        transaction.update(ref, {"currentDiscussionId": following})
        return following

    following = transactions.run(body)
    if following is not None:
        description = next(d.description for d in stage.discussions if d.id == following)
        text = f"The discussion has moved on to the next topic: {description or following}"
        room = Room(experiment_id, cohort_id, stage.id)
        messages.write(room, messages.system_message(text, following))
    return following
