"""The first answer prompt for agent participants: persona, stage text, the answer spec's display
and the response format. functions/agents uses it; render_prompt is the structured successor.
"""

from __future__ import annotations

import json
from typing import Any

from shared.models import BaseStage, ParticipantProfile

PARTICIPANT_INSTRUCTIONS = (
    "You are a human participant interacting in an online task with multiple stages. "
    "Answer as that person would, consistently with your persona."
)


def participant_description(participant: ParticipantProfile) -> str:
    alias = f"{participant.avatar or ''} {participant.name or ''}".strip() or "Profile not yet set"
    lines = ["--- Participant description ---", f"Alias: {alias}"]
    context = participant.agent_config.prompt_context if participant.agent_config else ""
    if context:
        lines.append(f"Private persona context: {context}")
    return "\n".join(lines)


def stage_block(stage: BaseStage, display: str) -> str:
    lines = [f"[Stage: {stage.name or stage.id}]"]
    if stage.descriptions.primary_text:
        lines.append(f"* Stage description: {stage.descriptions.primary_text}")
    if stage.descriptions.info_text:
        lines.append(f"* Additional info: {stage.descriptions.info_text}")
    lines.append(display)
    return "\n".join(lines)


def response_format(schema: dict[str, Any]) -> str:
    return (
        "--- Response format ---\n"
        "Return only valid JSON, according to the following schema:\n"
        + json.dumps(schema, indent=2, ensure_ascii=False)
    )


def answer_prompt(
    participant: ParticipantProfile, stage: BaseStage, display: str, schema: dict[str, Any]
) -> str:
    return "\n\n".join(
        [
            PARTICIPANT_INSTRUCTIONS,
            participant_description(participant),
            "--- Current stage ---\n" + stage_block(stage, display),
            response_format(schema),
        ]
    )


def corrective_turn(reason: str) -> str:
    """The message that sends a validation failure back to the model (Diskurs-style)."""
    return (
        f"Your previous reply was not valid: {reason}. "
        "Reply again with only the corrected JSON value."
    )
