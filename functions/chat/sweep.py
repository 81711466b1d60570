"""Which agent participants one watchdog tick looks at: a bounded number, shared fairly.

A tick that read every participant in progress in the project, and then each one's move lease
one read after another, took 9-12 s with 10,000 participants written at once, and an unrelated
2-agent experiment crawled meanwhile (issue 28 row 14). A tick now reads at most
``DLAB_WATCHDOG_MAX_READS`` documents and queries: the experiments are visited in turn,
starting after the one the last tick stopped at, each given an even share of what is left of
the tick's reads; within an experiment a cursor (the last participant read) carries the next
tick on from where this one stopped, so every agent is reached over successive ticks, and a
small experiment is served whole on every tick.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from google.cloud import firestore
from pydantic import BaseModel, Field

from functions import store
from functions.chat.settings import chat_settings
from shared.models import ParticipantStatus

CURSOR_PATH = "watchdogs/agents"
"""Where the tick's cursors are kept between ticks (one small document)."""


class Cursor(BaseModel):
    """Where the last tick stopped: the last experiment it served, and in each experiment the
    last participant it read (none: start from the first)."""

    experiment: str = ""
    after: dict[str, str] = Field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Read:
    """A participant in progress a tick read, and its experiment."""

    experiment_id: str
    snapshot: Any


def in_progress() -> list[Read]:
    """The participants in progress this tick looks at (``DLAB_WATCHDOG_MAX_READS``); moves the
    cursor."""
    budget = chat_settings().watchdog_max_reads
    cursor = Cursor.model_validate(store.snapshot_data(CURSOR_PATH) or {})
    experiments = _experiments_from(cursor.experiment, budget // 2)
    budget -= len(experiments)
    reads: list[Read] = []
    after = dict(cursor.after)
    for served, experiment_id in enumerate(experiments):
        share = max(1, budget // (len(experiments) - served))
        page = _page(experiment_id, after.get(experiment_id, ""), share)
        reads += [Read(experiment_id, snap) for snap in page]
        after[experiment_id] = page[-1].id if len(page) == share else ""  # at the end: over
        cursor.experiment = experiment_id
        budget -= max(1, len(page))
        if budget <= 0:
            break
    cursor.after = {e: a for e, a in after.items() if a}
    store.ref(CURSOR_PATH).set(cursor.model_dump())
    return reads


def _experiments_from(last: str, limit: int) -> list[str]:
    """Up to ``limit`` experiment ids, in order, starting after ``last`` and going round."""
    first = _experiment_ids(after=last, limit=limit)
    if len(first) < limit and last:
        first += _experiment_ids(after="", limit=limit - len(first))
    return list(dict.fromkeys(first))


def _experiment_ids(after: str, limit: int) -> list[str]:
    experiments = store.db().collection("experiments")
    query: Any = experiments
    if after:
        query = query.where(
            filter=firestore.FieldFilter("__name__", ">", experiments.document(after))
        )
    return [snap.id for snap in query.select([]).limit(limit).get()]


def _page(experiment_id: str, after: str, limit: int) -> list[Any]:
    """Up to ``limit`` participants in progress of the experiment, after ``after`` (by id)."""
    participants = store.participants(experiment_id)
    query: Any = participants.where(
        filter=firestore.FieldFilter("currentStatus", "==", ParticipantStatus.IN_PROGRESS.value)
    )
    if after:  # the id order a single-field index keeps: no composite index needed
        query = query.where(
            filter=firestore.FieldFilter("__name__", ">", participants.document(after))
        )
    return list(query.limit(limit).get())
