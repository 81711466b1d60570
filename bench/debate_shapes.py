"""Tokens and decisions of the hierarchical debate against all-to-all for any category shape
(issue 31 item 2): 3, 4, 6 and 8 equal categories and the uneven shapes a model's
categorization gives, at 8, 32 and 128 leaf agents, on the real stack.

Each case's data carries evidence: in its largest category three entries in four are
``bullish`` and one ``bearish``, in the others the reverse, so the right decision is the
majority of all the entries' evidence and differs between shapes. The model is the reading
model (``bench.fake_model.reading_model``: the fake OpenAI server; a statement's position is
the majority of the evidence and the positions its prompt shows), so a decision can be right
or wrong: all-to-all, where every agent reads every statement, gets it right; a hierarchy gets
it right when its clusters carry the evidence up in proportion. Each case runs all-to-all, the
hierarchy with categories split at ``maxClusterSize`` 8, and, where a category is larger than
that, the hierarchy with no split (``maxClusterSize`` 100: one cluster per category, as before).

python -m bench --only debate_shapes --out bench/debate_shapes_results.json
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from google.cloud import firestore

from bench import debate
from bench.fake_model import API_TYPE, SIGNALS, reading_model
from bench.stack import Stack, say

SHAPES: dict[str, tuple[int, ...]] = {
    "3": (11, 11, 10),
    "4": (8, 8, 8, 8),
    "6": (6, 6, 5, 5, 5, 5),
    "8": (4,) * 8,
    "11/13/8": (11, 13, 8),
    "20/8/4": (20, 8, 4),
    "29/2/1": (29, 2, 1),
}
"""Agents per category at 32 leaf agents; other sizes scale them (``scaled``)."""
SPLIT = 8
UNSPLIT = 100
LEAN = 0.75
"""The share of the largest category's entries that are bullish (of the others', bearish)."""


def scaled(shape: Sequence[int], agents: int) -> list[int]:
    """``shape`` for ``agents`` leaf agents: proportional, every category at least one agent,
    the rounding taken up by the largest."""
    sizes = [max(1, round(n * agents / sum(shape))) for n in shape]
    sizes[sizes.index(max(sizes))] += agents - sum(sizes)
    return sizes


def _signals(sizes: Sequence[int]) -> list[list[str]]:
    """Per category, each entry's evidence word, spread evenly through the category; never as
    many bullish as bearish entries in all, so the right decision is Buy or Short."""
    bullish, bearish = list(SIGNALS)
    largest = sizes.index(max(sizes))
    counts = [round((LEAN if c == largest else 1 - LEAN) * n) for c, n in enumerate(sizes)]
    if 2 * sum(counts) == sum(sizes):  # no tie: one more bullish entry in the largest
        counts[largest] += 1
    out = []
    for n, count in zip(sizes, counts, strict=True):
        out.append(
            [bullish if (j + 1) * count // n > j * count // n else bearish for j in range(n)]
        )
    return out


def case(sizes: Sequence[int], seed: int) -> tuple[list[dict[str, Any]], str]:
    """The data (one entry per leaf agent, categories interleaved in a seeded order) and the
    right decision: the position most entries' evidence supports."""
    rng = random.Random(seed)
    words = _signals(sizes)
    owners = [c for c, n in enumerate(sizes) for _ in range(n)]
    rng.shuffle(owners)
    taken = [0] * len(sizes)
    data = []
    for i, c in enumerate(owners):
        data.append(debate.entry(rng, i, f"Topic{c}", words[c][taken[c]]))
        taken[c] += 1
    every = [w for category in words for w in category]
    tally = {SIGNALS[w]: every.count(w) for w in SIGNALS}
    return data, max(tally, key=lambda p: tally[p])


def _settings(data: list[dict[str, Any]], mode: str, max_size: int, seed: int) -> dict[str, Any]:
    return {
        "name": f"S{len(data)}",
        "data": data,
        "numRounds": 2,
        "numLayers": 2,
        "tokenLimit": 100,
        "maxClusterSize": max_size,
        "seed": seed,
        "mode": mode,
        "model": {"apiType": API_TYPE, "modelName": "bench"},
    }


def _one(stack: Stack, label: str, settings: dict[str, Any], workers: int) -> dict[str, Any]:
    say(f"debate shapes: {label}")
    with stack.runtime(f"shapes-{label}", workers=workers) as rt, reading_model():
        db = firestore.Client(project=rt.project)
        t0 = time.monotonic()
        db.document("debates/s").set(settings)
        s = debate.wait(rt, db, "s", timeout=1800)
        measured = debate.figures(s, time.monotonic() - t0)
    layer1 = [c for c in s.clusters if c.layer == 1]
    measured["layer1Sizes"] = sorted((len(c.members) for c in layer1), reverse=True)
    say(f"  {measured['tokens']:,} tokens, {measured['decision']}, {measured['seconds']} s")
    return measured


def run(
    stack: Stack,
    agents: Sequence[int],
    seed: int,
    workers: int,
    shapes: Sequence[str] = tuple(SHAPES),
) -> dict[str, Any]:
    rows = []
    for n in agents:
        for shape in shapes:
            sizes = scaled(SHAPES[shape], n)
            data, right = case(sizes, seed)
            label = f"{n}-{shape.replace('/', '-')}"
            row: dict[str, Any] = {"shape": shape, "leafAgents": n, "sizes": sizes, "right": right}
            row["allToAll"] = _one(
                stack, f"{label}-a2a", _settings(data, "all_to_all", SPLIT, seed), workers
            )
            row["split"] = _one(
                stack, f"{label}-split", _settings(data, "hierarchical", SPLIT, seed), workers
            )
            if max(sizes) > SPLIT:
                unsplit = _settings(data, "hierarchical", UNSPLIT, seed)
                row["unsplit"] = _one(stack, f"{label}-unsplit", unsplit, workers)
            for key in ("split", "unsplit"):
                if key in row and row["allToAll"]["tokens"]:
                    row[key]["tokenSaving"] = round(
                        1 - row[key]["tokens"] / row["allToAll"]["tokens"], 3
                    )
            rows.append(row)
    return {"rows": rows, "maxClusterSize": SPLIT, "lean": LEAN}


def _decision(figures: dict[str, Any] | None, right: str) -> str:
    if figures is None:
        return "="
    return f"{figures['decision']} {'✓' if figures['decision'] == right else '✗'}"


def summary(section: dict[str, Any]) -> str:
    lines = [
        "Hierarchical (split at maxClusterSize 8 / unsplit) vs all-to-all, reading model",
        "  agents | shape | layer-1 sizes | all-to-all tokens | split tokens saved | unsplit "
        "saved | largest prompt a2a / split / unsplit | right | all-to-all | split | unsplit",
    ]
    for r in section["rows"]:
        a, s, u = r["allToAll"], r["split"], r.get("unsplit")
        unsplit_saved = f"{u['tokenSaving']:.1%}" if u else "(same)"
        largest = " / ".join(f"{x['maxPromptTokens']:,}" for x in (a, s, u) if x)
        lines.append(
            f"  {r['leafAgents']:6d} | {r['shape']:8s} | {s['layer1Sizes']} | {a['tokens']:,} | "
            f"{s['tokenSaving']:.1%} | {unsplit_saved} | {largest} | {r['right']} | "
            f"{_decision(a, r['right'])} | {_decision(s, r['right'])} | {_decision(u, r['right'])}"
        )
    return "\n".join(lines)
