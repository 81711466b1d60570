"""Closing a day exactly once.

A claim (a transaction on the day document) moves it from ``open`` to ``closing`` and fixes the
actions and interventions it resolves; the claimer resolves the day (``shared.society.rules``,
a pure function of the day's start and those inputs) and writes the outcome as deterministic
sets; a last transaction marks the day closed and makes the next one ready. An invocation that
dies mid-close leaves a claim that expires; the watchdog takes it over and writes the same
documents again.
"""

from __future__ import annotations

import logging
import os
import uuid
from datetime import timedelta
from typing import Any

from functions import documents, store
from functions.society import docs
from shared.models import now, parse_document
from shared.society import paths as sp
from shared.society.models import ActionRecord, Day, Intervention, SocietySettings
from shared.society.rules import DayInput, DayOutcome, resolve

log = logging.getLogger(__name__)
CLOSE_LEASE_ENV = "DLAB_SOCIETY_CLOSE_LEASE_S"
DEFAULT_CLOSE_LEASE_S = 120.0
"""A close whose invocation died is taken over by the watchdog after this."""


def claim_ttl() -> timedelta:
    return timedelta(seconds=float(os.environ.get(CLOSE_LEASE_ENV, DEFAULT_CLOSE_LEASE_S)))


def close(s: str, day: int, *, takeover: bool = False) -> DayOutcome | None:
    """Close ``day`` if this call wins the claim (or takes over an expired one); the outcome
    if this call closed it."""
    claimed = _claim(s, day, takeover)
    if claimed is None:
        return None
    outcome = _resolve(s, claimed)
    _write(s, claimed, outcome)
    return outcome if _finish(s, claimed, outcome) else None


def _claim(s: str, day: int, takeover: bool) -> Day | None:
    """Read outside the conditional write: a close starts once every expected action is in (no
    more can come) or at the deadline (a later one is late). A day already claimed (most action
    deliveries of a busy day arrive after the last action was written) costs one read."""
    if not _claimable(docs.read_day(s, day), takeover):
        return None
    action_ids = sorted(ref.id for ref in docs.actions_collection(s, day).list_documents())
    interventions = store.db().collection(sp.collection(s, sp.INTERVENTION, interventionId="x"))
    pending = sorted(
        snap.id
        for snap in interventions.stream()
        if (snap.to_dict() or {}).get("appliedDay") is None
    )

    def decide(current: Day | None) -> dict[str, Any] | None:
        if current is None or not _claimable(current, takeover):
            return None
        update: dict[str, Any] = {
            "status": "closing",
            "closingToken": uuid.uuid4().hex,
            "closingExpires": now() + claim_ttl(),
        }
        if current.status == "open":  # the first claim fixes what the close resolves
            update["actionIds"] = action_ids
            update["interventionIds"] = pending
        return update

    return docs.change_day(s, day, decide)


def _claimable(current: Day | None, takeover: bool) -> bool:
    """Open (a first claim), or closing with an expired claim (a take-over)."""
    if current is None:
        return False
    if current.status == "open":
        return not takeover
    expired = current.closing_expires is None or current.closing_expires <= now()
    return current.status == "closing" and expired


def _read_actions(s: str, day: Day) -> list[ActionRecord]:
    refs = [store.ref(docs.action_path(s, day.day, a)) for a in day.action_ids]
    snaps = list(store.db().get_all(refs)) if refs else []
    return documents.valid(
        [snap for snap in snaps if snap.exists],
        lambda path, data: parse_document(ActionRecord, path, data),
    )


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
