"""Data → categories → agents → the first layer's clusters.

Categorization is one model call whose schema has one key per uncategorized entry (``e{i}``),
so the reply cannot lose or invent an entry; entries that already have a ``category`` keep it.
Within a category, entries are packed in order into agents of at most ``tokenLimit`` data
tokens (an entry larger than the limit gets an agent to itself).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from shared.debate import naming, tokens
from shared.debate.models import Cluster, Debate, DebateAgent, DebateMode, Role
from shared.stages import AnswerValidationError


def uncategorized(data: Sequence[Mapping[str, Any]]) -> list[int]:
    return [i for i, e in enumerate(data) if not str(e.get("category") or "").strip()]


def category_schema(keys: Sequence[str], categories: Sequence[str]) -> dict[str, Any]:
    value: dict[str, Any] = (
        {"type": "string", "enum": list(categories)}
        if categories
        else {"type": "string", "minLength": 1, "maxLength": 40}
    )
    return {
        "type": "object",
        "properties": dict.fromkeys(keys, value),
        "required": list(keys),
        "additionalProperties": False,
    }


def check_categories(
    reply: Any, keys: Sequence[str], categories: Sequence[str], max_categories: int
) -> dict[str, str]:
    """The reply as key → category, or AnswerValidationError saying what is wrong."""
    if not isinstance(reply, dict):
        raise AnswerValidationError("the reply must be a JSON object mapping e0, e1, ... to names")
    missing = [k for k in keys if k not in reply]
    extra = sorted(set(reply) - set(keys))
    if missing or extra:
        raise AnswerValidationError(f"entries missing: {missing}; entries invented: {extra}")
    chosen = {k: str(reply[k]).strip() for k in keys}
    if any(not v for v in chosen.values()):
        raise AnswerValidationError("every entry needs a non-empty category")
    if categories and (unknown := sorted(set(chosen.values()) - set(categories))):
        raise AnswerValidationError(f"categories not allowed: {unknown}; use {list(categories)}")
    if not categories and len(set(chosen.values())) > max_categories:
        raise AnswerValidationError(f"use at most {max_categories} categories")
    return chosen


def categorized(data: Sequence[Mapping[str, Any]], chosen: Mapping[str, str]) -> list[dict]:
    """Every entry with its ``category``: its own, or the model's (``e{i}`` keys). Categories
    that differ only in case and punctuation (``company news``, ``Company-News``) are
    one category, spelled as first seen."""
    spelling: dict[str, str] = {}
    out = []
    for i, entry in enumerate(data):
        category = str(entry.get("category") or "").strip() or chosen[f"e{i}"]
        category = spelling.setdefault(naming.slug(category).lower(), category)
        out.append({**entry, "category": category})
    return out


def pack(entries: Sequence[tuple[int, dict[str, Any]]], limit: int) -> list[list[int]]:
    """Greedy, in order: (index, entry) pairs into groups of at most ``limit`` tokens."""
    groups: list[list[int]] = []
    used = limit + 1
    for index, entry in entries:
        cost = tokens.count(tokens.entry_text(entry))
        if groups and used + cost <= limit:
            groups[-1].append(index)
            used += cost
        else:
            groups.append([index])
            used = cost
    return groups


@dataclasses.dataclass(frozen=True)
class FirstLayer:
    agents: list[DebateAgent]
    clusters: list[Cluster]


def _leaf_agents(debate: Debate, data: list[dict[str, Any]]) -> dict[str, list[DebateAgent]]:
    by_category: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for i, entry in enumerate(data):
        by_category.setdefault(entry["category"], []).append((i, entry))
    out: dict[str, list[DebateAgent]] = {}
    for category in sorted(by_category):
        entries = dict(by_category[category])
        out[category] = [
            DebateAgent(
                name=naming.leaf_agent(debate.name, category, n),
                role=Role.LEAF,
                category=category,
                entry_indexes=group,
                entries=[entries[i] for i in group],
                data_tokens=sum(tokens.count(tokens.entry_text(entries[i])) for i in group),
            )
            for n, group in enumerate(pack(by_category[category], debate.token_limit))
        ]
    return out


def _static_agents(debate: Debate, data: list[dict[str, Any]]) -> list[DebateAgent]:
    return [
        DebateAgent(
            name=spec.name or naming.static_agent(debate.name, i),
            role=Role.LEAF,
            dynamic=False,
            personality=spec.personality,
            entry_indexes=list(range(len(data))),
            data_tokens=sum(tokens.count(tokens.entry_text(e)) for e in data),
        )
        for i, spec in enumerate(debate.static_agents)
    ]


def _cluster(index: int, name: str, agents: Sequence[DebateAgent], synthesize: bool) -> Cluster:
    return Cluster(
        id=naming.cluster_id(1, index),
        layer=1,
        index=index,
        name=name,
        members=[a.name for a in agents],
        dynamic=[a.name for a in agents if a.dynamic],
        synthesize=synthesize,
    )


def first_layer(debate: Debate, data: list[dict[str, Any]]) -> FirstLayer:
    """The agents and the first layer's clusters for ``debate.mode``. Static agents join the
    category clusters in turn (static agent i → cluster i mod clusters); static agents hold all
    the data, so their ``entries`` stay empty and the prompt reads the debate's data."""
    statics = _static_agents(debate, data)
    if debate.mode == DebateMode.SELF_CONSISTENCY:
        single = [
            DebateAgent(
                name=naming.single_agent(debate.name, i),
                role=Role.LEAF,
                entry_indexes=list(range(len(data))),
                data_tokens=sum(tokens.count(tokens.entry_text(e)) for e in data),
            )
            for i in range(debate.samples)
        ]
        return FirstLayer(single, [_cluster(0, "SelfConsistency", single, False)])
    leaves = _leaf_agents(debate, data)
    all_leaves = [a for group in leaves.values() for a in group]
    if debate.mode == DebateMode.ALL_TO_ALL:
        members = [*all_leaves, *statics]
        return FirstLayer(members, [_cluster(0, "AllToAll", members, False)])
    members_of = {c: list(group) for c, group in leaves.items()}
    categories = list(members_of)
    for i, static in enumerate(statics):
        members_of[categories[i % len(categories)]].append(static)
    clusters = [
        _cluster(i, category, members_of[category], True) for i, category in enumerate(categories)
    ]
    return FirstLayer([*all_leaves, *statics], clusters)
