"""Where a conversation lives, and reading it: the cohort's group chat of a stage, or one
participant's private chat of a stage. Messages, election records and locks are all placed
relative to it. Below the chat logic, so that prompts can show a chat without depending on it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from google.cloud import firestore

from functions import documents, reads, store
from functions.as_seen import as_seen, member_profiles
from shared.models import ChatMessage, ChatPublicData, ParticipantProfile, parse_document


@dataclasses.dataclass(frozen=True)
class Room:
    experiment_id: str
    cohort_id: str
    stage_id: str
    participant_id: str = ""
    """The private chat's participant (private id); '' for the cohort's group chat."""

    @property
    def is_private(self) -> bool:
        return bool(self.participant_id)

    @property
    def base_path(self) -> str:
        """The document the chat hangs under (DL: publicStageData, or the participant's
        stageData for a private chat)."""
        if self.is_private:
            return store.stage_data_path(self.experiment_id, self.participant_id, self.stage_id)
        return self.public_path

    @property
    def public_path(self) -> str:
        return store.public_stage_data_path(self.experiment_id, self.cohort_id, self.stage_id)

    @property
    def chats_path(self) -> str:
        return self.base_path + ("/privateChats" if self.is_private else "/chats")

    def message_path(self, message_id: str) -> str:
        return f"{self.chats_path}/{message_id}"

    def log_path(self, log_id: str) -> str:
        """DL's trigger logs: ``.../triggerLogs/{id}`` under the same document as the chat."""
        if not log_id or "/" in log_id:
            raise ValueError(f"invalid trigger log id: {log_id!r}")
        return f"{self.base_path}/triggerLogs/{log_id}"


recent_reads: reads.Recent[list[ChatMessage]] = reads.Recent(max_age_s=1.0)
"""Reads of each chat, shared by this instance's turns for a second (``history_showing``)."""


Members = Callable[[], Iterable[ParticipantProfile]]
"""Reads the chat's cohort members (their display profiles), started beside the chat's read:
the senders among them need no query of their own after it (``as_seen.stored_profiles``)."""


def history(room: Room, members: Members | None = None) -> list[ChatMessage]:
    """The chat as the backend saw it: in the order Firestore stored it, dated by the server
    and showing the senders' stored profiles, never what a writer claimed
    (``functions/as_seen.py``). A message that does not validate is recorded and left out.
    Always read now (what decides whether a reply is still wanted needs that)."""
    return _kept(room, recent_reads.now(room, lambda: _read(room, members)))


def history_showing(
    room: Room, message_id: str, members: Members | None = None
) -> list[ChatMessage]:
    """The chat as another invocation of this instance read it in the last moment
    (``reads.Recent``), if that read shows ``message_id``, the message a turn answers; else
    read now. Whether the chat moved on before the reply is posted is still decided on a
    read made after the model answered. No ``message_id`` (an opening): read now."""
    if not message_id:
        return history(room, members)
    shows = lambda seen: any(m.id == message_id for m in seen)  # noqa: E731
    return _kept(room, recent_reads.recent(room, lambda: _read(room, members), shows))


def _kept(room: Room, seen: list[ChatMessage]) -> list[ChatMessage]:
    """Kept for this invocation's prompt (``seen_history``); each caller's list its own."""
    reads.note(("history", room), list(seen))
    return list(seen)


def _read(room: Room, members: Members | None = None) -> list[ChatMessage]:
    """The chat's documents; with ``members``, the cohort's members read beside them."""
    beside = reads.start(members) if members is not None else None
    snaps = store.every_document(room.chats_path)
    created = {snap.reference.path: snap.create_time for snap in snaps}
    parsed = documents.valid(snaps, lambda path, data: (path, _parse_message(path, data)))
    known = member_profiles(beside()) if beside is not None else None
    return as_seen(
        room.experiment_id, [(created[path], message) for path, message in parsed], known
    )


def seen_history(room: Room) -> list[ChatMessage]:
    """The chat as this invocation last read it (``history``), read now if it has not: for a
    prompt, which shows the conversation the turn decided on."""
    return reads.once(("history", room), lambda: history(room))


def _parse_message(path: str, data: dict[str, Any]) -> ChatMessage:
    return parse_document(ChatMessage, path, data)


def group_state(room: Room, transaction: firestore.Transaction | None = None) -> ChatPublicData:
    """The group chat's public data (its defaults before the first write)."""
    data = store.snapshot_data(room.public_path, transaction) or {}
    return parse_document(ChatPublicData, room.public_path, {"id": room.stage_id, **data})


def state(room: Room, messages: list[ChatMessage] | None = None) -> ChatPublicData:
    """The chat's public data; a private chat has none, and starts with its first message
    (as in DL)."""
    if not room.is_private:
        return group_state(room)
    messages = history(room) if messages is None else messages
    return ChatPublicData(
        id=room.stage_id,
        discussion_start_timestamp=messages[0].timestamp if messages else None,
    )
