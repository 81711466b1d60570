"""The index of running timed chats: what the watchdog reads to end chats on time.

A group chat with a time limit gets an entry ``experiments/{e}/activeChats/{cohort}~{stage}``
when a participant enters it (``fanout.request_openings``) and in the batch that starts its
timer (its first message). The watchdog drops the entry once the chat has ended
(``discussionEndTimestamp``), cannot end any more (its stage is gone or has no time limit), or
never started and has nobody left in it. So a tick reads the chats that are running, not every
chat the project ever had: its cost does not grow with finished experiments.
"""

from __future__ import annotations

import contextlib
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import firestore

from functions import documents, store
from functions.rooms import Room
from shared import paths
from shared.models import ChatStage, DocModel, parse_document

COLLECTION = "activeChats"
PATTERN = paths.EXPERIMENT + "/" + COLLECTION + "/{entryId}"


class ActiveChat(DocModel):
    """An index entry: where the chat lives (and ``since``: when its timer started)."""

    experiment_id: str
    cohort_id: str
    stage_id: str

    @classmethod
    def of(cls, room: Room) -> ActiveChat:
        return cls(
            experiment_id=room.experiment_id, cohort_id=room.cohort_id, stage_id=room.stage_id
        )

    @property
    def room(self) -> Room:
        return Room(self.experiment_id, self.cohort_id, self.stage_id)

    @property
    def path(self) -> str:
        return entry_path(self.room)


def entry_path(room: Room) -> str:
    return f"{paths.build(paths.EXPERIMENT, experimentId=room.experiment_id)}/{COLLECTION}/" + (
        f"{room.cohort_id}~{room.stage_id}"
    )


def needs_entry(stage: ChatStage) -> bool:
    """Only a chat with a time limit is ended by the watchdog."""
    return bool(stage.time_limit_in_minutes)


def add(batch: firestore.WriteBatch, room: Room) -> None:
    """Add the chat's entry to ``batch`` (the one that starts its timer)."""
    entry = ActiveChat.of(room)
    batch.set(store.ref(entry.path), {**entry.to_firestore(), "since": firestore.SERVER_TIMESTAMP})


def ensure(room: Room) -> None:
    """Add the chat's entry unless it is there (a participant entered the chat)."""
    entry = ActiveChat.of(room)
    with contextlib.suppress(gexc.AlreadyExists):
        store.ref(entry.path).create({**entry.to_firestore(), "since": firestore.SERVER_TIMESTAMP})


def remove(room: Room) -> None:
    store.ref(entry_path(room)).delete()


def _parse(path: str, data: dict[str, Any]) -> ActiveChat:
    return parse_document(ActiveChat, path, data)


def entries() -> list[ActiveChat]:
    """Every running chat of the project (one collection-group query)."""
    return documents.valid(store.db().collection_group(COLLECTION).get(), _parse)
