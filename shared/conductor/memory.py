"""The conductor's long-term memory: after a hand-back it takes the values of the agent's prompt
arguments whose names match its memory fields; each value keeps which agent and turn set it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from shared.conductor.documents import MemoryChange, Remembered


def merge(
    memory: Mapping[str, Remembered],
    fields: Iterable[str],
    arguments: Mapping[str, Any],
    *,
    agent: str,
    turn: int,
    step: int,
) -> dict[str, Remembered]:
    """``memory`` updated with the arguments named like a memory field and not empty; a value
    that did not change keeps the agent and turn that first set it."""
    merged = dict(memory)
    for name in fields:
        value = arguments.get(name)
        if value in (None, "", [], {}) or (name in merged and merged[name].value == value):
            continue
        merged[name] = Remembered(value=value, agent=agent, turn=turn, step=step)
    return merged


def initial_arguments(
    defaults: Mapping[str, Any], memory: Mapping[str, Remembered]
) -> dict[str, Any]:
    """An agent's first user prompt arguments: its defaults, with the memory's values of the
    fields it shares with them."""
    return {
        name: memory[name].value if name in memory and memory[name].value else value
        for name, value in defaults.items()
    }


def changes(
    before: Mapping[str, Remembered], after: Mapping[str, Remembered]
) -> list[MemoryChange]:
    """The fields whose value ``after`` differs from ``before``, in ``after``'s order."""
    return [
        MemoryChange(
            field=name, before=before[name].value if name in before else None, after=kept.value
        )
        for name, kept in after.items()
        if name not in before or before[name].value != kept.value
    ]
