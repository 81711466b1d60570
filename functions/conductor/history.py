"""The conductor's reads of many documents at once: the steps of a conversation so far (for the
conductor's prompt and the console), and the conversations still active (for the watchdog)."""

from __future__ import annotations

from typing import Any

from functions import store
from shared import paths
from shared.conductor.documents import ACTIVE, CONVERSATION, STEP, Step
from shared.models import parse_document


def steps_collection(conversation_id: str) -> str:
    return paths.collection_of(STEP, conversationId=conversation_id)


def finished_steps(conversation_id: str, before: int) -> list[Step]:
    """Steps with an index below ``before``, in order."""
    found = []
    for snap in store.find(steps_collection(conversation_id)):
        step = parse_document(Step, snap.reference.path, snap.to_dict())
        if step.index < before:
            found.append(step)
    return sorted(found, key=lambda s: s.index)


def active_conversations(limit: int) -> list[Any]:
    """Snapshots of at most ``limit`` conversations pending or running (``ACTIVE``)."""
    active = [status.value for status in ACTIVE]
    return store.find(paths.collection_of(CONVERSATION), ("status", "in", active), limit=limit)
