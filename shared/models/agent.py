"""Agent personas (``agentParticipants``, ``agentMediators``) and their per-stage prompts."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from shared.models._base import DocModel
from shared.models.participant import AgentModelSettings


class ProfileBase(DocModel):
    name: str | None = None
    avatar: str | None = None
    pronouns: str | None = None


class AgentPersona(DocModel):
    id: str
    name: str = ""
    description: str = ""
    type: Literal["participant", "mediator"] = "participant"
    is_default_add_to_cohort: bool = False
    default_profile: ProfileBase = Field(default_factory=ProfileBase)
    default_model_settings: AgentModelSettings = Field(default_factory=AgentModelSettings)


class StructuredOutputSchema(DocModel):
    """Deliberate Lab's schema node (utils/src/structured_output.ts)."""

    type: Literal["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "ENUM"]
    description: str | None = None
    properties: list[StructuredOutputSchemaProperty] | None = None
    array_items: StructuredOutputSchema | None = None
    enum_items: list[str] | None = None


class StructuredOutputSchemaProperty(DocModel):
    name: str
    schema_: StructuredOutputSchema = Field(alias="schema")


class StructuredOutputConfig(DocModel):
    enabled: bool = True
    type: Literal["NONE", "JSON_FORMAT", "JSON_SCHEMA"] = "JSON_SCHEMA"
    schema_: StructuredOutputSchema | None = Field(default=None, alias="schema")
    append_to_prompt: bool = True


class AgentChatSettings(DocModel):
    words_per_minute: float | None = None
    min_messages_before_responding: int = 0
    can_self_trigger_calls: bool = False
    max_responses: int | None = 100
    initial_message: str = ""


class PromptConfig(DocModel):
    """A persona's prompt for one stage: ``agentParticipants/{id}/prompts/{stageId}``."""

    id: str
    type: str
    prompt: list[dict[str, Any]] = []
    include_scaffolding_in_prompt: bool = True
    num_retries: int | None = 0
    generation_config: dict[str, Any] = {}
    structured_output_config: StructuredOutputConfig | None = None
    chat_settings: AgentChatSettings | None = None


StructuredOutputSchema.model_rebuild()
