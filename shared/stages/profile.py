"""Profile stage (DEFAULT and DEFAULT_GENDERED): the agent picks a name, an emoji and pronouns."""

from __future__ import annotations

from typing import Any

from shared.models import ProfileBase, ProfileStage, ProfileType
from shared.stages.base import AnswerContext, AnswerValidationError

PRONOUNS = ["she/her", "he/him", "they/them"]
AVATARS = ["🐶", "🐱", "🐭", "🐹", "🐰", "🦊", "🐻", "🐼", "🐨", "🐯", "🦁", "🐮", "🐷", "🐸", "🐵"]


class ProfileSpec:
    def schema(self, stage: ProfileStage, ctx: AnswerContext) -> dict[str, Any]:
        emoji: dict[str, Any] = {"type": "string", "description": "One emoji as your avatar"}
        if stage.profile_type == ProfileType.DEFAULT_GENDERED:
            emoji["enum"] = AVATARS
        return {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "Your first name",
                    "minLength": 1,
                    "maxLength": 40,
                },
                "emoji": emoji,
                "pronouns": {"type": "string", "enum": PRONOUNS},
            },
            "required": ["name", "emoji", "pronouns"],
        }

    def extract(self, stage: ProfileStage, ctx: AnswerContext, reply: Any) -> ProfileBase:
        if not isinstance(reply, dict):
            raise AnswerValidationError(
                "the reply must be a JSON object with name, emoji, pronouns"
            )
        values: dict[str, str] = {}
        for key in ("name", "emoji", "pronouns"):
            value = reply.get(key)
            if not isinstance(value, str) or not value.strip():
                raise AnswerValidationError(f"'{key}' must be a non-empty string")
            values[key] = value.strip()
        if len(values["name"]) > 40:
            raise AnswerValidationError("'name' must be at most 40 characters")
        return ProfileBase(name=values["name"], avatar=values["emoji"], pronouns=values["pronouns"])
