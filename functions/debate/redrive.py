"""Re-driving a debate: the turns of open rounds whose statements are missing (a lost publish,
a killed invocation, a blocked model call), completion checks an invocation died before, and
the start. A touch of the debate document (a user's write) re-drives everything, blocked rounds
included; the watchdog re-drives unfinished debates: rounds open for longer than
``DLAB_DEBATE_STALE_SECONDS`` (default 60) that are not blocked, and a start whose event was
lost."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from google.cloud import firestore

from functions import store
from functions.debate import docs, layers, progress, start
from functions.debate.messages import publish_turns
from shared import paths
from shared.debate import naming
from shared.debate.models import DebateStatus, Layer, Round
from shared.models import now

STALE_ENV = "DLAB_DEBATE_STALE_SECONDS"


def stale_after() -> timedelta:
    return timedelta(seconds=float(os.environ.get(STALE_ENV, "60")))


def redrive(d: str, *, touched: bool) -> int:
    """Turns published again; ``touched``: a user's write (blocked rounds too, no staleness)."""
    if not start.started(d):
        if touched or _lost_start(d):
            start.start(d)
        return 0
    debate = docs.read_debate(d)
    if debate.paused or debate.status == DebateStatus.DONE:
        return 0
    published = 0
    rounds = (
        docs.collection(d, paths.DEBATE_ROUND)
        .where(filter=firestore.FieldFilter("complete", "==", False))
        .stream()
    )
    for snap in rounds:
        rnd = Round.model_validate(snap.to_dict())
        if touched or _stale(rnd):
            published += _redrive_round(d, rnd)
    for snap in (
        docs.collection(d, paths.DEBATE_LAYER)
        .where(filter=firestore.FieldFilter("complete", "==", False))
        .stream()
    ):
        layers.complete_layer(d, Layer.model_validate(snap.to_dict()).index)
    return published


def _lost_start(d: str) -> bool:
    """A debate whose creation event was lost: not started, older than the staleness limit,
    and no error record (a recorded failure waits for a touch instead of retrying each tick)."""
    created = store.ref(docs.debate(d)).get().create_time
    if created is not None and created > now() - stale_after():
        return False
    return not list(docs.collection(d, paths.DEBATE_ERROR).limit(1).stream())


def _stale(rnd: Round) -> bool:
    if rnd.blocked:
        return False  # waits for a touch
    return rnd.created_at is None or rnd.created_at <= now() - stale_after()


def _redrive_round(d: str, rnd: Round) -> int:
    ids = {a: naming.statement_id(rnd.id, a) for a in rnd.agents}
    made = docs.statements(d, list(ids.values()))
    missing = [a for a, i in ids.items() if made[i] is None]
    if not missing:
        step = progress.complete_round(d, rnd.id)
        if step is not None and step.cluster_complete:
            layers.complete_layer(d, rnd.layer)
        return 0
    publish_turns(d, rnd.id, missing)
    return len(missing)


def unfinished_debates() -> list[str]:
    """Debates not done: running ones, and ones that never started (a lost creation event)."""
    col: Any = store.db().collection(paths.DEBATE.rsplit("/", 1)[0])
    done = DebateStatus.DONE.value
    return [
        s.id for s in col.select(["status"]).stream() if (s.to_dict() or {}).get("status") != done
    ]
