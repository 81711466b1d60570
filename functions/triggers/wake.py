"""Waking agents: when a stage unlocks, and when a document they were blocked on is written.

A wake is one Pub/Sub message per agent, so each agent moves in its own invocation, in parallel,
and a function never loops over many model calls.
"""

from __future__ import annotations

from typing import Any

from google.cloud import firestore

from functions import pubsub, store
from functions._events import FirestoreEvent, PubSubEvent
from functions.agents.progression import advance_agent
from functions.registry import AGENT_WAKE_TOPIC
from shared.models import DocumentError, ParticipantStatus

_WAKEABLE = (ParticipantStatus.IN_PROGRESS.value, ParticipantStatus.TRANSFER_PENDING.value)


def newly_unlocked(before: dict | None, after: dict | None) -> list[str]:
    old = (before or {}).get("stageUnlockMap") or {}
    new = (after or {}).get("stageUnlockMap") or {}
    return sorted(stage for stage, open_ in new.items() if open_ and not old.get(stage))


def wake_agents(experiment_id: str, reason: str, **where: str) -> int:
    """Publish a wake for every unfinished agent participant matching ``where`` (field == value)."""
    query: Any = store.participants(experiment_id)
    for field, value in where.items():
        query = query.where(filter=firestore.FieldFilter(field, "==", value))
    woken = 0
    for snap in query.get():
        data = snap.to_dict()
        if data.get("agentConfig") and data.get("currentStatus") in _WAKEABLE:
            payload = {"experimentId": experiment_id, "participantId": snap.id, "reason": reason}
            pubsub.publish(AGENT_WAKE_TOPIC, payload)
            woken += 1
    return woken


def on_cohort_written(event: FirestoreEvent) -> None:
    """A stage unlocked: wake the agents waiting there. A cohort created after its agents (a
    console edit in any order): wake all of them."""
    experiment_id, cohort_id = event.params["experimentId"], event.params["cohortId"]
    if event.after is None:
        return
    if event.before is None:
        wake_agents(experiment_id, "cohort created", currentCohortId=cohort_id)
        return
    for stage_id in newly_unlocked(event.before, event.after):
        wake_agents(
            experiment_id,
            f"stage {stage_id} unlocked",
            currentCohortId=cohort_id,
            currentStageId=stage_id,
        )


def on_stage_written(event: FirestoreEvent) -> None:
    """A stage document created or fixed: agents blocked on it try again."""
    if event.after is not None:
        stage_id = event.params["stageId"]
        wake_agents(
            event.params["experimentId"], f"stage {stage_id} written", currentStageId=stage_id
        )


def on_experiment_written(event: FirestoreEvent) -> None:
    """An experiment created after its participants, or its stage list changed."""
    before, after = event.before or {}, event.after
    if after is not None and (
        event.before is None or before.get("stageIds") != after.get("stageIds")
    ):
        wake_agents(event.params["experimentId"], "experiment written")


def on_agent_wake(event: PubSubEvent) -> None:
    payload = event.json()
    try:
        experiment_id, participant_id = payload["experimentId"], payload["participantId"]
    except (KeyError, TypeError) as missing:
        raise DocumentError(
            f"pubsub/{event.topic}/{event.id}", str(missing), "wake message lacks this field"
        ) from None
    advance_agent(experiment_id, participant_id)
