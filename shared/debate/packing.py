"""Data → categories → agents → the first layer's clusters.

Categorization is one model call whose schema has one key per uncategorized entry (``e{i}``),
so the reply cannot lose or invent an entry; entries that already have a ``category`` keep it.
Within a category, entries are packed in order into agents of at most ``tokenLimit`` data
tokens. No agent holds more: an entry larger than the limit is cut into pieces that fit (its
text field cut at word ends, each piece marked ``part: "i/n"``), at most ``MAX_PIECES`` of
them; an entry that would need more, or has no data, is refused (``check``) before any model
call, naming its field (``data[3].data``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from shared.debate import naming, tokens
from shared.debate.models import Cluster, Debate, DebateAgent, DebateMode, Role
from shared.errors import BadInput
from shared.models import DocumentError
from shared.stages import AnswerValidationError

MAX_PIECES = 8
"""Most pieces (leaf agents) one entry is cut into. An entry that needs more (a document pasted
whole: 200 KB against a limit of 120 tokens would make 300 agents, each a model call per round)
is refused: more likely a mistake than data, and a researcher should choose to pay for it."""
PART = "part"
"""A piece's marker: ``"2/3"``, so the agent knows it holds part of an entry."""
CATEGORY = "category"


def uncategorized(data: Sequence[Mapping[str, Any]]) -> list[int]:
    return [i for i, e in enumerate(data) if not str(e.get("category") or "").strip()]


NAMES = "names"
"""The reply's key naming the model's own categories (no ``categories`` given): slot → name."""


def slots(count: int, max_categories: int) -> list[str]:
    """The labels ``c1``..``cN`` an entry may take when the model names the categories: no more
    than ``maxCategories`` and no more than the entries, so the schema itself bounds them."""
    return [f"c{i + 1}" for i in range(min(count, max_categories))]


def category_schema(
    keys: Sequence[str], categories: Sequence[str], max_categories: int
) -> dict[str, Any]:
    """Given ``categories``: each key takes one of them. Otherwise each key takes a slot label
    and ``names`` names every slot: a schema-valid reply (the scripted model's, say) then has at
    most ``maxCategories`` categories, where free strings per entry would have one per entry."""
    if categories:
        return _object({key: {"type": "string", "enum": list(categories)} for key in keys})
    labels = slots(len(keys), max_categories)
    names = _object({key: {"type": "string", "maxLength": 40} for key in labels})
    return _object({NAMES: names, **{key: {"type": "string", "enum": labels} for key in keys}})


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def check_categories(
    reply: Any, keys: Sequence[str], categories: Sequence[str], max_categories: int
) -> dict[str, str]:
    """The reply as key → category, or AnswerValidationError saying what is wrong."""
    if not isinstance(reply, dict):
        raise AnswerValidationError("the reply must be a JSON object mapping e0, e1, ... to names")
    expected = list(keys) if categories else [NAMES, *keys]
    missing = [k for k in expected if k not in reply]
    extra = sorted(set(reply) - set(expected))
    if missing or extra:
        raise AnswerValidationError(f"entries missing: {missing}; entries invented: {extra}")
    chosen = {k: str(reply[k]).strip() for k in keys}
    if not categories:
        chosen = _named(chosen, reply[NAMES], slots(len(keys), max_categories))
    if any(not v for v in chosen.values()):
        raise AnswerValidationError("every entry needs a non-empty category")
    if categories and (unknown := sorted(set(chosen.values()) - set(categories))):
        raise AnswerValidationError(f"categories not allowed: {unknown}; use {list(categories)}")
    return chosen


def _named(chosen: Mapping[str, str], names: Any, labels: Sequence[str]) -> dict[str, str]:
    """Slot labels replaced by the names the reply gives them."""
    if not isinstance(names, dict):
        raise AnswerValidationError(f"'{NAMES}' must map the slots {list(labels)} to names")
    if unknown := sorted({v for v in chosen.values() if v not in labels}):
        raise AnswerValidationError(f"slots not allowed: {unknown}; use {list(labels)}")
    return {k: str(names.get(slot) or "").strip() for k, slot in chosen.items()}


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


def cost(entry: Mapping[str, Any]) -> int:
    """What an entry costs in an agent's prompt, in tokens."""
    return tokens.count(tokens.entry_text(dict(entry)))


def pack(entries: Sequence[Mapping[str, Any]], limit: int) -> list[list[int]]:
    """Greedy, in order: positions in ``entries`` grouped by at most ``limit`` tokens (an entry
    over the limit, which ``pieces`` never hands on, would be a group of its own)."""
    groups: list[list[int]] = []
    used = limit + 1
    for position, entry in enumerate(entries):
        spent = cost(entry)
        if groups and used + spent <= limit:
            groups[-1].append(position)
            used += spent
        else:
            groups.append([position])
            used = spent
    return groups


