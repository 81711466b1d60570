"""The offline scripted model: deterministic, schema-valid answers without any network.

Answers are seeded by the request's seed (agent, stage and purpose) and the model's own earlier
answers in the conversation, so a run is reproducible, with replies garbled by faults or without.
They honour the JSON Schema keywords the stage schemas use: enum, minLength/maxLength,
minimum/maximum, minItems/maxItems/uniqueItems (an array of unique enum items of full length is
a permutation).
"""

from __future__ import annotations

import json
import random
from typing import Any

import jsonschema

from shared.llm.base import (
    ModelReply,
    ModelRequest,
    ToolCall,
    ToolSpec,
    Usage,
    estimate_tokens,
)
from shared.society import play
from shared.society.actions import SCHEMA_TITLE as SOCIETY_SCHEMA_TITLE

_FIRST_NAMES = ["Alex", "Sam", "Jordan", "Riley", "Casey", "Morgan", "Taylor", "Jamie", "Avery"]
_EMOJIS = ["🐶", "🐱", "🦊", "🐼", "🐨", "🦁", "🐯", "🐸", "🐵", "🦉"]
_PRONOUNS = ["she/her", "he/him", "they/them"]
_WORDS = [
    "I",
    "think",
    "the",
    "group",
    "should",
    "weigh",
    "the",
    "long",
    "term",
    "benefits",
    "carefully",
    "because",
    "shared",
    "resources",
    "matter",
    "to",
    "everyone",
    "and",
    "a",
    "fair",
    "process",
    "builds",
    "trust",
    "over",
    "time",
    "while",
    "practical",
    "constraints",
    "and",
    "local",
    "needs",
    "also",
    "deserve",
    "attention",
]

_HINTS: dict[str, list[str]] = {"name": _FIRST_NAMES, "emoji": _EMOJIS, "pronouns": _PRONOUNS}
_TRUE_ODDS: dict[str, float] = {"shouldRespond": 0.8, "readyToEndChat": 0.35}
"""Chat decisions: mostly speak, and become ready to end after a few messages on average."""
_READINESS_ONLY_ODDS = 0.9
"""Asked only whether it is ready (it may not speak, or the chat went quiet): mostly yes."""


def _text(rng: random.Random, schema: dict[str, Any]) -> str:
    low = int(schema.get("minLength", 1))
    high = int(schema.get("maxLength", max(low, 120)))
    start = rng.randrange(len(_WORDS))
    words: list[str] = []
    while len(" ".join(words)) < max(low, min(high, rng.randint(40, 120))):
        words.append(_WORDS[(start + len(words)) % len(_WORDS)])
    text = " ".join(words)[:high].rstrip()
    text = text[0].upper() + text[1:] if text else text
    return text.ljust(low, ".")


def _keeps(schema: dict[str, Any]) -> bool:
    """A ``default`` worth keeping: given, not empty, and within the schema's own bounds (a
    field's ``0`` where 1-5 are asked is no answer)."""
    default = schema.get("default")
    if default in (None, "", [], {}):
        return False
    rest = {k: v for k, v in schema.items() if k != "default"}
    return jsonschema.Draft202012Validator(rest).is_valid(default)


def _object(rng: random.Random, schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties", {})
    value = {key: generate_value(rng, sub, key) for key, sub in props.items()}
    if "readyToEndChat" in props and "response" not in props:
        value["readyToEndChat"] = rng.random() < _READINESS_ONLY_ODDS
    return value


def _array(rng: random.Random, schema: dict[str, Any], name: str) -> list[Any]:
    items = schema.get("items", {})
    if schema.get("uniqueItems") and "enum" in items:
        pool = list(items["enum"])
        rng.shuffle(pool)
        return pool[: schema.get("maxItems", len(pool))]
    count = rng.randint(schema.get("minItems", 1), schema.get("maxItems", 3))
    return [generate_value(rng, items, name) for _ in range(count)]


def _scalar(rng: random.Random, schema: dict[str, Any], kind: str, name: str) -> Any:
    if kind == "integer":
        return rng.randint(int(schema.get("minimum", 1)), int(schema.get("maximum", 10)))
    if kind == "number":
        return round(rng.uniform(schema.get("minimum", 0.0), schema.get("maximum", 1.0)), 3)
    if kind == "boolean":
        return rng.random() < _TRUE_ODDS.get(name, 0.5)
    if name in _HINTS:
        return rng.choice(_HINTS[name])
    return _text(rng, schema)


def generate_value(rng: random.Random, schema: dict[str, Any], name: str = "") -> Any:
    """A value that satisfies ``schema`` (the subset of JSON Schema our stages produce). A
    valid non-empty ``default`` is kept (a conductor agent's argument already known)."""
    if _keeps(schema):
        return schema["default"]
    if "anyOf" in schema:  # an optional field: the first kind that is not null
        kinds = [k for k in schema["anyOf"] if k.get("type") != "null"] or schema["anyOf"]
        return generate_value(rng, kinds[0], name)
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type", "string")
    if kind == "object":
        return _object(rng, schema)
    if kind == "array":
        return _array(rng, schema, name)
    return _scalar(rng, schema, kind, name)


def tool_call(rng: random.Random, tools: tuple[ToolSpec, ...]) -> ToolCall:
    """A call of one of the offered tools, with arguments generated from its schema."""
    spec = rng.choice(tools)
    arguments = generate_value(rng, {**spec.parameters, "type": "object"})
    return ToolCall(id=f"call_{rng.getrandbits(48):012x}", name=spec.name, arguments=arguments)


def _answers_before(request: ModelRequest) -> int:
    """How many of the conversation's assistant turns are this model's own: tool calls, or
    answers of the schema asked for. Each one sent back (a validator refused it) moves the
    answer on; a garbled reply (a fault, never this model's) does not, so a run whose replies
    were garbled on the way ends with the answers of a run where none were."""
    own = 0
    for message in request.history:
        if message.role != "assistant":
            continue
        if message.tool_calls or request.response_schema is None:
            own += 1
            continue
        try:
            jsonschema.validate(json.loads(message.text), request.response_schema)
        except (ValueError, jsonschema.ValidationError, jsonschema.SchemaError):
            continue
        own += 1
    return own


class ScriptedModel:
    """ModelClient that answers with generated JSON (or a sentence when no schema is given).

    Offered tools, it first calls one of them (a turn of tool calls, as a real model would),
    and answers once the results are in the conversation."""

    def generate(self, request: ModelRequest) -> ModelReply:
        seed = f"{request.seed}:{1 + _answers_before(request)}"
        rng = random.Random(seed)
        if request.tools and not any(m.role == "tool" for m in request.history):
            call = tool_call(rng, request.tools)
            usage = Usage(estimate_tokens(request.prompt), estimate_tokens(str(call.arguments)))
            return ModelReply(text="", usage=usage, raw=None, tool_calls=(call,))
        if request.response_schema is None:
            text = _text(rng, {"minLength": 20, "maxLength": 160})
        elif request.response_schema.get("title") == SOCIETY_SCHEMA_TITLE:
            seen = f"{request.system or ''}\n\n{request.prompt}"  # the personality is in system
            text = json.dumps(play.choose(seen, seed), ensure_ascii=False)
        else:
            text = json.dumps(generate_value(rng, request.response_schema), ensure_ascii=False)
        usage = Usage(estimate_tokens(request.prompt), estimate_tokens(text))
        return ModelReply(text=text, usage=usage, raw=text)
