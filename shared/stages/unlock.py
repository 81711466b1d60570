"""When a cohort's stage unlocks (Deliberate Lab's updateCohortStageUnlocked). Pure: the
functions apply it to the members they read; templates and tools set up the initial map."""

from __future__ import annotations

from collections.abc import Sequence

from shared.models import ParticipantProfile, ParticipantStatus, StageConfig


def stage_ready(stage: StageConfig, members: Sequence[ParticipantProfile]) -> bool:
    """Deliberate Lab's updateCohortStageUnlocked condition."""
    progress = stage.progress
    if progress.min_participants > len(members):
        return False
    ready = sum(1 for m in members if arrived(stage, m))
    if progress.wait_for_all_participants:
        return ready >= len(members)
    return ready >= progress.min_participants


def arrived(stage: StageConfig, member: ParticipantProfile) -> bool:
    """Whether ``member`` counts as at the stage for its lock."""
    return (
        not (
            member.current_stage_id == stage.id
            and member.current_status == ParticipantStatus.TRANSFER_PENDING
        )
        and member.timestamps.start_experiment is not None
        and stage.id in member.timestamps.ready_stages
    )


def initial_unlock_map(stages: Sequence[StageConfig]) -> dict[str, bool]:
    """Stages open from the start: no minimum and no waiting for everyone."""
    return {
        s.id: True
        for s in stages
        if s.progress.min_participants == 0 and not s.progress.wait_for_all_participants
    }