class Refused(BadInput, ValueError):
    """An entry no leaf agent can hold: ``field`` names it in the debate (``data[3].data``)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def _empty(value: Any) -> bool:
    return (
        value is None
        or value == ""
        or value == []
        or value == {}
        or (isinstance(value, str) and not value.strip())
    )


def check_data(index: int, entry: Mapping[str, Any], text_field: str | None) -> None:
    """The entry has data: the kit's ``text_field`` (``entry_field`` of its PromptSet, e.g.
    ``data``) non-empty, or, for a kit that names none, some field besides ``category``."""
    if text_field is not None:
        if text_field not in entry:
            raise Refused(f"data[{index}].{text_field}", "missing: the entry has no data")
        if _empty(entry[text_field]):
            raise Refused(f"data[{index}].{text_field}", "empty: the entry has no data")
    elif all(_empty(v) for k, v in entry.items() if k != CATEGORY):
        raise Refused(f"data[{index}]", "the entry has no data (no field besides category)")


def _text_field(entry: Mapping[str, Any], named: str | None) -> str | None:
    """The field to cut: the kit's, else the entry's longest text (never its category)."""
    if named is not None:
        return named if isinstance(entry.get(named), str) else None
    texts = [(len(v), k) for k, v in entry.items() if isinstance(v, str) and k != CATEGORY]
    return max(texts)[1] if texts else None


def pieces(
    index: int, entry: Mapping[str, Any], text_field: str | None, limit: int
) -> list[dict[str, Any]]:
    """The entry if it fits ``limit``, else its pieces (each within it); ``Refused`` when it
    would take more than ``MAX_PIECES`` or has no text to cut."""
    field = _text_field(entry, text_field)
    where = f"data[{index}]" + (f".{field}" if field else "")
    rough = _about(tokens.entry_text(dict(entry)))
    hopeless = rough > 2 * limit * MAX_PIECES  # not worth counting exactly
    spent = rough if hopeless else cost(entry)
    if spent <= limit:
        return [dict(entry)]
    too_big = (
        f"an entry of {'about ' if hopeless else ''}{spent:,} tokens; tokenLimit is {limit}, "
        f"and one entry may fill at most {MAX_PIECES} leaf agents: shorten it, split it into "
        "entries, or raise tokenLimit"
    )
    if field is None:
        raise Refused(where, f"{too_big} (it has no text field to cut)")
    if hopeless:
        raise Refused(where, too_big)
    text = str(entry[field])
    label = f"{MAX_PIECES}/{MAX_PIECES}"

    def fits(piece: str) -> bool:
        return cost({**entry, field: piece, PART: label}) <= limit

    room = limit - cost({**entry, field: "", PART: label})
    text_tokens = spent - cost({**entry, field: ""})  # not counting a long text twice
    if room <= 0 or math.ceil(text_tokens / room) > MAX_PIECES:
        raise Refused(where, too_big)
    cut = _cut(text, fits)
    out = [{**entry, field: t, PART: f"{n}/{len(cut)}"} for n, t in enumerate(cut, 1)]
    if not cut or len(cut) > MAX_PIECES or any(cost(p) > limit for p in out):
        raise Refused(where, too_big)
    return out


ROUGH_CHUNK = 1000
"""Characters counted at a time by ``_about``: BPE takes time quadratic in a run without spaces
(200 KB of one word: minutes), in chunks it is linear."""


def _about(text: str) -> int:
    """``text``'s tokens about (a few more at the chunks' seams), in linear time."""
    return sum(tokens.count(text[i : i + ROUGH_CHUNK]) for i in range(0, len(text), ROUGH_CHUNK))


def _cut(text: str, fits: Callable[[str], bool]) -> list[str]:
    """``text`` in consecutive pieces that each ``fit``, the longest each time (cut after a
    space when one is in its second half); [] when not even one character fits."""
    out: list[str] = []
    start = 0
    while start < len(text) and len(out) <= MAX_PIECES:
        end = _longest(text, start, fits)
        if end == start:
            return []
        space = text.rfind(" ", start, end) + 1
        if end < len(text) and space > start + (end - start) // 2 and fits(text[start:space]):
            end = space
        out.append(text[start:end].strip())
        start = end
    return out


def _longest(text: str, start: int, fits: Callable[[str], bool]) -> int:
    """The largest end such that ``text[start:end]`` fits (bisection on fits / does not fit;
    ``start`` when not one character fits)."""
    if fits(text[start:]):
        return len(text)
    good, bad = start, len(text)
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(text[start:mid]):
            good = mid
        else:
            bad = mid
    return good


def check(debate: Debate, text_field: str | None, document: str) -> None:
    """Every entry of ``debate`` has data and fits its leaf agents (``pieces``); else one
    DocumentError naming the first bad entry's field, and how many others are bad."""
    refused: list[Refused] = []
    leaves = debate.mode != DebateMode.SELF_CONSISTENCY  # only leaf agents have a limit
    for i, entry in enumerate(debate.data):
        try:
            check_data(i, entry, text_field)
            if leaves:
                pieces(i, entry, text_field, debate.token_limit)
        except Refused as error:
            refused.append(error)
    if refused:
        first = refused[0]
        more = refused[1:]
        also = f" (and {len(more)} more: {', '.join(r.field for r in more[:5])})" if more else ""
        raise DocumentError(document, first.field, first.reason + also)


