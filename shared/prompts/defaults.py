"""DL's default prompt configs: getDefaultParticipantStructuredPrompt for each stage kind and the
mediator chat defaults (utils/src/stages/*.manager.ts), with DL's texts, schemas and retries."""

from __future__ import annotations

from typing import Any

from shared.models import (
    AgentChatSettings,
    CheckQuestion,
    MultipleChoiceQuestion,
    ProfileStage,
    ProfileType,
    RankingStage,
    StageConfig,
    StageKind,
    StructuredOutputConfig,
    StructuredOutputSchema,
    SurveyPerParticipantStage,
    SurveyQuestion,
    SurveyStage,
    TextQuestion,
)
from shared.models.agent import (
    ChatMediatorInstructionsPromptItem,
    ChatParticipantInstructionsPromptItem,
    ChatStructuredOutputConfig,
    ProfileContextPromptItem,
    ProfileInfoPromptItem,
    PromptConfig,
    StageContextPromptItem,
    TextPromptItem,
)
from shared.prompts import constants as c

GENERATION_CONFIG: dict[str, Any] = {
    "includeReasoning": False,
    "disableSafetyFilters": False,
    "customRequestBodyFields": [],
}
"""DL's createModelGenerationConfig() with nothing set."""
ANSWER_RETRIES = 3
"""Corrective turns for a stage answer (DL's default for survey and ranking prompts)."""


def _node(type_: str, description: str | None = None, **fields: Any) -> StructuredOutputSchema:
    return StructuredOutputSchema.model_validate(
        {"type": type_, "description": description, **fields}
    )


def _object(*properties: tuple[str, StructuredOutputSchema]) -> StructuredOutputSchema:
    return _node("OBJECT", properties=[{"name": n, "schema": s} for n, s in properties])


CHAT_OUTPUT_SCHEMA = _object(
    (
        "explanation",
        _node(
            "STRING",
            "1-2 sentences explaining why you are sending this message, or why you are staying "
            "silent, based on your persona and the chat context.",
        ),
    ),
    (
        "shouldRespond",
        _node("BOOLEAN", "True if you will send a message, False if you prefer to stay silent."),
    ),
    ("response", _node("STRING", "Your chat message (empty if you prefer to stay silent).")),
    (
        "readyToEndChat",
        _node(
            "BOOLEAN",
            "Whether or not you completed your goals and are ready to end the conversation.",
        ),
    ),
)


def chat_output_config(schema: StructuredOutputSchema | None = None) -> ChatStructuredOutputConfig:
    """DL's createStructuredOutputConfig(): JSON schema, enabled, appended to the prompt."""
    return ChatStructuredOutputConfig(schema=schema or CHAT_OUTPUT_SCHEMA)


def _question_node(q: SurveyQuestion) -> StructuredOutputSchema:
    if isinstance(q, TextQuestion):
        return _node("STRING", q.question_title)
    if isinstance(q, CheckQuestion):
        return _node("BOOLEAN", q.question_title)
    if isinstance(q, MultipleChoiceQuestion):
        return _node("STRING", q.question_title, enumItems=[o.id for o in q.options])
    return _node("INTEGER", f"{q.question_title} (from {q.lower_value} to {q.upper_value})")


def survey_output_schema(questions: list[SurveyQuestion]) -> StructuredOutputSchema:
    """DL's generateSurveySchema: question id -> answer."""
    return _object(*((q.id, _question_node(q)) for q in questions))


def survey_per_participant_output_schema(questions: list[SurveyQuestion]) -> StructuredOutputSchema:
    """DL's generateSurveyPerParticipantSchema: question id -> [{participantId, answer}]."""
    entries = []
    for q in questions:
        pair = _object(
            (
                "participantId",
                _node(
                    "STRING",
                    "The ID of the participant whom you are answering the question about",
                ),
            ),
            ("answer", _question_node(q)),
        )
        listed = _node(
            "ARRAY",
            "A list of {participantId, answer} items where each item is your answer to the "
            "question regarding a specific participant ID from the list of participants",
            arrayItems=pair,
        )
        entries.append((q.id, listed))
    return _object(*entries)


RANKING_OUTPUT_SCHEMA = _node(
    "ARRAY",
    "An ordered list of IDs ranked from most preferred to least preferred",
    arrayItems=_node("STRING", "The ID of the participant being ranked"),
)


def profile_output_schema(profile_type: str) -> StructuredOutputSchema:
    gendered = profile_type == ProfileType.DEFAULT_GENDERED
    return _object(
        ("name", _node("STRING", "Your first name only (not your full name)")),
        (
            "emoji",
            _node(
                "STRING",
                "A single emoji to be used as your avatar",
                enumItems=list(c.PROFILE_AVATARS) if gendered else None,
            ),
        ),
        (
            "pronouns",
            _node(
                "STRING",
                "Your pronouns (either she/her, he/him, they/them, or something else similar)",
            ),
        ),
    )


