"""What a stage display sees: the prompt context plus DL's gating of answers."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from shared.models import ParticipantProfile
from shared.prompts.context import PromptContext, display_name, profile_set_id


@dataclasses.dataclass(frozen=True)
class StageView:
    ctx: PromptContext
    participants: list[ParticipantProfile]
    """Whose answers to show: empty unless the item asks for answers (DL passes [] then)."""
    scaffolding: bool

    def answers(self, stage_id: str) -> list[tuple[ParticipantProfile, dict[str, Any]]]:
        out = []
        for participant in self.participants:
            answer = self.ctx.answer_of(participant, stage_id)
            if answer is not None:
                out.append((participant, answer))
        return out

    def public(self, stage_id: str) -> Mapping[str, Any]:
        return self.ctx.public_data.get(stage_id) or {}

    def answer_name(self, participant: ParticipantProfile, stage_id: str) -> str:
        """DL's participantDisplayName for answers: avatar, name and pronouns."""
        return display_name(participant, profile_set_id(stage_id), avatar=True, pronouns=True)

    def is_self(self, participant: ParticipantProfile) -> bool:
        return self.ctx.agent_is_participant and participant.public_id == self.ctx.agent.public_id


def js_number(value: Any) -> str:
    """A number as JavaScript prints it (60, not 60.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
