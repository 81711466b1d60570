"""Closing a day exactly once, as a unit of work (``functions.work``).

The close holds a short lease renewed while its invocation lives, and counts its attempts in
it. A claim (a conditional write on the day document) moves the day from ``open`` to ``closing``
and fixes the actions and interventions it resolves; the closer resolves the day
(``shared.society.rules``, a pure function of the day's start and those inputs) and writes the
outcome as deterministic sets; a last conditional write marks the day closed and makes the next
one ready. A closer that dies leaves the day ``closing`` and its lease to expire: the watchdog's
next run of the close after that (a tick and one lease) takes it over and writes the same
documents again. A close that keeps failing ends after its attempts: the society is marked
``failed`` with the ``failure`` (one error record under ``societies/{s}/errors``), and nothing
re-drives it until the researcher sets it running again (``rearm``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from functions import documents, errors, store, work
from functions.society import docs
from shared.models import DocumentError, now, parse_document
from shared.society import identity
from shared.society import paths as sp
from shared.society.models import ActionRecord, Day, Intervention, SocietySettings
from shared.society.rules import DayInput, DayOutcome, resolve

log = logging.getLogger(__name__)


def lease(s: str, day: int) -> str:
    return sp.sub(s, sp.CLOSE_LEASE, day=sp.day_id(day))


def run(s: str, day: int, then: Callable[[DayOutcome], object]) -> work.State | None:
    """Close ``day`` under its lease if it is open or a close of it is unfinished; ``then``
    (opening the next day) runs with the outcome of the run that closed it, within the unit.
    None when there was nothing to close (one read: most deliveries of a busy day's last
    actions arrive after it closed)."""
    current = docs.read_day(s, day)
    if current is None or current.status not in ("open", "closing"):
        return None

    def close_then() -> None:
        outcome = close(s, day)
        if outcome is not None:
            then(outcome)

    unit = work.Unit(
        lease(s, day),
        docs.day_path(s, day),
        close_then,
        ended=lambda failure: fail_society(s, day, failure),
    )
    return work.run(unit).state


def fail_society(s: str, day: int, failure: work.Failure) -> None:
    """The close's attempts are spent: the society stops, FAILED, with the cause on its own
    document (the console and ``tools.society --follow`` show it)."""
    fields = {
        "document": failure.document,
        "field": failure.field,
        "reason": failure.reason[:2000],
        "attempts": failure.attempts,
        "day": day,
        "at": now(),
    }
    store.ref(docs.society_path(s)).update({"status": "failed", "failure": fields})
    log.error("society %s failed closing day %d: %s", s, day, failure.reason)


def rearm(s: str, day: int) -> bool:
    """The researcher set a failed society running again: its close gets a fresh budget."""
    return work.rearm(lease(s, day))


def close(s: str, day: int) -> DayOutcome | None:
    """Close ``day`` (a first claim, or a re-run of an unfinished close: the lease makes this
    the only closer); the outcome if this call finished it."""
    claimed = _claim(s, day)
    if claimed is None:
        return None
    outcome = _resolve(s, claimed)
    _write(s, claimed, outcome)
    return outcome if _finish(s, claimed, outcome) else None


def _claim(s: str, day: int) -> Day | None:
    """A close starts once every expected action is in (no more can come) or at the deadline
    (a later one is late); a re-run resolves what the first claim fixed."""
    current = docs.read_day(s, day)
    if current is None or current.status not in ("open", "closing"):
        return None
    if current.status == "closing":
        return current
    found = docs.read_actions(s, current)
    _record(found.errors)
    action_ids = sorted(found.actions)
    interventions = store.db().collection(sp.collection(s, sp.INTERVENTION, interventionId="x"))
    pending = sorted(
        snap.id
        for snap in interventions.stream()
        if (snap.to_dict() or {}).get("appliedDay") is None
    )

    def decide(current: Day | None) -> dict[str, Any] | None:
        if current is None or current.status != "open":
            return None
        return {"status": "closing", "actionIds": action_ids, "interventionIds": pending}

    return docs.change_day(s, day, decide)


def _record(found: list[DocumentError]) -> None:
    """A document under the day's actions that is no action: its record (the same one its
    trigger wrote, if it ran: the record's id is the error's)."""
    for error in found:
        errors.record_error(errors.current_function(), error)


def _read_actions(s: str, day: Day) -> list[ActionRecord]:
    """The actions the claim fixed, read again (a re-run resolves the same) and told apart
    again: one changed since is no action either."""
    refs = [store.ref(docs.action_path(s, day.day, a)) for a in day.action_ids]
    snaps = [snap for snap in (store.db().get_all(refs) if refs else []) if snap.exists]
    found = identity.sort(
        ((snap.reference.path, store.data_of(snap) or {}) for snap in snaps),
        identity.Expected.of(day),
    )
    _record(found.errors)
    return list(found.actions.values())


def _read_interventions(s: str, day: Day) -> list[tuple[str, Intervention]]:
    refs = [store.ref(sp.sub(s, sp.INTERVENTION, interventionId=i)) for i in day.intervention_ids]
    snaps = list(store.db().get_all(refs)) if refs else []
    return documents.valid(
        [snap for snap in snaps if snap.exists],
        lambda path, data: (path.rsplit("/", 1)[1], parse_document(Intervention, path, data)),
    )


def _resolve(s: str, day: Day) -> DayOutcome:
    settings = day.settings or SocietySettings()
    given = DayInput(
        day=day.day,
        settings=settings,
        members=docs.read_snapshots(s, day.day),
        context=docs.read_context(s, day.day),
        votes=docs.read_votes(s, day.day),
        acting=day.acting,
        actions=_read_actions(s, day),
        interventions=_read_interventions(s, day),
        spend=docs.day_spend(s, day.day),
    )
    return resolve(given)


def _writes(s: str, day: int, outcome: DayOutcome) -> list[tuple[str, dict[str, Any]]]:
    nxt = day + 1
    doc = docs.model_doc
    writes = [(docs.snapshot_path(s, nxt, i), doc(m)) for i, m in outcome.members.items()]
    writes += [(sp.sub(s, sp.MEMBER, agentId=i), doc(m)) for i, m in outcome.members.items()]
    writes.append((docs.state_path(s, nxt, "context"), doc(outcome.context)))
    writes.append((docs.state_path(s, nxt, "votes"), doc(outcome.votes)))
    writes += [(sp.sub(s, sp.POST, postId=p.id), doc(p)) for p in outcome.posts]
    writes += [(sp.sub(s, sp.MESSAGE, messageId=m.id), doc(m)) for m in outcome.messages]
    writes += [(sp.sub(s, sp.PROPOSAL, proposalId=p.id), doc(p)) for p in outcome.proposals]
    writes += [(sp.sub(s, sp.EVENT, eventId=e.id), doc(e)) for e in outcome.events]
    writes.append((sp.sub(s, sp.SUMMARY, day=sp.day_id(day)), doc(outcome.summary)))
    return writes


def _write(s: str, day: Day, outcome: DayOutcome) -> None:
    docs.write_all(_writes(s, day.day, outcome))
    for iid, amount in outcome.interventions.items():
        store.ref(sp.sub(s, sp.INTERVENTION, interventionId=iid)).update(
            {"appliedDay": day.day, "appliedAmount": amount}
        )


def _finish(s: str, claimed: Day, outcome: DayOutcome) -> bool:
    """Mark the day closed and the next one ready, once (a take-over may finish first)."""
    day = claimed.day

    def decide(current: Day | None) -> dict[str, Any] | None:
        if current is None or current.status != "closing":
            return None
        return {"status": "closed", "closedAt": closed_at}

    def also(batch: Any) -> None:
        summary = store.ref(sp.sub(s, sp.SUMMARY, day=sp.day_id(day)))
        batch.update(summary, {"closedAt": closed_at})
        batch.set(store.ref(docs.day_path(s, day + 1)), docs.model_doc(Day(day=day + 1)))

    closed_at = now()
    finished = docs.change_day(s, day, decide, also) is not None
    if finished:
        log.info(
            "society %s: day %d closed (%d actions, %d active)",
            s,
            day,
            len(claimed.action_ids),
            outcome.summary.active,
        )
    return finished
