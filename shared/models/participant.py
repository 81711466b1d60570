"""Participant profiles (``experiments/{e}/participants/{privateId}``) and agent config."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from shared.models._base import DocModel, Timestamp


class ParticipantStatus(StrEnum):
    PAUSED = "PAUSED"
    ATTENTION_CHECK = "ATTENTION_CHECK"
    IN_PROGRESS = "IN_PROGRESS"
    SUCCESS = "SUCCESS"
    TRANSFER_PENDING = "TRANSFER_PENDING"
    TRANSFER_TIMEOUT = "TRANSFER_TIMEOUT"
    TRANSFER_FAILED = "TRANSFER_FAIL"
    TRANSFER_DECLINED = "TRANSFER_DECLINED"
    ATTENTION_TIMEOUT = "ATTENTION_FAIL"
    BOOTED_OUT = "BOOTED_OUT"
    DELETED = "DELETED"


ACTIVE_STATUSES = (
    ParticipantStatus.IN_PROGRESS,
    ParticipantStatus.SUCCESS,
    ParticipantStatus.ATTENTION_CHECK,
)


class ApiType(StrEnum):
    """Deliberate Lab's ApiKeyType plus SCRIPTED, our offline deterministic model."""

    GEMINI = "GEMINI"
    VERTEX_AI = "VERTEX_AI"
    OPENAI = "OPENAI"
    CLAUDE = "CLAUDE"
    OLLAMA = "OLLAMA"
    SCRIPTED = "SCRIPTED"


class AgentModelSettings(DocModel):
    api_type: ApiType = ApiType.GEMINI
    model_name: str = ""


class ProfileAgentConfig(DocModel):
    agent_id: str = ""  # persona id; '' means default prompts (DL's DEFAULT_AGENT_PARTICIPANT_ID)
    prompt_context: str = ""
    model_settings: AgentModelSettings = Field(default_factory=AgentModelSettings)
    is_inactive_persona: bool | None = None
    """Deliberate Lab's (PR #1171): present in the cohort, never chats, never takes a turn, never
    moves, never counts toward a stage's unlock."""
    representative_of: str | None = None
    """Ours: the private id of the observer this agent represents (docs/AGENTS.md)."""
    persona_hash: str | None = None
    """Deliberate Lab's (PR #1171): the persona bank's match key this agent claims from."""
    persona_id: str | None = None
    """Ours: the persona bank entry (``personas/{id}``) this agent claimed."""


class ProgressTimestamps(DocModel):
    accepted_tos: Timestamp | None = Field(default=None, alias="acceptedTOS")
    start_experiment: Timestamp | None = None
    end_experiment: Timestamp | None = None
    completed_stages: dict[str, Timestamp] = {}
    ready_stages: dict[str, Timestamp] = {}
    cohort_transfers: dict[str, Timestamp] = {}


class ParticipantProfile(DocModel):
    type: Literal["participant"] = "participant"
    name: str | None = None
    avatar: str | None = None
    pronouns: str | None = None
    private_id: str
    public_id: str = ""
    prolific_id: str | None = None
    current_stage_id: str = ""
    current_cohort_id: str = ""
    transfer_cohort_id: str | None = None
    current_status: ParticipantStatus = ParticipantStatus.IN_PROGRESS
    timestamps: ProgressTimestamps = Field(default_factory=ProgressTimestamps)
    anonymous_profiles: dict[str, Any] = {}
    connected: bool | None = None
    agent_config: ProfileAgentConfig | None = None
    variable_map: dict[str, str] = {}
    agent_blocked_on: dict[str, Any] | None = None
    """Ours, not Deliberate Lab's: why the agent cannot move ({document, field, reason}); writing
    that document wakes it. Cleared by the agent's next move."""
    is_observer: bool | None = None
    has_representative: bool | None = None
    other_agent_generation: dict[str, Any] | None = None
    swap_mediator: str | None = None
    """Deliberate Lab's treatment fields (PR #1171), hoisted from ``variableMap`` for the round
    the participant is in (``shared/treatment.py``)."""

    @property
    def is_agent(self) -> bool:
        return self.agent_config is not None

    @property
    def display_name(self) -> str:
        return self.name or self.public_id or self.private_id
