"""A reply that arrived is an answer: what is checked of it before the stage's validation.

Only transport errors, timeouts, 429 and 5xx are provider failures (retried with backoff, see
``shared.llm.retry``); a body that is not the provider's protocol at all (no completion in it,
an error envelope sent with a 200) is one too, since there is no answer in it to correct. A
completion whose text is wrong (an HTML page, empty or no JSON where JSON was asked, too long)
is the model's answer: ``AnswerValidationError`` with the exact reason, so the caller sends the
corrective turn and, when the turns run out, takes the system's invalid outcome. Retrying such a
reply as an outage cost a society member 95 calls in a day with no record of why.
"""

from __future__ import annotations

import re

from shared.llm.base import ModelError
from shared.stages.base import AnswerValidationError

_HTML = re.compile(r"^\s*(?:<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>]|<\?xml)", re.I)
_SHOWN = 200
"""Characters of the offending text quoted in the reason (the log keeps the raw reply)."""


def check_reply(text: str, expects_json: bool) -> None:
    """AnswerValidationError when the reply's text cannot be an answer: an HTML page, an empty
    reply where JSON was asked, a runaway length. Text without JSON is for the parser to judge
    (a caller's own ``parse`` may take prose); an empty free-text reply is the model's choice
    to stay silent."""
    if _HTML.match(text):
        raise AnswerValidationError(f"the reply is an HTML page, not an answer: {text[:_SHOWN]!r}")
    if expects_json and not text.strip():
        raise AnswerValidationError("the reply was empty; return only the JSON value")
    check_reply_size(text)


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