@dataclasses.dataclass(frozen=True)
class FirstLayer:
    agents: list[DebateAgent]
    clusters: list[Cluster]


def _leaf_agents(
    debate: Debate, data: list[dict[str, Any]], text_field: str | None
) -> dict[str, list[DebateAgent]]:
    by_category: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for i, entry in enumerate(data):
        for piece in pieces(i, entry, text_field, debate.token_limit):
            by_category.setdefault(entry["category"], []).append((i, piece))
    out: dict[str, list[DebateAgent]] = {}
    for category in sorted(by_category):
        held = by_category[category]
        groups = pack([piece for _, piece in held], debate.token_limit)
        out[category] = [
            DebateAgent(
                name=naming.leaf_agent(debate.name, category, n),
                role=Role.LEAF,
                category=category,
                entry_indexes=sorted({held[p][0] for p in group}),
                entries=[held[p][1] for p in group],
                data_tokens=sum(cost(held[p][1]) for p in group),
            )
            for n, group in enumerate(groups)
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
            data_tokens=sum(cost(e) for e in data),
        )
        for i, spec in enumerate(debate.static_agents)
    ]


def _cluster(
    index: int,
    name: str,
    agents: Sequence[DebateAgent],
    synthesize: bool,
    part: tuple[int, int] = (0, 1),
) -> Cluster:
    return Cluster(
        id=naming.cluster_id(1, index),
        layer=1,
        index=index,
        name=name,
        part=part[0],
        parts=part[1],
        members=[a.name for a in agents],
        dynamic=[a.name for a in agents if a.dynamic],
        synthesize=synthesize,
    )


def cluster_sizes(agents: int, max_size: int) -> list[int]:
    """How a category's ``agents`` split into first-layer clusters: ``ceil(agents / max_size)``
    clusters whose sizes differ by at most one, larger first. A cluster's prompts carry every
    member's statements of every round, so a round costs about size² statements: bounding the
    size bounds each prompt, and keeps a large category from costing as much as all-to-all."""
    if agents <= 0:
        return []
    parts = math.ceil(agents / max(1, max_size))
    base, extra = divmod(agents, parts)
    return [base + 1 if i < extra else base for i in range(parts)]


def _split(agents: Sequence[DebateAgent], max_size: int) -> list[list[DebateAgent]]:
    """Consecutive runs of ``agents`` (packing order: neighbouring entries, and the pieces of a
    cut entry, stay together) of the ``cluster_sizes``."""
    out: list[list[DebateAgent]] = []
    start = 0
    for size in cluster_sizes(len(agents), max_size):
        out.append(list(agents[start : start + size]))
        start += size
    return out


def first_layer(
    debate: Debate, data: list[dict[str, Any]], text_field: str | None = None
) -> FirstLayer:
    """The agents and the first layer's clusters for ``debate.mode``: a cluster per category, or
    per part of a category larger than ``maxClusterSize`` (``cluster_sizes``). Static agents join
    the clusters in turn (static agent i → cluster i mod clusters); static agents hold all
    the data, so their ``entries`` stay empty and the prompt reads the debate's data. Leaf
    agents hold entries, or pieces of one (``pieces``; ``text_field``: the kit's)."""
    statics = _static_agents(debate, data)
    if debate.mode == DebateMode.SELF_CONSISTENCY:
        single = [
            DebateAgent(
                name=naming.single_agent(debate.name, i),
                role=Role.LEAF,
                entry_indexes=list(range(len(data))),
                data_tokens=sum(cost(e) for e in data),
            )
            for i in range(debate.samples)
        ]
        return FirstLayer(single, [_cluster(0, "SelfConsistency", single, False)])
    leaves = _leaf_agents(debate, data, text_field)
    all_leaves = [a for group in leaves.values() for a in group]
    if debate.mode == DebateMode.ALL_TO_ALL:
        members = [*all_leaves, *statics]
        return FirstLayer(members, [_cluster(0, "AllToAll", members, False)])
    groups: list[tuple[str, tuple[int, int], list[DebateAgent]]] = []
    for category, group in leaves.items():
        parts = _split(group, debate.max_cluster_size)
        groups.extend((category, (p, len(parts)), members) for p, members in enumerate(parts))
    for i, static in enumerate(statics):
        groups[i % len(groups)][2].append(static)
    clusters = [
        _cluster(i, category, members, True, part)
        for i, (category, part, members) in enumerate(groups)
    ]
    return FirstLayer([*all_leaves, *statics], clusters)
