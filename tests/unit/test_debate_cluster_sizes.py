"""How the first layer splits categories into clusters of at most ``maxClusterSize`` leaf agents
(issue 31 item 2): every shape the model's categorization may give (3, 4, 6, 8 categories,
uneven ones like 29/2/1) at 8, 32 and 128 agents gives bounded clusters that hold every agent
once, the same clusters for the same inputs, and the upper layers follow the seed's count."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest

from shared.debate import clustering, naming, packing
from shared.debate.models import Debate

SHAPES: dict[str, list[int]] = {
    "3": [11, 11, 10],
    "4": [8, 8, 8, 8],
    "6": [6, 6, 5, 5, 5, 5],
    "8": [4] * 8,
    "11/13/8": [11, 13, 8],
    "20/8/4": [20, 8, 4],
    "29/2/1": [29, 2, 1],
    "one": [32],
}


def _scaled(shape: list[int], agents: int) -> list[int]:
    """``shape`` (given for 32 agents) for ``agents``: proportional, every category kept."""
    sizes = [max(1, round(n * agents / 32)) for n in shape]
    sizes[sizes.index(max(sizes))] += agents - sum(sizes)
    return sizes


def _data(sizes: list[int]) -> list[dict[str, Any]]:
    """One entry per leaf agent (about 30 tokens against a limit of 40), interleaved so the
    packing's grouping, not the data's order, makes the categories."""
    owners = [c for c, n in enumerate(sizes) for _ in range(n)]
    owners = owners[::2] + owners[1::2]
    return [
        {"category": f"Topic{c}", "data": f"Item {i}: a short line of news, figure {i % 97}%."}
        for i, c in enumerate(owners)
    ]


def _debate(sizes: list[int], max_size: int = 8, statics: int = 0) -> Debate:
    return Debate.model_validate(
        {
            "name": "S",
            "data": _data(sizes),
            "tokenLimit": 40,
            "maxClusterSize": max_size,
            "staticAgents": [{"personality": f"p{i}"} for i in range(statics)],
        }
    )


def test_cluster_sizes_are_bounded_balanced_and_cover_every_agent() -> None:
    for agents in range(0, 201):
        for bound in range(2, 17):
            sizes = packing.cluster_sizes(agents, bound)
            assert sum(sizes) == agents and len(sizes) == math.ceil(agents / bound)
            if sizes:
                assert max(sizes) <= bound and max(sizes) - min(sizes) <= 1
                assert sizes == sorted(sizes, reverse=True)
    assert packing.cluster_sizes(13, 8) == [7, 6]
    assert packing.cluster_sizes(29, 8) == [8, 7, 7, 7]
    assert packing.cluster_sizes(8, 8) == [8]


@pytest.mark.parametrize("agents", [8, 32, 128])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_shape_gives_bounded_clusters_holding_every_agent_once(
    shape: str, agents: int
) -> None:
    sizes = _scaled(SHAPES[shape], agents)
    debate = _debate(sizes)
    first = packing.first_layer(debate, debate.data, "data")
    leaves = [a.name for a in first.agents]
    assert len(leaves) == agents  # one entry per agent
    members = [m for c in first.clusters for m in c.members]
    assert Counter(members) == Counter(leaves)  # every agent in exactly one cluster
    assert all(len(c.members) <= debate.max_cluster_size for c in first.clusters)
    expected = sorted(s for n in sizes for s in packing.cluster_sizes(n, debate.max_cluster_size))
    assert sorted(len(c.members) for c in first.clusters) == expected
    for c in first.clusters:  # a cluster holds one category; its parts are numbered
        held = {a.category for a in first.agents if a.name in c.members}
        assert held == {c.name}
        assert c.parts == sum(1 for d in first.clusters if d.name == c.name) and c.part < c.parts
    heads = [naming.category_head("S", c.name, c.part, c.parts) for c in first.clusters]
    assert len(set(heads)) == len(heads)
    assert [c.index for c in first.clusters] == list(range(len(first.clusters)))
    again = packing.first_layer(_debate(sizes), _debate(sizes).data, "data")
    assert again == first  # the same inputs, the same agents and clusters


@pytest.mark.parametrize("rounds", [1, 2, 3])
@pytest.mark.parametrize("shape", ["3", "8", "29/2/1", "one"])
def test_layers_above_follow_the_seed_count_and_stay_small(shape: str, rounds: int) -> None:
    """Layer 1 is one cluster per category part; above it the seed's ``C_i = ceil(C_prev /
    (numRounds + 1))`` counts the clusters (every head of the layer below is one member), so an
    upper cluster holds about ``numRounds + 1`` heads, whatever the categories were."""
    debate = _debate(_scaled(SHAPES[shape], 128))
    count = len(packing.first_layer(debate, debate.data, "data").clusters)
    while count > 1:
        above = clustering.num_clusters(count, rounds)
        assert above == math.ceil(count / (rounds + 1)) < count
        assert math.ceil(count / above) <= rounds + 1  # the target size of form_clusters
        count = above


def test_split_parts_are_consecutive_and_statics_join_the_parts_in_turn() -> None:
    debate = _debate([13, 3], max_size=4, statics=2)
    first = packing.first_layer(debate, debate.data, "data")
    topic0 = [c for c in first.clusters if c.name == "Topic0"]
    assert [len(c.dynamic) for c in topic0] == [4, 3, 3, 3]
    assert [c.label for c in topic0][1] == "Topic0 (part 2 of 4)"
    order = [a.name for a in first.agents if a.category == "Topic0"]
    assert [m for c in topic0 for m in c.dynamic] == order  # consecutive runs, packing order
    assert first.clusters[0].members[-1] == "S_Static0"
    assert first.clusters[1].members[-1] == "S_Static1"
    assert naming.category_head("S", "Topic0", 1, 4) == "S_Topic0_Part1_HeadAgent"
    assert naming.category_head("S", "Topic1", 0, 1) == "S_Topic1_HeadAgent"  # the seed's


def test_the_largest_prompt_memory_is_bounded_by_the_cluster_size_not_the_data() -> None:
    """What a first-layer argument prompt carries from the memory (statements of the members,
    every round so far) grows with the cluster, not with the category: at 32 and at 128 agents
    in one category the largest cluster is the same, and the layer's memory load (sum of
    size², statements read per round) is at most agents x maxClusterSize."""
    loads = {}
    for agents in (32, 128):
        first = packing.first_layer(_debate([agents]), _debate([agents]).data, "data")
        largest = max(len(c.members) for c in first.clusters)
        loads[agents] = sum(len(c.members) ** 2 for c in first.clusters)
        assert largest == 8 and loads[agents] <= agents * 8
    assert loads[128] == 4 * loads[32]  # linear in the agents, where all-to-all is quadratic