def profile_prompt_text(profile_type: str) -> str:
    if profile_type != ProfileType.DEFAULT_GENDERED:
        return c.PROFILE_DEFAULT_PROMPT
    emojis = " ".join(c.PROFILE_AVATARS)
    return f"{c.PROFILE_DEFAULT_PROMPT}{c.DEFAULT_GENDERED_PROMPT_SUFFIX}{emojis}."


def participant_items(text: str | None) -> list[Any]:
    """DL's createDefaultParticipantPrompt(text); without a closing text when ``text`` is None."""
    items: list[Any] = [
        TextPromptItem(text=c.DEFAULT_AGENT_PARTICIPANT_PROMPT_INSTRUCTIONS),
        TextPromptItem(text=c.PARTICIPANT_DESCRIPTION_HEADER),
        ProfileInfoPromptItem(),
        ProfileContextPromptItem(),
        StageContextPromptItem(stage_id=""),
    ]
    return [*items, TextPromptItem(text=text)] if text is not None else items


def items_from_text(text: str, stage_id: str = "") -> list[Any]:
    """DL's createDefaultPromptFromText."""
    return [
        TextPromptItem(text=c.DEFAULT_PROMPT_FROM_TEXT_INTRO),
        ProfileInfoPromptItem(),
        ProfileContextPromptItem(),
        StageContextPromptItem(stage_id=stage_id),
        TextPromptItem(text=text),
    ]


def _answer_config(
    stage: StageConfig,
    prompt: list[Any],
    output: StructuredOutputConfig,
    retries: int = ANSWER_RETRIES,
) -> PromptConfig:
    return PromptConfig(
        id=stage.id,
        type=stage.kind,
        prompt=prompt,
        include_scaffolding_in_prompt=True,
        num_retries=retries,
        generation_config=dict(GENERATION_CONFIG),
        structured_output_config=output,
    )


def chat_config(stage: StageConfig, prompt: list[Any]) -> PromptConfig:
    """DL's createChatPromptConfig: no retries, the chat output schema, default chat settings."""
    return PromptConfig(
        id=stage.id,
        type=stage.kind,
        prompt=prompt,
        include_scaffolding_in_prompt=True,
        num_retries=0,
        generation_config=dict(GENERATION_CONFIG),
        structured_output_config=chat_output_config(),
        chat_settings=AgentChatSettings(),
    )


def default_participant_prompt(stage: StageConfig) -> PromptConfig:
    """DL's default for an agent participant at ``stage``. Kinds DL has none for (agents take no
    model action there) get the participant prompt with the stage context and no response
    format, so their context can still be previewed."""
    if isinstance(stage, SurveyStage):
        output = StructuredOutputConfig(schema=survey_output_schema(stage.questions))
        return _answer_config(stage, participant_items(c.SURVEY_PROMPT_TEXT), output)
    if isinstance(stage, SurveyPerParticipantStage):
        schema = survey_per_participant_output_schema(stage.questions)
        items = participant_items(c.SURVEY_PER_PARTICIPANT_PROMPT_TEXT)
        return _answer_config(stage, items, StructuredOutputConfig(schema=schema))
    if isinstance(stage, RankingStage):
        items = participant_items(c.RANKING_PROMPT_TEXT)
        return _answer_config(stage, items, chat_output_config(RANKING_OUTPUT_SCHEMA))
    if isinstance(stage, ProfileStage):
        items = items_from_text(profile_prompt_text(stage.profile_type), stage.id)
        output = chat_output_config(profile_output_schema(stage.profile_type))
        # DL sends the profile prompt once; a garbled profile reply left the agent nameless,
        # so it gets the same corrective retries as the other answer stages.
        return _answer_config(stage, items, output)
    if stage.kind == StageKind.CHAT:
        return chat_config(
            stage, [*participant_items(None), ChatParticipantInstructionsPromptItem()]
        )
    if stage.kind == StageKind.PRIVATE_CHAT:
        return chat_config(stage, participant_items(c.DEFAULT_AGENT_PARTICIPANT_CHAT_PROMPT))
    return PromptConfig(
        id=stage.id,
        type=stage.kind,
        prompt=participant_items(None),
        generation_config=dict(GENERATION_CONFIG),
    )


def default_mediator_prompt(stage: StageConfig) -> PromptConfig:
    """DL's mediator defaults: group chat (current stage only in the context) and private chat.
    Mediators act only in chats, so any other kind is a ValueError."""
    if stage.kind == StageKind.CHAT:
        return chat_config(
            stage,
            [
                TextPromptItem(text=c.DEFAULT_MEDIATOR_GROUP_CHAT_INTRO),
                ProfileInfoPromptItem(),
                ProfileContextPromptItem(),
                ChatMediatorInstructionsPromptItem(),
                StageContextPromptItem(stage_id=stage.id),
                TextPromptItem(text=c.DEFAULT_MEDIATOR_GROUP_CHAT_TEXT),
            ],
        )
    if stage.kind == StageKind.PRIVATE_CHAT:
        return chat_config(stage, items_from_text(c.DEFAULT_AGENT_PRIVATE_MEDIATOR_CHAT_PROMPT))
    raise ValueError(f"no default mediator prompt for a '{stage.kind}' stage (chats only)")
