"""Structured output: DL's schema nodes as JSON Schema, and the response-format block."""

from __future__ import annotations

import json
from typing import Any

import orjson

from shared.models import StructuredOutputConfig, StructuredOutputSchema
from shared.prompts.constants import RESPONSE_FORMAT_HEADER, RESPONSE_FORMAT_INTRO

SHOULD_RESPOND = "shouldRespond"


def schema_to_json_schema(node: StructuredOutputSchema) -> dict[str, Any]:
    """DL's schemaToObject: lowercased types, every property required, enums and array items.

    An ENUM node becomes ``{"type": "string", "enum": [...]}``: DL writes ``"type": "enum"``,
    which no JSON Schema validator or provider accepts.
    """
    out: dict[str, Any] = {}
    if node.description is not None:
        out["description"] = node.description
    out["type"] = "string" if node.type == "ENUM" else node.type.lower()
    if node.properties is not None:
        out["properties"] = {p.name: schema_to_json_schema(p.schema_) for p in node.properties}
    if node.array_items is not None:
        out["items"] = schema_to_json_schema(node.array_items)
    if node.enum_items is not None:
        out["enum"] = list(node.enum_items)
    if node.properties is not None:
        out["required"] = [p.name for p in node.properties]
    return out


def without_should_respond(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema for a turn-based chat: it is the agent's turn, so there is no choice to stay
    silent (DL drops ``shouldRespond`` from both the prompt and the API schema)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or SHOULD_RESPOND not in properties:
        return schema
    out = {**schema, "properties": {k: v for k, v in properties.items() if k != SHOULD_RESPOND}}
    if isinstance(schema.get("required"), list):
        out["required"] = [name for name in schema["required"] if name != SHOULD_RESPOND]
    return out


def shows_response_format(config: StructuredOutputConfig | None, schema: Any) -> bool:
    """DL's structuredOutputEnabled plus appendToPrompt, for the schema the caller shows."""
    if config is None or not config.enabled or not config.append_to_prompt or not schema:
        return False
    return not (isinstance(schema, dict) and schema.get("properties") == {})


def response_format_block(schema: dict[str, Any]) -> str:
    """DL's makeStructuredOutputPrompt text (JSON indented by two, as JSON.stringify)."""
    return f"\n{RESPONSE_FORMAT_HEADER}\n{RESPONSE_FORMAT_INTRO}\n{pretty_json(schema)}\n"


def pretty_json(value: Any) -> str:
    """JSON indented by two, as ``json.dumps(indent=2, ensure_ascii=False)`` prints it, by
    orjson: the standard library's indenting encoder is pure Python, and a survey-per-
    participant schema of 100 participants (100 kB printed) took 20 ms of each agent's turn
    (orjson: 0.1 ms). Where the two differ, orjson prints as JavaScript's JSON.stringify
    (DL's) does: a non-finite float as null, 1e-05 as 0.00001. An integer beyond 64 bits,
    which orjson refuses, is printed by the standard library."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, indent=2, ensure_ascii=False)
