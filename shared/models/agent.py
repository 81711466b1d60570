"""Agent personas (``agentParticipants``, ``agentMediators``) and their per-stage prompts."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator

from shared.models._base import Count, DocModel
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


class ChatStructuredOutputConfig(StructuredOutputConfig):
    """DL's ChatMediatorStructuredOutputConfig: which schema fields carry the chat decision."""

    should_respond_field: str = "shouldRespond"
    message_field: str = "response"
    explanation_field: str = "explanation"
    ready_to_end_field: str = "readyToEndChat"


class AgentChatSettings(DocModel):
    words_per_minute: float | None = Field(default=None, ge=0)
    """0 or None: no typing delay."""
    min_messages_before_responding: Count = 0
    can_self_trigger_calls: bool = False
    max_responses: Count | None = 100
    initial_message: str = ""


# Prompt items (DL's utils/src/structured_prompt.ts). ``condition`` is kept as stored.


class _PromptItemBase(DocModel):
    condition: dict[str, Any] | None = None


class TextPromptItem(_PromptItemBase):
    type: Literal["TEXT"] = "TEXT"
    text: str


class ProfileInfoPromptItem(_PromptItemBase):
    type: Literal["PROFILE_INFO"] = "PROFILE_INFO"


class ProfileContextPromptItem(_PromptItemBase):
    type: Literal["PROFILE_CONTEXT"] = "PROFILE_CONTEXT"


class StageContextPromptItem(_PromptItemBase):
    """Defaults are DL's createDefaultStageContextPromptItem; an empty stageId means every stage
    up to and including the current one."""

    type: Literal["STAGE_CONTEXT"] = "STAGE_CONTEXT"
    stage_id: str = ""
    include_primary_text: bool = True
    include_info_text: bool = False
    include_help_text: bool = False  # deprecated in DL, never rendered
    include_stage_display: bool = True  # deprecated in DL: the display is always rendered
    include_participant_answers: bool = True


class ShuffleConfig(DocModel):
    shuffle: bool = False
    seed: Literal["experiment", "cohort", "participant", "custom"] = "participant"
    custom_seed: str = ""


class PromptItemGroup(_PromptItemBase):
    type: Literal["GROUP"] = "GROUP"
    title: str = ""
    items: list[PromptItem] = []
    shuffle_config: ShuffleConfig | None = None

    @field_validator("items", mode="before")
    @classmethod
    def _known_items(cls, value: Any) -> Any:
        return parse_prompt_items(value) if isinstance(value, list) else value


class ChatMediatorInstructionsPromptItem(_PromptItemBase):
    type: Literal["CHAT_MEDIATOR_INSTRUCTIONS"] = "CHAT_MEDIATOR_INSTRUCTIONS"


class ChatParticipantInstructionsPromptItem(_PromptItemBase):
    type: Literal["CHAT_PARTICIPANT_INSTRUCTIONS"] = "CHAT_PARTICIPANT_INSTRUCTIONS"


PromptItem = Annotated[
    TextPromptItem
    | ProfileInfoPromptItem
    | ProfileContextPromptItem
    | StageContextPromptItem
    | PromptItemGroup
    | ChatMediatorInstructionsPromptItem
    | ChatParticipantInstructionsPromptItem,
    Field(discriminator="type"),
]

PROMPT_ITEM_TYPES: dict[str, type[_PromptItemBase]] = {
    model.model_fields["type"].default: model
    for model in (
        TextPromptItem,
        ProfileInfoPromptItem,
        ProfileContextPromptItem,
        StageContextPromptItem,
        PromptItemGroup,
        ChatMediatorInstructionsPromptItem,
        ChatParticipantInstructionsPromptItem,
    )
}


def parse_prompt_items(raw: list[Any], prefix: str = "") -> list[Any]:
    """Validate stored prompt items one by one, so a bad item is named by its position and type
    (``prompt item 2 (FOO): unknown prompt item type``; nested: ``prompt item 3.0 (TEXT)``)
    instead of a bare union error."""
    items: list[Any] = []
    for index, entry in enumerate(raw):
        if isinstance(entry, _PromptItemBase):
            items.append(entry)
            continue
        kind = entry.get("type") if isinstance(entry, dict) else None
        name = f"prompt item {prefix}{index} ({kind if isinstance(kind, str) else repr(kind)})"
        model = PROMPT_ITEM_TYPES.get(kind) if isinstance(kind, str) else None
        if model is None:
            known = ", ".join(PROMPT_ITEM_TYPES)
            raise ValueError(f"{name}: unknown prompt item type (expected one of {known})")
        if model is PromptItemGroup and isinstance(entry.get("items"), list):
            entry = {**entry, "items": parse_prompt_items(entry["items"], f"{prefix}{index}.")}
        try:
            items.append(model.model_validate(entry))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "(item)"
            raise ValueError(f"{name}: {field}: {first['msg']}") from None
    return items


MAX_RETRIES = 10
"""Corrective turns per answer: each is a model call, so a typo (1000) must not cost a fortune."""


class PromptConfig(DocModel):
    """A persona's prompt for one stage: ``agentParticipants/{id}/prompts/{stageId}``."""

    id: str
    type: str
    prompt: list[PromptItem] = []
    include_scaffolding_in_prompt: bool = True
    num_retries: Annotated[int, Field(ge=0, le=MAX_RETRIES)] | None = 0
    generation_config: dict[str, Any] = {}
    structured_output_config: StructuredOutputConfig | None = None
    chat_settings: AgentChatSettings | None = None

    @field_validator("prompt", mode="before")
    @classmethod
    def _known_items(cls, value: Any) -> Any:
        return parse_prompt_items(value) if isinstance(value, list) else value

    @field_validator("structured_output_config", mode="before")
    @classmethod
    def _chat_output(cls, value: Any, info: ValidationInfo) -> Any:
        """Chat prompts carry DL's ChatMediatorStructuredOutputConfig (field names)."""
        if isinstance(value, dict) and info.data.get("type") in ("chat", "privateChat"):
            return ChatStructuredOutputConfig.model_validate(value)
        return value


StructuredOutputSchema.model_rebuild()
PromptItemGroup.model_rebuild()
PromptConfig.model_rebuild()
