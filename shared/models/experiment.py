"""Experiment and cohort documents."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from shared.models._base import Count, DocModel, Timestamp


class Metadata(DocModel):
    name: str = ""
    public_name: str = ""
    description: str = ""
    tags: list[str] = []
    creator: str = ""
    starred: dict[str, bool] = {}
    date_created: Timestamp | None = None
    date_modified: Timestamp | None = None


class Permissions(DocModel):
    visibility: str = "private"
    readers: list[str] = []


class CohortParticipantConfig(DocModel):
    min_participants_per_cohort: Count | None = None
    max_participants_per_cohort: Count | None = None
    include_all_participants_in_cohort_count: bool = False


class Experiment(DocModel):
    id: str
    version_id: int = 19
    metadata: Metadata = Field(default_factory=Metadata)
    permissions: Permissions = Field(default_factory=Permissions)
    default_cohort_config: CohortParticipantConfig = Field(default_factory=CohortParticipantConfig)
    prolific_config: dict[str, Any] = {}
    stage_ids: list[str] = []
    cohort_lock_map: dict[str, bool] = {}
    variable_configs: list[dict[str, Any]] = []
    variable_map: dict[str, str] = {}

    @field_validator("stage_ids")
    @classmethod
    def _each_stage_once(cls, ids: list[str]) -> list[str]:
        """A stage listed twice makes a cycle: an agent past it would be sent back to it and
        stall there, silently, at a stage it completed."""
        problem = repeated_stage(ids)
        if problem:
            raise ValueError(problem)
        return ids

    def next_stage_id(self, stage_id: str) -> str | None:
        """The stage after ``stage_id``, or None when it is the last one."""
        index = self.stage_ids.index(stage_id)
        return self.stage_ids[index + 1] if index + 1 < len(self.stage_ids) else None


class CohortConfig(DocModel):
    id: str
    alias: str | None = None
    metadata: Metadata = Field(default_factory=Metadata)
    participant_config: CohortParticipantConfig = Field(default_factory=CohortParticipantConfig)
    stage_unlock_map: dict[str, bool] = {}
    variable_map: dict[str, str] = {}


def repeated_stage(ids: list[str]) -> str | None:
    """What is wrong when a stage id comes twice in ``ids``, else None."""
    first: dict[str, int] = {}
    for position, stage_id in enumerate(ids):
        if stage_id in first:
            return (
                f"stage {stage_id!r} is listed twice (positions {first[stage_id]} and "
                f"{position}): each stage comes once"
            )
        first[stage_id] = position
    return None
