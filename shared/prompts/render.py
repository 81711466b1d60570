"""render_prompt: a structured prompt config plus gathered documents -> the prompt text.

Follows DL's processPromptItems and getPromptFromConfig (functions/src/structured_prompt.utils.ts):
items render in order and join with newlines; scaffolding labels stages for participants; the
response format goes last.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from shared.models import ParticipantProfile, StageConfig
from shared.models.agent import (
    ChatMediatorInstructionsPromptItem,
    ChatParticipantInstructionsPromptItem,
    ProfileContextPromptItem,
    ProfileInfoPromptItem,
    PromptConfig,
    PromptItemGroup,
    StageContextPromptItem,
    TextPromptItem,
)
from shared.prompts import constants as c
from shared.prompts.context import PromptContext, display_name, profile_set_id
from shared.prompts.display import StageView, stage_display
from shared.prompts.schema import (
    response_format_block,
    shows_response_format,
    without_should_respond,
)
from shared.prompts.shuffle import shuffle_with_seed
from shared.prompts.stage_text import resolve_stage_text
from shared.prompts.templating import PromptError, experiment_variables, render_template


@dataclasses.dataclass(frozen=True)
class _Run:
    ctx: PromptContext
    scaffolding: bool
    variables: dict[str, Any]


def _document(model: Any) -> dict[str, Any]:
    doc = dict(model.to_firestore())
    doc.pop("privateId", None)  # the document id is no business of the model
    return doc


def template_variables(ctx: PromptContext) -> dict[str, Any]:
    """Jinja names: ``agent`` (whom the prompt is for), ``participant`` (the agent participant,
    or a mediator's private-chat partner), ``profile``, ``experiment``, ``cohort``, ``stage`` (the
    current one), as Firestore documents with DL's camelCase keys; then DL's variables
    (experiment < cohort < participant) as top-level names, which win over those names: in a
    template written for DL, ``{{ stage }}`` means the experiment's variable."""
    partner = ctx.variable_participant()
    names: dict[str, Any] = {
        "agent": _document(ctx.agent),
        "profile": {k: getattr(ctx.agent, k) for k in ("name", "avatar", "pronouns")},
        "experiment": ctx.experiment.to_firestore(),
        "stage": ctx.stage.to_firestore(),
    }
    if partner is not None:
        names["participant"] = _document(partner)
    if ctx.cohort is not None:
        names["cohort"] = ctx.cohort.to_firestore()
    return {**names, **experiment_variables(ctx.experiment, ctx.cohort, partner)}


def _profile_info(run: _Run) -> str:
    agent = run.ctx.agent
    prefix = "Alias: " if run.scaffolding else ""
    if isinstance(agent, ParticipantProfile):
        if not agent.name:
            return "Profile not yet set"
        suffix = f"\n{c.PROFILE_INFO_PARTICIPANT_SCAFFOLDING}" if run.scaffolding else ""
        own = display_name(agent, profile_set_id(run.ctx.stage.id), limit=None)
        return f"{prefix}{own}{suffix}"
    return prefix + " ".join(part for part in (agent.avatar, agent.name) if part)


def _profile_context(run: _Run) -> str:
    agent = run.ctx.agent
    text = agent.agent_config.prompt_context if agent.agent_config else ""
    if not text:
        return ""
    text = render_template(text, run.variables, "promptContext")
    if isinstance(agent, ParticipantProfile) and run.scaffolding:
        return f"Private persona context: {text}\n{c.PROFILE_CONTEXT_PARTICIPANT_SCAFFOLDING}"
    return text


def _stage_block(stage: StageConfig, item: StageContextPromptItem, run: _Run) -> str:
    """DL's getStageContextForPrompt: name, descriptions, then the display (always)."""
    lines = []
    if run.scaffolding:
        lines.append(f"[Stage: {stage.name or stage.id}]")
    d = stage.descriptions
    if item.include_primary_text and d.primary_text.strip():
        lines.append(f"* Stage description: {d.primary_text}")
    if item.include_info_text and d.info_text.strip():
        lines.append(f"* Additional info: {d.info_text}")
    shown = run.ctx.answer_participants() if item.include_participant_answers else []
    display = stage_display(stage, StageView(run.ctx, shown, run.scaffolding))
    if display:
        lines.append(display)
    return "\n".join(lines)


