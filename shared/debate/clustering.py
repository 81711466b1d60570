"""Re-clustering head agents to maximize the diversity inside each cluster (the seed's cluster
formation algorithm), and the rule for whether a cluster debates at all.

- Number of clusters: the seed computes ``C_i`` from ``C_prev`` and ``num_rounds`` (it gives no
  closed form); we take ``C_i = ceil(C_prev / (num_rounds + 1))``: a cluster that debates
  ``num_rounds`` rounds after its openings gathers ``num_rounds + 1`` head agents, so more
  rounds merge faster and any ``num_rounds >= 1`` shrinks the count every layer. ``C_1`` is
  the first layer's clusters: one per category, or per part of a category larger than
  ``maxClusterSize`` (``packing.cluster_sizes``); so an upper cluster holds at most
  ``num_rounds + 1`` heads whatever the categories were.
- Target size ``ceil(n / C)``. Agents are taken in a seeded shuffle; the first C start the
  clusters; each next agent joins the not-yet-full cluster whose diversity score (sum of
  pairwise ``compare_responses``) rises most, the rise weighted by ``1 - size/target`` so small
  clusters are preferred; ties go to the lower cluster index.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any

Compare = Callable[[dict[str, Any], dict[str, Any]], float]


def num_clusters(previous: int, num_rounds: int) -> int:
    """``C_i = ceil(C_prev / (num_rounds + 1))``, at least 1 (see the module's docstring)."""
    if previous <= 1:
        return 1
    return max(1, math.ceil(previous / (max(0, num_rounds) + 1)))


def diversity(
    members: Sequence[str], responses: Mapping[str, dict[str, Any]], compare: Compare
) -> float:
    """Mean pairwise difference (0 for fewer than two)."""
    pairs = list(combinations(members, 2))
    if not pairs:
        return 0.0
    return sum(compare(responses[a], responses[b]) for a, b in pairs) / len(pairs)


def differences(
    agents: Sequence[str], responses: Mapping[str, dict[str, Any]], compare: Compare
) -> dict[tuple[str, str], float]:
    """The seed's dictionary of differences: ``compare`` once per pair, keyed ``(a, b)`` with
    ``a < b``, so clustering and its record read the same numbers."""
    return {(a, b): compare(responses[a], responses[b]) for a, b in combinations(sorted(agents), 2)}


def _difference(table: Mapping[tuple[str, str], float], a: str, b: str) -> float:
    return table[(a, b) if a < b else (b, a)]


def form_clusters(
    agents: Sequence[str],
    table: Mapping[tuple[str, str], float],
    count: int,
    seed: str,
) -> list[list[str]]:
    """``count`` clusters of ``agents`` from their ``differences`` (reproducible for the same
    seed and table)."""
    order = sorted(agents)
    random.Random(seed).shuffle(order)
    count = max(1, min(count, len(order)))
    target = math.ceil(len(order) / count)
    clusters: list[list[str]] = [[a] for a in order[:count]]
    for agent in order[count:]:
        best, best_gain = -1, -math.inf
        for i, cluster in enumerate(clusters):
            if len(cluster) >= target:
                continue
            rise = sum(_difference(table, agent, m) for m in cluster)
            gain = rise * (1 - len(cluster) / target)
            if gain > best_gain:
                best, best_gain = i, gain
        clusters[best].append(agent)
    return clusters


def should_debate(
    members: Sequence[str],
    dynamic: Sequence[str],
    responses: Mapping[str, dict[str, Any]],
    compare: Compare,
    threshold: float,
) -> tuple[bool, str]:
    """The seed's rule: several agents, and several dynamic ones or a high diversity."""
    if len(members) < 2:
        return False, "a single agent: nothing to debate"
    if len(dynamic) >= 2:
        return True, f"{len(dynamic)} dynamic agents"
    score = diversity(members, responses, compare)
    if score >= threshold:
        return True, f"one dynamic agent, diversity {score:.2f} >= {threshold:.2f}"
    return False, f"one dynamic agent and diversity {score:.2f} < {threshold:.2f}"
