"""Chat documents: history, new messages, and the single-responder election."""

from __future__ import annotations

import uuid
from typing import Any

from google.api_core import exceptions as gexc

from functions import store
from functions.as_seen import messages_as_seen
from functions.chat.room import Room
from shared.models import ChatMessage, ProfileBase, UserType, now

LEFT_CHAT_FIELD = "leftChatBy"
"""Our explicit marker on a "has left the chat" system message: the public id of who left (DL
infers it from senderId, their issue #867)."""
DECLINED_FIELD = "declinedBy"
"""Marks the system notice posted when a mediator declines to answer in a private chat: the
participant is not left "waiting for a response" (DL #938, #1011)."""
SKIPPED_FIELD = "skippedTurnOf"
"""Marks the system notice of a turn-based chat skipping an agent whose turn failed."""


def history(room: Room) -> list[ChatMessage]:
    """The chat in the order Firestore stored it, with server times and the senders' stored
    profiles, never what a writer claimed (functions/as_seen.py)."""
    return messages_as_seen(room.experiment_id, store.db().collection(room.chats_path).stream())


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


def write(room: Room, message: dict[str, Any]) -> None:
    store.ref(room.message_path(message["id"])).set(message)


def post(
    room: Room,
    message: dict[str, Any],
    responder: dict[str, Any],
    *,
    election: str | None,
    slot: int | None,
) -> bool:
    """Write an agent's message in one atomic batch that also creates its election record
    ``triggerLogs/{election}`` (race policy) and its response slot ``quota-{agent}-{slot}``; the
    batch fails if either exists. So only one agent of a type answers a message (DL's check is
    read-then-write and races), and concurrent turns of one agent cannot exceed maxResponses.
    No transaction: twenty agents electing at once do not contend for locks."""
    logs = lambda log_id: store.ref(room.log_path(log_id))  # noqa: E731
    chat_ref = store.ref(room.message_path(message["id"]))
    record = {**responder, "messageId": message["id"], "timestamp": now()}
    if election is not None and logs(election).get().exists:
        return False  # most losers stop here, without a write
    batch = store.db().batch()
    if election is not None:
        batch.create(logs(election), record)
    if slot is not None:
        batch.create(logs(quota_id(responder, slot)), record)
    batch.set(chat_ref, message)
    try:
        batch.commit()
    except gexc.AlreadyExists:
        return False
    return True


def quota_id(responder: dict[str, Any], slot: int) -> str:
    return f"quota-{responder['privateId']}-{slot}"


def take_lock(room: Room, log_id: str, owner: dict) -> bool:
    """Create ``triggerLogs/{log_id}`` if absent (opening messages, claims); True if we did."""
    ref = store.ref(room.log_path(log_id))
    try:
        ref.create({**owner, "timestamp": now()})
    except gexc.AlreadyExists:
        return False
    return True


def release_lock(room: Room, log_id: str) -> None:
    """Delete the lock at the same path it was taken (DL deletes a different path)."""
    store.ref(room.log_path(log_id)).delete()


def is_notice(message: ChatMessage) -> bool:
    """A system message that needs no answer: someone left, or the timer ended."""
    extra = message.model_extra or {}
    return message.type == UserType.SYSTEM and bool(
        extra.get(LEFT_CHAT_FIELD) or extra.get("timerEnded")
    )
