"""Prompts for agents: DL's structured prompts (items, stage context, defaults, structured output)
and the corrective turn.

Everything here is pure: the caller gathers the documents into a PromptContext.
"""

from shared.models.agent import (
    ChatMediatorInstructionsPromptItem,
    ChatParticipantInstructionsPromptItem,
    ChatStructuredOutputConfig,
    ProfileContextPromptItem,
    ProfileInfoPromptItem,
    PromptItem,
    PromptItemGroup,
    ShuffleConfig,
    StageContextPromptItem,
    TextPromptItem,
    parse_prompt_items,
)
from shared.prompts.answer import corrective_turn
from shared.prompts.context import PromptContext
from shared.prompts.defaults import default_mediator_prompt, default_participant_prompt
from shared.prompts.display import StageView, stage_display
from shared.prompts.render import render_prompt, template_variables
from shared.prompts.schema import (
    response_format_block,
    schema_to_json_schema,
    without_should_respond,
)
from shared.prompts.shuffle import shuffle_with_seed
from shared.prompts.templating import PromptError, PromptTemplateError, render_template

__all__ = [
    "ChatMediatorInstructionsPromptItem",
    "ChatParticipantInstructionsPromptItem",
    "ChatStructuredOutputConfig",
    "ProfileContextPromptItem",
    "ProfileInfoPromptItem",
    "PromptContext",
    "PromptError",
    "PromptItem",
    "PromptItemGroup",
    "PromptTemplateError",
    "ShuffleConfig",
    "StageContextPromptItem",
    "StageView",
    "TextPromptItem",
    "corrective_turn",
    "default_mediator_prompt",
    "default_participant_prompt",
    "parse_prompt_items",
    "render_prompt",
    "render_template",
    "response_format_block",
    "schema_to_json_schema",
    "shuffle_with_seed",
    "stage_display",
    "template_variables",
    "without_should_respond",
]