def _stage_context(item: StageContextPromptItem, name: str, run: _Run) -> list[str]:
    ctx = run.ctx
    if item.stage_id:
        ids = [item.stage_id]
    else:  # every stage up to and including the current one
        order = ctx.experiment.stage_ids
        ids = order[: order.index(ctx.stage.id) + 1] if ctx.stage.id in order else []
    label = run.scaffolding and ctx.agent_is_participant
    out = [c.PREVIOUS_STAGES_HEADER] if label else []
    for stage_id in ids:
        stage = ctx.stage if stage_id == ctx.stage.id else ctx.stages.get(stage_id)
        if stage is None:
            raise PromptError(f"{name}: stage '{stage_id}' is not among the context's stages")
        if stage_id == ctx.stage.id and label:
            out.append(c.CURRENT_STAGE_HEADER)
        out.append(_stage_block(resolve_stage_text(stage, run.variables), item, run))
    return out


def _shuffle_seed(group: PromptItemGroup, run: _Run) -> str:
    assert group.shuffle_config is not None
    ctx = run.ctx
    match group.shuffle_config.seed:
        case "experiment":
            return ctx.experiment.id
        case "cohort":
            return ctx.cohort.id if ctx.cohort else ""
        case "participant":
            partner = ctx.variable_participant()
            return (partner or ctx.agent).public_id
        case _:
            return group.shuffle_config.custom_seed


_INSTRUCTIONS: dict[type, tuple[str, str]] = {
    ChatMediatorInstructionsPromptItem: (
        c.DEFAULT_MEDIATOR_GROUP_CHAT_TURN_TAKING_PROMPT_INSTRUCTIONS,
        c.DEFAULT_MEDIATOR_GROUP_CHAT_PROMPT_INSTRUCTIONS,
    ),
    ChatParticipantInstructionsPromptItem: (
        c.DEFAULT_AGENT_PARTICIPANT_CHAT_TURN_TAKING_PROMPT,
        c.DEFAULT_AGENT_PARTICIPANT_CHAT_PROMPT,
    ),
}
"""Chat instruction items: (turn-based text, free chat text)."""


def _is_shuffled(item: Any) -> bool:
    return bool(
        isinstance(item, PromptItemGroup) and item.shuffle_config and item.shuffle_config.shuffle
    )


def _render_group(group: PromptItemGroup, run: _Run, position: str, bare_seed: bool) -> str:
    members = list(group.items)
    if _is_shuffled(group):
        seed = _shuffle_seed(group, run)
        if not bare_seed:  # DL: only the first shuffled group at the top keeps the bare seed
            seed = f"{seed}::{run.ctx.stage.id}::{position}"
        members = shuffle_with_seed(members, seed)
    return _render_items(members, run, f"{position}.")


def _render_item(item: Any, name: str, run: _Run, position: str, bare_seed: bool) -> list[str]:
    """One item's lines (none when it renders empty)."""
    if isinstance(item, TextPromptItem):
        return [render_template(item.text, run.variables, name)]
    if type(item) in _INSTRUCTIONS:
        turn_based, free = _INSTRUCTIONS[type(item)]
        return [turn_based if run.ctx.is_turn_based else free]
    if isinstance(item, ProfileInfoPromptItem):
        return [_profile_info(run)]
    if isinstance(item, StageContextPromptItem):
        return _stage_context(item, name, run)
    if isinstance(item, ProfileContextPromptItem):
        text = _profile_context(run)
    elif isinstance(item, PromptItemGroup):
        text = _render_group(item, run, position, bare_seed)
    else:
        raise PromptError(f"{name}: unknown prompt item type")
    return [text] if text else []


def _render_items(items: Sequence[Any], run: _Run, namespace: str = "") -> str:
    """DL's processPromptItems; ``namespace`` is the nested position mixed into shuffle seeds."""
    first_shuffled = next((i for i, it in enumerate(items) if _is_shuffled(it)), -1)
    out: list[str] = []
    for index, item in enumerate(items):
        name = f"prompt item {namespace}{index} ({item.type})"
        bare_seed = namespace == "" and index == first_shuffled
        out += _render_item(item, name, run, f"{namespace}{index}", bare_seed)
    return "\n".join(out)


def render_prompt(
    config: PromptConfig, ctx: PromptContext, response_schema: dict[str, Any] | None = None
) -> str:
    """The prompt text for ``ctx.agent`` at ``ctx.stage``.

    ``response_schema`` is the JSON Schema shown in the response-format block (e.g.
    ``schema_to_json_schema`` of the config's schema, or a stage answer spec's schema); it is
    shown when the config's structured output is enabled with appendToPrompt. In a turn-based
    chat ``shouldRespond`` is left out of it, as in DL.
    """
    run = _Run(ctx, config.include_scaffolding_in_prompt, template_variables(ctx))
    text = _render_items(config.prompt, run)
    schema = response_schema
    if schema and ctx.is_turn_based:
        schema = without_should_respond(schema)
    if schema and shows_response_format(config.structured_output_config, schema):
        return f"{text}\n{response_format_block(schema)}"
    return text
