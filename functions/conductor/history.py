"""The steps of a conversation so far, for the conductor's prompt and the console."""

from __future__ import annotations

from functions import store
from shared import paths
from shared.conductor.documents import STEP, Step
from shared.models import parse_document


def steps_collection(conversation_id: str) -> str:
    return paths.collection_of(STEP, conversationId=conversation_id)


def finished_steps(conversation_id: str, before: int) -> list[Step]:
    """Steps with an index below ``before``, in order."""
    found = []
    for snap in store.db().collection(steps_collection(conversation_id)).get():
        step = parse_document(Step, snap.reference.path, snap.to_dict())
        if step.index < before:
            found.append(step)
    return sorted(found, key=lambda s: s.index)
