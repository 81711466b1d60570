"""Ready to end a chat: discussion threads, leaving, and the readiness-only query."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from google.cloud.firestore_v1.field_path import FieldPath

from functions import store, transactions
from functions.agents import cohort_lock
from functions.agents.progression import complete_stage_from_outside
from functions.chat import messages
from shared.models import ChatStage, ParticipantProfile, now


def public_data(experiment_id: str, cohort_id: str, stage_id: str) -> dict[str, Any]:
    return (
        store.snapshot_data(store.public_stage_data_path(experiment_id, cohort_id, stage_id)) or {}
    )


def too_early(stage: ChatStage, public: dict[str, Any]) -> bool:
    """timeMinimumInMinutes not yet passed since the discussion started."""
    start = public.get("discussionStartTimestamp")
    if not stage.time_minimum_in_minutes or start is None:
        return bool(stage.time_minimum_in_minutes)
    return now() < start + timedelta(minutes=stage.time_minimum_in_minutes)


def time_is_up(stage: ChatStage, public: dict[str, Any]) -> bool:
    if public.get("discussionEndTimestamp") is not None:
        return True
    start = public.get("discussionStartTimestamp")
    if not stage.time_limit_in_minutes or start is None:
        return False
    return now() >= start + timedelta(minutes=stage.time_limit_in_minutes)


def on_last_thread(stage: ChatStage, public: dict[str, Any]) -> bool:
    if not stage.discussions:
        return True
    current = public.get("currentDiscussionId")
    return current is None or current == stage.discussions[-1].id


def participant_ready(
    experiment_id: str, cohort_id: str, stage: ChatStage, participant: ParticipantProfile
) -> str:
    """Act on an agent participant's readiness; returns what happened (for logs and tests)."""
    public = public_data(experiment_id, cohort_id, stage.id)
    if too_early(stage, public):
        return "too-early"
    if not on_last_thread(stage, public):
        discussion = public["currentDiscussionId"]
        path = store.stage_data_path(experiment_id, participant.private_id, stage.id)
        store.ref(path).set(
            {
                "id": stage.id,
                "kind": "chat",
                "discussionTimestampMap": {discussion: now()},
            },
            merge=True,
        )
        return "thread-ready"
    leave(experiment_id, cohort_id, stage, participant)
    return "left"


def leave(
    experiment_id: str, cohort_id: str, stage: ChatStage, participant: ParticipantProfile
) -> bool:
    """Complete the chat stage; only the invocation that made the move posts the system message,
    so the agent leaves once however often it is told to.

    Several turns may tell one agent to leave at once (its reply, a readiness query, the
    watchdog); a lock taken with an atomic create lets one of them try, so they do not contend
    in transactions on the participant document. A failed attempt releases the lock."""
    lock = f"left-{participant.private_id}"
    owner = {"privateId": participant.private_id, "publicId": participant.public_id}
    if not messages.take_lock(experiment_id, cohort_id, stage.id, lock, owner):
        return False
    try:
        left = complete_stage_from_outside(experiment_id, participant.private_id, stage.id)
    except BaseException:
        messages.release_lock(experiment_id, cohort_id, stage.id, lock)
        raise
    if not left:
        messages.release_lock(experiment_id, cohort_id, stage.id, lock)
        return False
    public = public_data(experiment_id, cohort_id, stage.id)
    name = participant.name or "A participant"
    message = messages.system_message(
        f"{name} has left the chat.",
        public.get("currentDiscussionId"),
        senderId=participant.public_id,
        **{messages.LEFT_CHAT_FIELD: participant.public_id},
    )
    messages.write(experiment_id, cohort_id, stage.id, message)
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
        messages.write(experiment_id, cohort_id, stage.id, messages.system_message(text, following))
    return following
