"""A debate document checked as its start will take it: the model's fields, the user functions'
names, and every data entry (it has data; it fits the leaf agents, cut into pieces if need be).
``python -m tools.debate`` and the console refuse a document here with the error its start
would record, before any model call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.debate import kits, packing
from shared.debate.models import Debate
from shared.models import parse_document


def entry_field(prompts: Any) -> str | None:
    """The data field a PromptSet argues from (``PromptSet.entry_field``; None if it has none)."""
    field = getattr(prompts, "entry_field", None)
    return field if isinstance(field, str) else None


def load(raw: Mapping[str, Any] | None, document: str) -> Debate:
    """The debate, or a DocumentError naming ``document`` and the first field it cannot run
    with (``data[3].data``, ``userFunctions.prompts``, ``numRounds``)."""
    debate = parse_document(Debate, document, dict(raw) if raw is not None else None)
    kit = kits.resolve(debate.user_functions, document)
    packing.check(debate, entry_field(kit.prompts), document)
    return debate
