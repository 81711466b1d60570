"""Cohort triggers: wake the agents waiting at a stage that just unlocked."""

from __future__ import annotations

from google.cloud import firestore

from functions import pubsub, store
from functions._events import FirestoreEvent, PubSubEvent
from functions.agents.progression import advance_agent
from functions.registry import AGENT_WAKE_TOPIC
from shared.models import DocumentError, ParticipantStatus


def newly_unlocked(before: dict | None, after: dict | None) -> list[str]:
    old = (before or {}).get("stageUnlockMap") or {}
    new = (after or {}).get("stageUnlockMap") or {}
    return sorted(stage for stage, open_ in new.items() if open_ and not old.get(stage))


def on_cohort_updated(event: FirestoreEvent) -> None:
    """One wake message per waiting agent, so each runs in its own invocation, in parallel."""
    experiment_id, cohort_id = event.params["experimentId"], event.params["cohortId"]
    for stage_id in newly_unlocked(event.before, event.after):
        waiting = (
            store.participants(experiment_id)
            .where(filter=firestore.FieldFilter("currentCohortId", "==", cohort_id))
            .where(filter=firestore.FieldFilter("currentStageId", "==", stage_id))
            .get()
        )
        for snap in waiting:
            data = snap.to_dict()
            if (
                data.get("agentConfig")
                and data.get("currentStatus") == ParticipantStatus.IN_PROGRESS
            ):
                pubsub.publish(
                    AGENT_WAKE_TOPIC,
                    {"experimentId": experiment_id, "participantId": snap.id, "stageId": stage_id},
                )


def on_agent_wake(event: PubSubEvent) -> None:
    payload = event.json()
    try:
        experiment_id, participant_id = payload["experimentId"], payload["participantId"]
    except (KeyError, TypeError) as missing:
        raise DocumentError(
            f"pubsub/{event.topic}/{event.id}", str(missing), "wake message lacks this field"
        ) from None
    advance_agent(experiment_id, participant_id)
