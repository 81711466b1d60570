"""The generic free-text example: statements are plain text ending in 'Conclusion: <word>'."""

from __future__ import annotations

import re
from typing import Any

from shared.debate import kits
from shared.debate.prompts import PromptSet
from shared.stages import AnswerValidationError

NAME = "generic"
_CONCLUSION = re.compile(r"conclusion\s*:\s*([A-Za-z0-9-]+)", re.IGNORECASE)


@kits.prompts(NAME)
class GenericPrompts(PromptSet):
    pass


@kits.format_agent_response(NAME)
def format_agent_response(reply: Any) -> dict[str, Any]:
    text = reply if isinstance(reply, str) else str(reply)
    text = text.strip()
    if not text:
        raise AnswerValidationError("the statement was empty")
    return {"text": text}


@kits.draw_final_conclusion(NAME)
def draw_final_conclusion(formatted: dict[str, Any]) -> str:
    """The word after 'Conclusion:', else the statement's first word (lower case)."""
    text = str(formatted.get("text", ""))
    found = _CONCLUSION.findall(text)
    if found:
        return str(found[-1]).lower()
    words = re.findall(r"[A-Za-z0-9-]+", text)
    return words[0].lower() if words else "none"


def _words(formatted: dict[str, Any]) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", str(formatted.get("text", "")).lower()))


@kits.compare_responses(NAME)
def compare_responses(a: dict[str, Any], b: dict[str, Any]) -> float:
    """1 - Jaccard similarity of the two statements' words."""
    wa, wb = _words(a), _words(b)
    if not wa and not wb:
        return 0.0
    return 1.0 - len(wa & wb) / len(wa | wb)
