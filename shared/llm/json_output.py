"""Getting the JSON out of a model's text reply."""

from __future__ import annotations

import json
import re
from typing import Any

from shared.stages.base import AnswerValidationError

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def parse_json_reply(text: str) -> Any:
    """Parse a reply that should be JSON, tolerating code fences and text around the JSON."""
    if not text or not text.strip():
        raise AnswerValidationError("the reply was empty; return only the JSON value")
    candidates = [text.strip()]
    fenced = _FENCE.search(text)
    if fenced:
        candidates.append(fenced.group(1).strip())
    for opener, closer in ("{}", "[]"):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            candidates.append(text[start : end + 1])
    error = ""
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as exc:
            error = str(exc)
    raise AnswerValidationError(
        f"the reply is not valid JSON ({error}); return only the JSON value"
    )
