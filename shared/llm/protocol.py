"""Telling a provider's garbage from a model's wrong answer.

A reply that is not the provider's protocol (an HTML outage page; where JSON was asked, which
structured output guarantees, an empty reply or text with no JSON in it) comes from a proxy or an
outage, not from the model: it is retried with backoff like a 5xx, and never costs the agent its
answer. Only a well-formed reply that fails validation is the model's failure (corrective turns).
"""

from __future__ import annotations

import re

from shared.llm.base import ModelError, ModelReply, protocol_fault
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
    if _HTML.match(text):
        raise protocol_fault(f"an HTML page: {text[:_SHOWN]!r}", reply.raw)
    if not expects_json:
        return  # free text: even an empty reply may be the model's (it chose to stay silent)
    if not text.strip():
        raise protocol_fault("the reply is empty", reply.raw)
    if not _has_json(text):
        raise protocol_fault(f"no JSON although JSON was asked: {text[:_SHOWN]!r}", reply.raw)


MAX_PROMPT_CHARS = 400_000
"""About 100k tokens: within every supported model's context and request limits, and what a
model log can keep. A larger prompt comes from a runaway input (a 1 MB persona name), not
from an experiment's design."""
MAX_REPLY_CHARS = 100_000
"""Far above any stage answer or chat message; a longer reply could not be stored as one."""


def check_prompt_size(prompt: str) -> None:
    """CONFIG_ERROR before any call when the prompt is over MAX_PROMPT_CHARS, quoting its
    longest line so the experimenter finds the runaway input."""
    if len(prompt) <= MAX_PROMPT_CHARS:
        return
    longest = max(prompt.splitlines() or [prompt], key=len)
    raise ModelError(
        "CONFIG_ERROR",
        f"the prompt is {len(prompt):,} characters, over the {MAX_PROMPT_CHARS:,} sent to a "
        f"model; its longest line ({len(longest):,} characters) starts {longest[:80]!r}: "
        "shorten that input (persona, profile, stage or chat text)",
        field="prompt",
    )


def check_reply_size(text: str) -> None:
    """A well-formed but runaway reply is the model's failure: corrected like a wrong answer."""
    if len(text) > MAX_REPLY_CHARS:
        raise AnswerValidationError(
            f"the reply is {len(text):,} characters; keep it under {MAX_REPLY_CHARS:,}"
        )
