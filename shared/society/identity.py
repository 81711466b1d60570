"""Whose action an action document is: its id says (``{agentId}-{slot}``), never its body.

A console or admin write can put any body under any id; the close, the day's completeness and
``tools.society check`` must agree on which documents are actions, or a body naming another
member lets it act twice and a stray document counts toward "everyone acted". So every reader
of a day's actions goes through ``read``: an id that is not an acting member's slot, or a body
whose ``agentId``, ``slot`` or ``day`` disagrees with the id, is a DocumentError naming the
document and the field, and not an action.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterable
from typing import Any

from shared.models import DocumentError, parse_document
from shared.society.models import ActionRecord, Day

ID_FIELD = "(document id)"
"""The field an error names when the document's id is what is wrong."""
_ID = re.compile(r"([1-9][0-9]{0,8})-([1-9][0-9]{0,8})")


def action_id(agent: int, slot: int) -> str:
    return f"{agent}-{slot}"


@dataclasses.dataclass(frozen=True)
class Expected:
    """Which actions a day takes: the acting members' slots 1..per_day."""

    day: int
    acting: Collection[int]
    per_day: int

    @classmethod
    def of(cls, day: Day) -> Expected:
        return cls(
            day.day, frozenset(day.acting), day.settings.actions_per_day if day.settings else 1
        )

    def slot(self, path: str) -> tuple[int, int]:
        """The (member, slot) the document at ``path`` is for; DocumentError if none of today's."""
        doc_id = path.rsplit("/", 1)[-1]
        found = _ID.fullmatch(doc_id)
        if found is None:
            raise DocumentError(path, ID_FIELD, f"{doc_id!r} is not '{{agentId}}-{{slot}}'")
        agent, slot = int(found.group(1)), int(found.group(2))
        if agent not in self.acting:
            raise DocumentError(path, ID_FIELD, f"member {agent} is not acting on day {self.day}")
        if slot > self.per_day:
            reason = f"slot {slot} is beyond actionsPerDay ({self.per_day})"
            raise DocumentError(path, ID_FIELD, reason)
        return agent, slot

    def names_slot(self, path: str) -> bool:
        """Whether the id at ``path`` is one of today's slots (its body unread: a display's
        count, not the day's)."""
        try:
            self.slot(path)
        except DocumentError:
            return False
        return True


def read(path: str, data: dict[str, Any], expected: Expected) -> ActionRecord:
    """The action at ``path``, its identity from the id (a body may leave ``agentId``, ``slot``
    and ``day`` out); DocumentError if the id is none of the day's slots or the body disagrees."""
    agent, slot = expected.slot(path)
    for field, value in (("agentId", agent), ("slot", slot), ("day", expected.day)):
        said = data.get(field)
        if said is not None and said != value:
            reason = f"says {said!r}, but the document id is {action_id(agent, slot)!r}"
            if field == "day":
                reason = f"says {said!r}, but the document is in day {value}"
            raise DocumentError(path, field, reason)
    return parse_document(
        ActionRecord, path, {**data, "agentId": agent, "slot": slot, "day": expected.day}
    )


@dataclasses.dataclass
class Sorted:
    actions: dict[str, ActionRecord] = dataclasses.field(default_factory=dict)
    """Document id -> the action, for every document that is one."""
    errors: list[DocumentError] = dataclasses.field(default_factory=list)
    """One per document that is not an action, naming it and the field."""


def sort(documents: Iterable[tuple[str, dict[str, Any]]], expected: Expected) -> Sorted:
    """The day's action documents (path, data), told apart: actions and errors."""
    out = Sorted()
    for path, data in documents:
        try:
            out.actions[path.rsplit("/", 1)[-1]] = read(path, data, expected)
        except DocumentError as error:
            out.errors.append(error)
    return out


def audit(
    day: Day,
    documents: dict[str, dict[str, Any] | None],
    prefix: str,
    resolved: list[str] | None = None,
) -> list[str]:
    """What is wrong with the actions a closed day resolved (``resolved``, by default
    ``day.action_ids``; ``documents``: their data by id, None if gone): each must be an acting
    member's slot whose body agrees."""
    expected = Expected.of(day)
    problems = []
    for doc_id in day.action_ids if resolved is None else resolved:
        data = documents.get(doc_id)
        try:
            read(f"{prefix}/{doc_id}", data or {}, expected)
        except DocumentError as error:
            problems.append(f"day {day.day}: resolved {doc_id!r}: {error.field}: {error.reason}")
    return problems
