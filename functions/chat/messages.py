"""Chat documents: history, new messages, and the single-responder election."""

from __future__ import annotations

import uuid
from typing import Any

from google.cloud import firestore
from pydantic import ValidationError

from functions import store, transactions
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


def elect_and_write(
    experiment_id: str,
    cohort_id: str,
    stage_id: str,
    log_id: str,
    message: dict[str, Any],
    responder: dict[str, Any],
) -> bool:
    """Create ``triggerLogs/{log_id}`` and the message in one transaction: only the agent whose
    transaction creates the log writes its message (DL's check is read-then-write and races)."""
    log_ref = store.ref(trigger_log_path(experiment_id, cohort_id, stage_id, log_id))
    chat_ref = store.ref(f"{chats_path(experiment_id, cohort_id, stage_id)}/{message['id']}")

    def body(transaction: Any) -> bool:
        if log_ref.get(transaction=transaction).exists:
            return False
        transaction.create(log_ref, {**responder, "messageId": message["id"], "timestamp": now()})
        transaction.set(chat_ref, message)
        return True

    def settled() -> bool | None:
        return False if log_ref.get().exists else None  # someone else was elected meanwhile

    return transactions.run(body, settled=settled)


def take_lock(experiment_id: str, cohort_id: str, stage_id: str, log_id: str, owner: dict) -> bool:
    """Create ``triggerLogs/{log_id}`` if absent (opening messages, claims); True if we did."""
    ref = store.ref(trigger_log_path(experiment_id, cohort_id, stage_id, log_id))

    def body(transaction: Any) -> bool:
        if ref.get(transaction=transaction).exists:
            return False
        transaction.create(ref, {**owner, "timestamp": now()})
        return True

    return transactions.run(body)


def release_lock(experiment_id: str, cohort_id: str, stage_id: str, log_id: str) -> None:
    """Delete the lock at the same path it was taken (DL deletes a different path)."""
    store.ref(trigger_log_path(experiment_id, cohort_id, stage_id, log_id)).delete()
