"""Telling a provider's garbage from a model's wrong answer.

A reply that is not the provider's protocol (an HTML outage page, an empty reply, text with no
JSON in it where JSON was asked, which structured output rules out) comes from a proxy or an
outage, not from the model: it is retried with backoff like a 5xx, and never costs the agent its
answer. Only a well-formed reply that fails validation is the model's failure (corrective turns).
"""

from __future__ import annotations

import re

from shared.llm.base import ModelReply, protocol_fault
from shared.llm.json_output import parse_json_reply
from shared.stages.base import AnswerValidationError

_HTML = re.compile(r"^\s*(?:<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>]|<\?xml)", re.I)
_SHOWN = 200
"""Characters of the offending text quoted in the error (the log keeps the raw reply)."""


def _has_json(text: str) -> bool:
    try:
        parse_json_reply(text)
    except AnswerValidationError:
        return False
    return True


def check_protocol(reply: ModelReply, expects_json: bool) -> None:
    """Raise a retryable ModelError when ``reply`` is an outage's garbage, not a model's answer."""
    text = reply.text
    if not text.strip():
        raise protocol_fault("the reply is empty", reply.raw)
    if _HTML.match(text):
        raise protocol_fault(f"an HTML page: {text[:_SHOWN]!r}", reply.raw)
    if expects_json and not _has_json(text):
        raise protocol_fault(f"no JSON although JSON was asked: {text[:_SHOWN]!r}", reply.raw)
