"""Getting a JSON value out of a model's text reply, and checking it against the schema."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import jsonschema

from shared.stages.base import AnswerValidationError

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _candidates(text: str) -> list[str]:
    """The reply as is, inside a code fence, and cut to its outermost braces or brackets."""
    found = [text.strip()]
    fenced = _FENCE.search(text)
    if fenced:
        found.append(fenced.group(1).strip())
    for opener, closer in ("{}", "[]"):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            found.append(text[start : end + 1])
    return found


def parse_json_reply(text: str) -> Any:
    """Parse a reply that should be JSON, repairing code fences, text around the JSON and
    trailing commas."""
    if not text or not text.strip():
        raise AnswerValidationError("the reply was empty; return only the JSON value")
    error = ""
    for candidate in _candidates(text):
        for attempt in (candidate, _TRAILING_COMMA.sub(r"\1", candidate)):
            try:
                return json.loads(attempt)
            except json.JSONDecodeError as exc:
                error = error or str(exc)
    raise AnswerValidationError(
        f"the reply is not valid JSON ({error}); return only the JSON value"
    )


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(schema_json))


def check_schema(value: Any, schema: dict[str, Any] | None) -> None:
    """AnswerValidationError naming the first place where ``value`` breaks ``schema``."""
    if not schema:
        return
    validator = _validator(json.dumps(schema, sort_keys=True))
    error = next(iter(sorted(validator.iter_errors(value), key=lambda e: list(e.path))), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the reply"
        raise AnswerValidationError(f"{where}: {error.message[:300]}")
