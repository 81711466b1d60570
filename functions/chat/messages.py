"""Chat documents: history, new messages, and the single-responder election."""

from __future__ import annotations

import uuid
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import firestore
from pydantic import ValidationError

from functions import store
from shared import paths
from shared.models import ChatMessage, ProfileBase, UserType, now

LEFT_CHAT_FIELD = "leftChatBy"
"""Our explicit marker on a "has left the chat" system message: the public id of who left (DL
infers it from senderId, their issue #867)."""


def chats_path(experiment_id: str, cohort_id: str, stage_id: str) -> str:
    return store.public_stage_data_path(experiment_id, cohort_id, stage_id) + "/chats"


def trigger_log_path(experiment_id: str, cohort_id: str, stage_id: str, log_id: str) -> str:
    return paths.build(
        paths.TRIGGER_LOG,
        experimentId=experiment_id,
        cohortId=cohort_id,
        stageId=stage_id,
        logId=log_id,
    )


def history(experiment_id: str, cohort_id: str, stage_id: str) -> list[ChatMessage]:
    """The chat in time order (messages that do not parse are left out)."""
    query = (
        store.db()
        .collection(chats_path(experiment_id, cohort_id, stage_id))
        .order_by("timestamp", direction=firestore.Query.ASCENDING)
    )
    messages = []
    for snap in query.get():
        try:
            messages.append(ChatMessage.model_validate({"id": snap.id, **snap.to_dict()}))
        except ValidationError:
            continue
    return messages


def last_conversational(messages: list[ChatMessage]) -> ChatMessage | None:
    """The last message that is not a system message (DL's "moved on" check ignores them)."""
    for message in reversed(messages):
        if message.type != UserType.SYSTEM:
            return message
    return None


def system_message(text: str, discussion_id: str | None, **extra: Any) -> dict[str, Any]:
    message = ChatMessage(
        id=uuid.uuid4().hex,
        discussion_id=discussion_id,
        type=UserType.SYSTEM,
        message=text,
        timestamp=now(),
        profile=ProfileBase(name="System"),
    ).to_firestore()
    return {**message, **extra}


def write(experiment_id: str, cohort_id: str, stage_id: str, message: dict[str, Any]) -> None:
    path = f"{chats_path(experiment_id, cohort_id, stage_id)}/{message['id']}"
    store.ref(path).set(message)


def post(
    experiment_id: str,
    cohort_id: str,
    stage_id: str,
    message: dict[str, Any],
    responder: dict[str, Any],
    *,
    election: str | None,
    slot: int,
) -> bool:
    """Write an agent's message in one atomic batch that also creates its election record
    ``triggerLogs/{election}`` (race policy) and its response slot ``quota-{agent}-{slot}``; the
    batch fails if either exists. So only one agent of a type answers a message (DL's check is
    read-then-write and races), and concurrent turns of one agent cannot exceed maxResponses.
    No transaction: twenty agents electing at once do not contend for locks."""
    logs = lambda log_id: store.ref(trigger_log_path(experiment_id, cohort_id, stage_id, log_id))  # noqa: E731
    chat_ref = store.ref(f"{chats_path(experiment_id, cohort_id, stage_id)}/{message['id']}")
    record = {**responder, "messageId": message["id"], "timestamp": now()}
    if election is not None and logs(election).get().exists:
        return False  # most losers stop here, without a write
    batch = store.db().batch()
    if election is not None:
        batch.create(logs(election), record)
    batch.create(logs(f"quota-{responder['privateId']}-{slot}"), record)
    batch.set(chat_ref, message)
    try:
        batch.commit()
    except gexc.AlreadyExists:
        return False
    return True


def take_lock(experiment_id: str, cohort_id: str, stage_id: str, log_id: str, owner: dict) -> bool:
    """Create ``triggerLogs/{log_id}`` if absent (opening messages, claims); True if we did."""
    ref = store.ref(trigger_log_path(experiment_id, cohort_id, stage_id, log_id))
    try:
        ref.create({**owner, "timestamp": now()})
    except gexc.AlreadyExists:
        return False
    return True


def release_lock(experiment_id: str, cohort_id: str, stage_id: str, log_id: str) -> None:
    """Delete the lock at the same path it was taken (DL deletes a different path)."""
    store.ref(trigger_log_path(experiment_id, cohort_id, stage_id, log_id)).delete()
