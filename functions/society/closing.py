"""Closing a day exactly once, shard by shard, so that no invocation handles more than
``DLAB_SOCIETY_CLOSE_SHARD_SIZE`` members.

A claim (a conditional write on the day document) moves the day from ``open`` to ``closing``
and fixes the interventions it applies and its shards (contiguous ranges of member ids), then
publishes one message per shard. Each shard's phase is a unit of work with its own lease and
attempts (``functions.society.shard``). The phases are ``act``, ``need`` (only with an
allocation law) and ``settle``; the shard that finds every result of a phase in (a count) runs
the society-level step (``shared.society.shards``: a few numbers per shard), writes its plan
and moves the day to the next phase with a conditional write: of shards finishing at once, one
wins. After ``settle`` the finish (a unit under the day's own lease) writes the next day's
context, the proposals and the summary, marks the day closed and the next one ready in one
conditional batch, and opens it.

Whatever dies, the watchdog's run of the close (``run``) pushes it on: each shard of the
current phase with no result and no live lease is published again, a phase whose results are
all in is joined, a finish is run again. Every write is a deterministic set, so a re-run writes
the same documents. A unit that keeps failing ends after its attempts: the society is marked
``failed`` (one error record under ``societies/{s}/errors``), and nothing re-drives it until
the researcher sets it running again (``rearm``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from google.cloud import firestore
from pydantic import BaseModel

from functions import leases, store, work
from functions.society import docs, shard
from functions.society.settings import society_settings
from functions.society.wire import CloseShard, publish_shards
from shared.models import now
from shared.society import paths as sp
from shared.society import shards
from shared.society.models import Day, DaySummary, Society, SocietySettings

log = logging.getLogger(__name__)

SHARD_PHASES = ("act", "need", "settle")
Then = Callable[[shards.Final], object]
"""Opening the next day, with the outcome of the finish that closed this one."""
D = TypeVar("D", bound=BaseModel)


def lease(s: str, day: int) -> str:
    """The finish's lease (the day's own)."""
    return sp.sub(s, sp.CLOSE_LEASE, day=sp.day_id(day))


def shard_lease(s: str, day: int, phase: str, k: int) -> str:
    return sp.sub(s, sp.CLOSE_LEASE, day=f"{sp.day_id(day)}-{phase}-{k:05d}")


def start(s: str, day: int) -> None:
    """Start the close of an open day (the caller saw that it may close): claim it and publish
    its shards. A close already started is left to its shards (and the watchdog)."""
    current = docs.read_day(s, day)
    if current is None or current.status != "open":
        return
    claimed = _claim(s, current)
    if claimed is not None:
        publish(s, claimed, "act", list(range(claimed.shards)))


def run(s: str, day: int, then: Then) -> None:
    """The watchdog's (and a resume's) run: start the close of an open day, or push an
    unfinished one on."""
    current = docs.read_day(s, day)
    if current is None:
        return
    if current.status == "open":
        start(s, day)
    elif current.status == "closing" and current.phase == "finish":
        finish(s, day, then)
    elif current.status == "closing" and current.phase in SHARD_PHASES:
        _redrive(s, current, then)


def _claim(s: str, current: Day) -> Day | None:
    """A close starts once every expected action is in (no more can come) or at the deadline
    (a later one is late). It reads no member: the shards do."""
    interventions = store.db().collection(sp.collection(s, sp.INTERVENTION, interventionId="x"))
    pending = sorted(
        snap.id
        for snap in interventions.stream()
        if (snap.to_dict() or {}).get("appliedDay") is None
    )
    size = society_settings().society_close_shard_size
    count = len(shards.ranges(docs.day_context(s, current.day).agents, size))

    def decide(current: Day | None) -> dict[str, Any] | None:
        if current is None or current.status != "open":
            return None
        return {
            "status": "closing",
            "closingAt": now(),
            "phase": "act",
            "phaseAt": now(),
            "shardSize": size,
            "shards": count,
            "interventionIds": pending,
        }

    return docs.change_day(s, current.day, decide)


def publish(s: str, day: Day, phase: str, which: list[int]) -> None:
    publish_shards([CloseShard(society_id=s, day=day.day, phase=phase, shard=k) for k in which])


def run_shard(message: CloseShard, then: Then) -> work.State | None:
    """One shard's phase, as a unit of work; then, if it was the phase's last, the join. None
    when the message is stale (the day moved on)."""
    s, k, phase = message.society_id, message.shard, message.phase
    day = docs.read_day(s, message.day)
    if day is None or day.status != "closing" or day.phase != phase or k >= day.shards:
        return None

    def work_it() -> None:
        shard.run(s, day, phase, k)
        advance(s, day.day, phase, then)

    unit = work.Unit(
        shard_lease(s, day.day, phase, k),
        docs.day_path(s, day.day),
        work_it,
        ended=lambda failure: fail_society(s, day.day, failure),
    )
    return work.run(unit).state


def advance(s: str, day: int, phase: str, then: Then) -> None:
    """If every shard's result of ``phase`` is in: the society-level step, and the next phase
    (one caller moves the day; the others find it moved)."""
    current = docs.read_day(s, day)
    if current is None or current.status != "closing" or current.phase != phase:
        return
    if _count(s, day, phase) < current.shards:
        return
    after = _join(s, current, phase)

    def decide(now_: Day | None) -> dict[str, Any] | None:
        if now_ is None or now_.status != "closing" or now_.phase != phase:
            return None
        return {"phase": after, "phaseAt": now()}

    moved = docs.change_day(s, day, decide)
    if moved is None:
        return
    log.info("society %s: day %d close: %s done, %s next", s, day, phase, after)
    if after == "finish":
        finish(s, day, then)
    else:
        publish(s, moved, after, list(range(moved.shards)))


def _join(s: str, day: Day, phase: str) -> str:
    """The society-level step after ``phase``: its plan written (the same by whoever writes
    it: a function of the shards' results), and the phase that follows."""
    if phase == "settle":
        return "finish"
    if phase == "need":
        plan = shard.read_plan(s, day.day, "act")
        lacks = _results(s, day.day, "need", shards.NeedDigest)
        _write_plan(s, day.day, "need", shards.with_budgets(plan, lacks))
        return "settle"
    context = docs.day_context(s, day.day)
    plan = shards.plan(
        day.day,
        day.settings or SocietySettings(),
        context,
        docs.read_interventions(s, day.intervention_ids),
        _results(s, day.day, "act", shards.ActDigest),
        context.agents,
    )
    _write_plan(s, day.day, "act", plan)
    return "need" if plan.net else "settle"


def _write_plan(s: str, day: int, after: str, plan: shards.Plan) -> None:
    store.ref(shard.part_path(s, day, f"plan-{after}")).set(docs.model_doc(plan))


def _phase_query(s: str, day: int, phase: str) -> Any:
    ref = store.db().collection(sp.collection(s, sp.CLOSE_PART, day=sp.day_id(day), part="x"))
    return ref.where(filter=firestore.FieldFilter("phase", "==", phase))


def _count(s: str, day: int, phase: str) -> int:
    return int(_phase_query(s, day, phase).count().get()[0][0].value)


def _results(s: str, day: int, phase: str, model: type[D]) -> list[D]:
    return [
        model.model_validate(snap.to_dict() or {}) for snap in _phase_query(s, day, phase).stream()
    ]


def _redrive(s: str, day: Day, then: Then) -> None:
    """The shards of the current phase with no result and nobody at them, published again from
    ``redriveS`` after the phase started; a phase whose results are all in (its joiner died),
    joined."""
    phase = day.phase
    refs = [
        store.ref(shard.part_path(s, day.day, shard.result_id(phase, k))) for k in range(day.shards)
    ]
    missing = [k for k, snap in enumerate(store.db().get_all(refs)) if not snap.exists]
    if not missing:
        advance(s, day.day, phase, then)
        return
    redrive_s = day.settings.redrive_s if day.settings else 30.0
    if day.phase_at is not None and (now() - day.phase_at).total_seconds() < redrive_s:
        return
    held = store.db().get_all([store.ref(shard_lease(s, day.day, phase, k)) for k in missing])
    live = {snap.reference.path for snap in held if leases.live(snap)}
    stranded = [k for k in missing if shard_lease(s, day.day, phase, k) not in live]
    if stranded:
        publish(s, day, phase, stranded)


def finish(s: str, day: int, then: Then) -> work.State:
    unit = work.Unit(
        lease(s, day),
        docs.day_path(s, day),
        lambda: _finish(s, day, then),
        ended=lambda failure: fail_society(s, day, failure),
    )
    return work.run(unit).state


def _finish(s: str, day: int, then: Then) -> None:
    current = docs.read_day(s, day)
    if current is None or current.status != "closing" or current.phase != "finish":
        return
    settings = current.settings or SocietySettings()
    plan = shard.current_plan(s, day)
    final = shards.finish(
        day,
        settings,
        docs.day_context(s, day),
        docs.read_interventions(s, current.intervention_ids),
        plan,
        _results(s, day, "settle", shards.SettleDigest),
        docs.day_spend(s, day),
    )
    doc = docs.model_doc
    writes = [(docs.state_path(s, day + 1, "context"), doc(final.context))]
    writes += [(sp.sub(s, sp.PROPOSAL, proposalId=p.id), doc(p)) for p in final.proposals]
    writes += [(sp.sub(s, sp.EVENT, eventId=e.id), doc(e)) for e in final.events]
    writes.append((sp.sub(s, sp.SUMMARY, day=sp.day_id(day)), doc(final.summary)))
    docs.write_all(writes)
    docs.mark_applied(s, day, plan.applied)
    if _closed(s, day, final):
        then(final)


def _closed(s: str, day: int, final: shards.Final) -> bool:
    """Mark the day closed and the next one ready, once (a take-over may finish first)."""

    def decide(current: Day | None) -> dict[str, Any] | None:
        if current is None or current.status != "closing":
            return None
        return {"status": "closed", "closedAt": closed_at}

    def also(batch: firestore.WriteBatch) -> None:
        summary = store.ref(sp.sub(s, sp.SUMMARY, day=sp.day_id(day)))
        batch.update(summary, DaySummary.fields(closed_at=closed_at))
        batch.set(store.ref(docs.day_path(s, day + 1)), docs.model_doc(Day(day=day + 1)))

    closed_at = now()
    finished = docs.change_day(s, day, decide, also) is not None
    if finished:
        log.info("society %s: day %d closed (%d active)", s, day, final.summary.active)
    return finished


def fail_society(s: str, day: int, failure: work.Failure) -> None:
    """A unit of the close spent its attempts: the society stops, FAILED, with the cause on
    its own document (the console and ``tools.society --follow`` show it)."""
    fields = {
        "document": failure.document,
        "field": failure.field,
        "reason": failure.reason[:2000],
        "attempts": failure.attempts,
        "day": day,
        "at": now(),
    }
    store.ref(docs.society_path(s)).update(Society.fields(status="failed", failure=fields))
    log.error("society %s failed closing day %d: %s", s, day, failure.reason)


def rearm(s: str, day: int) -> bool:
    """The researcher set a failed society running again: the units of the close's current
    step get a fresh budget."""
    current = docs.read_day(s, day)
    if current is None or current.status != "closing":
        return False
    if current.phase not in SHARD_PHASES:
        return work.rearm(lease(s, day))
    rearmed = [work.rearm(shard_lease(s, day, current.phase, k)) for k in range(current.shards)]
    return any(rearmed)
