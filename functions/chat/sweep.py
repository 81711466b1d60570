"""Which agent participants one watchdog tick looks at: a bounded number, shared fairly.

A tick that read every participant in progress in the project, and then each one's move lease
one read after another, took 9-12 s with 10,000 participants written at once, and an unrelated
2-agent experiment crawled meanwhile (issue 28 row 14). A tick now reads at most
``DLAB_WATCHDOG_MAX_READS`` documents. It first finds the experiments with agents in progress,
one read each: a collection-group query for one participant in progress, then for the next
one after that experiment's participants, and so on (a finished experiment costs nothing, as
before). Each is then given an even share of the reads left; within an experiment a cursor
(the last participant read) carries the next tick on from where this one stopped, so every
agent is reached over successive ticks, and a small experiment is served whole on every tick.
When there are more experiments than a tick may find, the next tick finds the ones after.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from google.cloud import firestore
from pydantic import BaseModel, Field

from functions import store
from functions.chat.settings import chat_settings
from shared import paths
from shared.models import ParticipantStatus

CURSOR_PATH = "watchdogs/agents"
"""Where the tick's cursors are kept between ticks (one small document)."""


class Cursor(BaseModel):
    """Where the last tick stopped: the participant path after which it stopped finding
    experiments (none: start from the first), and in each experiment the last participant it
    read (none: start from the first)."""

    found_after: str = ""
    after: dict[str, str] = Field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Read:
    """A participant in progress a tick read, and its experiment."""

    experiment_id: str
    snapshot: firestore.DocumentSnapshot


def in_progress() -> list[Read]:
    """The participants in progress this tick looks at (``DLAB_WATCHDOG_MAX_READS``); moves the
    cursor."""
    budget = chat_settings().watchdog_max_reads
    cursor = Cursor.model_validate(store.snapshot_data(CURSOR_PATH) or {})
    experiments, cursor.found_after = _experiments(cursor.found_after, budget // 2)
    budget -= len(experiments) + 1
    reads: list[Read] = []
    after = {e: a for e, a in cursor.after.items() if e in experiments}
    for served, experiment_id in enumerate(experiments):
        share = max(1, budget // (len(experiments) - served))
        page = _page(experiment_id, after.get(experiment_id, ""), share)
        reads += [Read(experiment_id, snap) for snap in page]
        after[experiment_id] = page[-1].id if len(page) == share else ""  # at the end: over
        budget -= max(1, len(page))
    cursor.after = {e: a for e, a in after.items() if a}
    store.ref(CURSOR_PATH).set(cursor.model_dump())
    return reads


def _experiments(found_after: str, limit: int) -> tuple[list[str], str]:
    """Up to ``limit`` experiments with a participant in progress, found after the participant
    path ``found_after`` and going round once; and where the next tick goes on ('' when all
    were found)."""
    found: list[str] = []
    start, wrapped = found_after, not found_after
    while len(found) < limit:
        snap = _first_in_progress(after=start)
        params = paths.match(paths.PARTICIPANT, snap.reference.path) if snap else None
        if snap is None or (params and params["experimentId"] in found):
            if wrapped:
                return found, ""
            start, wrapped = "", True
            continue
        if params is None:  # a "participants" collection of something else: step over it
            start = snap.reference.path
            continue
        found.append(params["experimentId"])
        start = _after_all_of(params["experimentId"])
    return found, start


def _after_all_of(experiment_id: str) -> str:
    """A participant path after every participant of the experiment (and before the next)."""
    return paths.build(paths.PARTICIPANT, experimentId=experiment_id, participantId=_LAST)


_LAST = "\U0010ffff"
"""The highest code point: a document id after every other."""


def _first_in_progress(after: str) -> Any | None:
    """The first participant in progress (of any experiment) whose path comes after ``after``."""
    query: firestore.Query = (
        store.db()
        .collection_group("participants")
        .where(
            filter=firestore.FieldFilter("currentStatus", "==", ParticipantStatus.IN_PROGRESS.value)
        )
    )
    if after:  # document-name order, which the single-field index keeps
        query = query.where(filter=firestore.FieldFilter("__name__", ">", store.ref(after)))
    return next(iter(query.select([]).limit(1).get()), None)


def _page(experiment_id: str, after: str, limit: int) -> list[Any]:
    """Up to ``limit`` participants in progress of the experiment, after ``after`` (by id)."""
    participants = store.participants(experiment_id)
    query: firestore.Query = participants.where(
        filter=firestore.FieldFilter("currentStatus", "==", ParticipantStatus.IN_PROGRESS.value)
    )
    if after:  # the id order a single-field index keeps: no composite index needed
        query = query.where(
            filter=firestore.FieldFilter("__name__", ">", participants.document(after))
        )
    return list(query.limit(limit).get())
