"""Prompt arguments: the typed values of an agent's prompts, and what validates a reply.

An agent's ``prompt.py`` subclasses ``PromptArgument`` (a pydantic model) for its system and user
prompts, and may define ``is_valid(arg)`` (raise ``PromptValidationError`` with a message for the
model) and ``is_final(arg)`` (the agent's turn is over; it hands back to the conductor).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared.stages import AnswerValidationError


class PromptArgument(BaseModel):
    """Base of every prompt argument class; unknown fields in a reply are ignored."""

    model_config = ConfigDict(extra="ignore")

    @classmethod
    def reply_schema(cls, known: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON Schema a reply must fill: every field, without pydantic's titles; a value
        already ``known`` (the step's arguments) is the field's default, so the model sees what
        to keep (and the scripted model keeps it). A class default is not a known value: a
        field ``urgency: int = 0`` asked for 1-5 must be filled, not kept at 0."""
        schema = cls.model_json_schema()
        properties = {
            name: {k: v for k, v in prop.items() if k not in ("title", "default")}
            for name, prop in schema.get("properties", {}).items()
        }
        for name, value in (known or {}).items():
            if name not in properties or value in (None, "", [], {}):
                continue
            if value != cls.model_fields[name].get_default(call_default_factory=True):
                properties[name]["default"] = value
        return {"type": "object", "properties": properties, "required": sorted(properties)}


def hinted(default: Any = "", **schema: Any) -> Any:
    """A field whose reply schema carries more than its type (``enum``, ``minLength``, ...): a
    hint for the model (and the scripted model honours it); ``is_valid`` still decides."""
    extra: dict[str, Any] = dict(schema)
    return Field(default, json_schema_extra=extra)


class PromptValidationError(AnswerValidationError):
    """Raised by ``is_valid``: the message goes back to the model as the corrective turn."""


def parse_reply(cls: type[PromptArgument], parsed: Any) -> PromptArgument:
    """Syntactic validation: the parsed JSON as ``cls``; the error names each bad field."""
    if not isinstance(parsed, dict):
        raise PromptValidationError(
            f"the reply must be a JSON object with the fields {sorted(cls.model_fields)}"
        )
    try:
        return cls.model_validate(parsed)
    except ValidationError as error:
        problems = "; ".join(
            f"field '{'.'.join(str(p) for p in e['loc'])}': {e['msg']}" for e in error.errors()
        )
        raise PromptValidationError(problems) from None
