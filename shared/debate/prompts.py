"""Prompt builders (the seed's Prompts class): a generic free-text set that examples extend.

Every prompt is the agent's system part (its data, personality or represented cluster), then
the debate memory formatted as the seed shows it (round by round, agent by agent), then the
instruction and the response format.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from shared.debate.tokens import entry_text

Memory = Sequence[Mapping[str, str]]
"""The seed's ``rounds``: one mapping agent → statement text per round, in order."""


def format_memory(rounds: Memory) -> str:
    lines: list[str] = []
    for i, statements in enumerate(rounds):
        lines.append(f"Round {i}:")
        lines.extend(f"- {agent}: {text}" for agent, text in sorted(statements.items()))
    return "\n".join(lines)


def format_data(entries: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(entry_text(dict(e)) for e in entries)


class PromptSet:
    """Free-text statements (no response schema). Subclass and register with
    ``@kits.prompts("name")`` to change any part."""

    response_schema: dict[str, Any] | None = None
    entry_field: str | None = None
    """The field of a data entry its prompts argue from (an entry without it is refused at
    load, and an entry too large for a leaf agent is cut in it); None: any field but
    ``category`` (an entry needs one)."""
    topic = "the question the data bears on"
    response_format = "Answer in a few sentences; end with a line 'Conclusion: <one word>'."

    def categorize(
        self,
        entries: Mapping[str, Mapping[str, Any]],
        categories: Sequence[str],
        max_categories: int,
    ) -> str:
        """``entries``: key (``e{i}``) → entry."""
        listed = "\n".join(f"{key}: {entry_text(dict(e))}" for key, e in entries.items())
        choice = (
            f"Use only these categories: {', '.join(categories)}."
            if categories
            else (
                f"Name at most {max_categories} short categories in 'names', one per slot "
                f"(c1, c2, ...; leave an unused slot empty), and give each entry its slot."
            )
        )
        return (
            "Sort each data entry below into one category. "
            f"{choice} Return a JSON object mapping every entry key below to its "
            f"category.\n\n{listed}"
        )

    def leaf_system(self, agent: str, category: str, entries: Sequence[Mapping[str, Any]]) -> str:
        return (
            f"You are {agent}, a debate agent on {self.topic}. You hold the '{category}' data "
            f"below; argue from it.\n\nData:\n{format_data(entries)}"
        )

    def static_system(
        self, agent: str, personality: str, entries: Sequence[Mapping[str, Any]]
    ) -> str:
        return (
            f"You are {agent}, a debate agent on {self.topic} with this personality: "
            f"{personality}. You hold all the data below.\n\nData:\n{format_data(entries)}"
        )

    def head_system(
        self,
        agent: str,
        represented: Sequence[str],
        entries: Sequence[Mapping[str, Any]],
        debate: str,
    ) -> str:
        data = f"\n\nData:\n{format_data(entries)}" if entries else ""
        past = f"\n\nTheir debate:\n{debate}" if debate else ""
        return (
            f"You are {agent}, the head agent representing {', '.join(represented)} on "
            f"{self.topic}.{data}{past}"
        )

    def opening(self) -> str:
        return "Give your opening statement, grounded in your data."

    def argument(self, memory: str) -> str:
        return (
            f"The debate so far:\n{memory}\n\nConsidering the other agents' statements, make "
            "a new statement: keep, sharpen or change your position."
        )

    def synthesis(self, memory: str) -> str:
        return (
            f"Your cluster's debate:\n{memory}\n\nSynthesize one statement that represents "
            "your cluster's best-supported position."
        )

    def final_instruction(self) -> str:
        return f"Response format:\n{self.response_format}"

    def render(self, formatted: Mapping[str, Any]) -> str:
        """A formatted response as the text other agents read in the memory."""
        text = formatted.get("text")
        return str(text) if text is not None else json.dumps(dict(formatted), sort_keys=True)
