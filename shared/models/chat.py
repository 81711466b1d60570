"""Chat messages and mediators."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from shared.models._base import DocModel, Timestamp
from shared.models.agent import ProfileBase
from shared.models.participant import ProfileAgentConfig


class UserType(StrEnum):
    PARTICIPANT = "participant"
    MEDIATOR = "mediator"
    EXPERIMENTER = "experimenter"
    SYSTEM = "system"
    UNKNOWN = "unknown"


class ChatMessage(DocModel):
    id: str
    discussion_id: str | None = None
    type: UserType = UserType.PARTICIPANT
    message: str = ""
    timestamp: Timestamp | None = None
    profile: ProfileBase = Field(default_factory=ProfileBase)
    sender_id: str = ""
    agent_id: str = ""
    explanation: str = ""
    is_error: bool = False
    reaction_map: dict[str, Any] = {}


class MediatorStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    DELETED = "deleted"


class MediatorProfile(DocModel):
    type: str = "mediator"
    name: str | None = None
    avatar: str | None = None
    pronouns: str | None = None
    public_id: str = ""
    private_id: str
    current_status: MediatorStatus = MediatorStatus.ACTIVE
    current_cohort_id: str = ""
    active_stage_map: dict[str, bool] = {}
    agent_config: ProfileAgentConfig | None = None
