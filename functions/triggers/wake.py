"""Waking agents: when a stage unlocks, and when a document they were blocked on is written.

A wake is one Pub/Sub message per agent, so each agent moves in its own invocation, in parallel,
and a function never loops over many model calls.
"""

from __future__ import annotations

from typing import Any

from google.cloud import firestore

from functions import reads, store, work
from functions._events import FirestoreEvent, PubSubEvent
from functions.agents.progression import Seen
from functions.triggers.advance import advance
from functions.wire import AgentWake, publish_wakes
from shared.models import ParticipantStatus

BLOCKED_ON = "agentBlockedOn.document"
_WAKEABLE = (ParticipantStatus.IN_PROGRESS.value, ParticipantStatus.TRANSFER_PENDING.value)
_WAKE_FIELDS = ["agentConfig", "currentStatus", "currentCohortId", "currentStageId"]
"""Who to wake, and where it is (the wake reads its cohort and stage with it)."""


def newly_unlocked(before: dict | None, after: dict | None) -> list[str]:
    old = (before or {}).get("stageUnlockMap") or {}
    new = (after or {}).get("stageUnlockMap") or {}
    return sorted(stage for stage, open_ in new.items() if open_ and not old.get(stage))


def _persona(config: Any) -> str:
    """The persona an ``agentConfig`` names ('' if none, or not a map)."""
    persona = config.get("agentId") if isinstance(config, dict) else None
    return persona if isinstance(persona, str) else ""


def wake_agents(experiment_id: str, reason: str, **where: str) -> int:
    """Publish a wake for every unfinished agent participant matching ``where`` (field == value).
    Agents selected by the document they are blocked on are re-armed: that write is a fix for
    them, so a move that ended after its attempts runs again. (``where`` holds only filters: the
    index scanner reads every keyword at the call sites as a queried field.)"""
    query: Any = store.participants(experiment_id)
    for field, value in where.items():  # field paths may contain dots
        query = query.where(filter=firestore.FieldFilter(field, "==", value))
    seen_at = {
        snap.id: (
            str(data.get("currentCohortId") or ""),
            str(data.get("currentStageId") or ""),
            _persona(data.get("agentConfig")),
        )
        for snap in query.select(_WAKE_FIELDS).get()
        if (data := snap.to_dict()).get("agentConfig")
        and data.get("currentStatus", "IN_PROGRESS") in _WAKEABLE
    }
    if BLOCKED_ON in where:
        for participant_id in seen_at:
            work.rearm(store.move_lease_path(experiment_id, participant_id))
    publish_wakes(experiment_id, reason, *seen_at, seen_at=seen_at)
    return len(seen_at)


def wake_blocked(event: FirestoreEvent) -> int:
    """Wake the agents marked as blocked on the document just written (created or fixed)."""
    if event.after is None:
        return 0
    return wake_agents(
        event.params["experimentId"],
        f"{event.document} written",
        **{BLOCKED_ON: event.document},
    )


def on_cohort_written(event: FirestoreEvent) -> None:
    """A stage unlocked: wake the agents waiting there; and any agent blocked on the cohort."""
    experiment_id, cohort_id = event.params["experimentId"], event.params["cohortId"]
    wake_blocked(event)
    if event.before is None or event.after is None:
        return
    for stage_id in newly_unlocked(event.before, event.after):
        wake_agents(
            experiment_id,
            f"stage {stage_id} unlocked",
            currentCohortId=cohort_id,
            currentStageId=stage_id,
        )


def on_blocking_document_written(event: FirestoreEvent) -> None:
    """A stage or the experiment was written: agents blocked on it try again (and this
    instance forgets its kept copy of it)."""
    reads.drop_config(event.document)
    wake_blocked(event)


def on_agent_wake(event: PubSubEvent) -> None:
    wake = event.message(AgentWake)
    seen = Seen.of(
        {
            "currentCohortId": wake.cohort_id,
            "currentStageId": wake.stage_id,
            "agentConfig": {"agentId": wake.agent_id},
        }
    )
    advance(wake.experiment_id, wake.participant_id, seen)  # ProviderUnavailable: retried
