"""Stage locks: a cohort's stage unlocks when enough of its participants have reached it."""

from __future__ import annotations

from typing import Any

from google.cloud import firestore
from google.cloud.firestore_v1.field_path import FieldPath
from pydantic import ValidationError

from functions import store
from shared.models import (
    ACTIVE_STATUSES,
    CohortConfig,
    ParticipantProfile,
    ParticipantStatus,
    StageConfig,
)


def cohort_members(
    experiment_id: str, cohort_id: str, transaction: Any = None
) -> list[ParticipantProfile]:
    """Active participants of the cohort plus those transferring into it (DL's count)."""
    col = store.participants(experiment_id)
    active = col.where(filter=firestore.FieldFilter("currentCohortId", "==", cohort_id)).where(
        filter=firestore.FieldFilter("currentStatus", "in", [s.value for s in ACTIVE_STATUSES])
    )
    incoming = col.where(filter=firestore.FieldFilter("transferCohortId", "==", cohort_id)).where(
        filter=firestore.FieldFilter(
            "currentStatus", "==", ParticipantStatus.TRANSFER_PENDING.value
        )
    )
    members: dict[str, ParticipantProfile] = {}
    for query in (active, incoming):
        for snap in query.get(transaction=transaction):
            try:
                members[snap.id] = ParticipantProfile.model_validate(
                    {"privateId": snap.id, **snap.to_dict()}
                )
            except ValidationError:
                continue  # a malformed profile is reported by its own trigger
    return list(members.values())


def stage_ready(stage: StageConfig, members: list[ParticipantProfile]) -> bool:
    """Deliberate Lab's updateCohortStageUnlocked condition."""
    progress = stage.progress
    if progress.min_participants > len(members):
        return False
    ready = sum(
        1
        for m in members
        if not (
            m.current_stage_id == stage.id
            and m.current_status == ParticipantStatus.TRANSFER_PENDING
        )
        and m.timestamps.start_experiment is not None
        and stage.id in m.timestamps.ready_stages
    )
    if progress.wait_for_all_participants:
        return ready >= len(members)
    return ready >= progress.min_participants


def unlock_if_ready(experiment_id: str, cohort_id: str, stage_id: str) -> bool:
    """Unlock the stage in the cohort if its condition holds; True if this call unlocked it.

    Called after the caller's own participant write committed, so of any participants arriving
    at once, the last check sees them all. Unlocking is monotonic (a stage is never locked
    again), so no transaction is needed: a transaction here would lock every member's document
    and make arrivals contend with each other. The write fires the cohort trigger, which wakes
    the agents waiting there.
    """
    cohort = store.read(CohortConfig, store.cohort_path(experiment_id, cohort_id))
    if cohort.stage_unlock_map.get(stage_id):
        return False
    stage = store.read_stage(experiment_id, stage_id)
    if not stage_ready(stage, cohort_members(experiment_id, cohort_id)):
        return False
    store.ref(store.cohort_path(experiment_id, cohort_id)).update(
        {FieldPath("stageUnlockMap", stage_id).to_api_repr(): True}
    )
    return True


def initial_unlock_map(stages: list[StageConfig]) -> dict[str, bool]:
    """Stages open from the start: no minimum and no waiting for everyone."""
    return {
        s.id: True
        for s in stages
        if s.progress.min_participants == 0 and not s.progress.wait_for_all_participants
    }
