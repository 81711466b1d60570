"""Layer completion, exactly once: when every cluster of a layer is complete, either the final
decision (after ``numLayers`` layers, or when one agent is left, or for the baselines) or the
next layer: the head agents re-clustered for diversity, each cluster's opening round made of
the statements its members carry up."""

from __future__ import annotations

from typing import Any

from google.cloud import firestore

from functions import store, transactions
from functions.debate import docs
from shared.debate import clustering, decision, kits, naming
from shared.debate.models import (
    Cluster,
    Debate,
    DebateMode,
    DebateStatus,
    Layer,
    Round,
    StatementKind,
)
from shared.models import now


def complete_layer(d: str, index: int) -> bool:
    """True if this call completed the layer."""
    debate = docs.read_debate(d)
    layer = docs.read_layer(d, naming.layer_id(index))
    if layer.complete:
        return False
    clusters = docs.read_many(Cluster, [docs.cluster(d, c) for c in layer.clusters])
    done = [c for c in clusters.values() if c is not None and c.complete]
    if len(done) < len(layer.clusters):
        return False
    outputs = {a: s for c in sorted(done, key=lambda c: c.index) for a, s in c.outputs.items()}
    kit = kits.resolve(debate.user_functions, docs.debate(d))
    made = docs.statements(d, list(outputs.values()))
    responses = {a: m.response for a, s in outputs.items() if (m := made[s]) is not None}
    final = (
        index >= debate.num_layers or len(outputs) <= 1 or debate.mode != DebateMode.HIERARCHICAL
    )
    if final:
        result = decision.get_final_decision(responses, kit.draw_final_conclusion)
        result.update(layer=index, statements=outputs)
        writes = _final(d, result)
    else:
        count = clustering.num_clusters(len(outputs), debate.num_layers - index)
        groups = clustering.form_clusters(
            list(outputs), responses, kit.compare_responses, count, f"{debate.seed}:L{index + 1}"
        )
        writes = _next_layer(d, debate, index + 1, groups, outputs)

    def body(transaction: Any) -> bool:
        current = docs.read_layer(d, layer.id, transaction)
        if current.complete:
            return False
        transaction.update(
            store.ref(docs.layer(d, layer.id)), {"complete": True, "outputs": outputs}
        )
        for path, data, create in writes:
            if create:
                transaction.create(store.ref(path), data)
            else:
                transaction.update(store.ref(path), data)
        return True

    return transactions.run(body)


Write = tuple[str, dict[str, Any], bool]
"""(path, data, create: True to create, False to update)."""


def _final(d: str, result: dict[str, Any]) -> list[Write]:
    update = {
        "status": DebateStatus.DONE.value,
        "decision": result,
        "finishedAt": firestore.SERVER_TIMESTAMP,
    }
    return [(docs.debate(d), update, False)]


def _next_layer(
    d: str, debate: Debate, index: int, groups: list[list[str]], outputs: dict[str, str]
) -> list[Write]:
    layer = Layer(
        id=naming.layer_id(index),
        index=index,
        clusters=[naming.cluster_id(index, i) for i in range(len(groups))],
    )
    writes: list[Write] = [(docs.layer(d, layer.id), layer.to_firestore(), True)]
    for i, members in enumerate(groups):
        cluster = Cluster(
            id=naming.cluster_id(index, i),
            layer=index,
            index=i,
            name=f"Cluster{i}",
            members=members,
            dynamic=members,
            carried={m: outputs[m] for m in members},
        )
        opening = Round(
            id=naming.round_id(cluster.id, 0),
            cluster_id=cluster.id,
            layer=index,
            index=0,
            kind=StatementKind.CARRIED,
            agents=members,
            created_at=now(),
        )
        writes.append((docs.cluster(d, cluster.id), cluster.to_firestore(), True))
        writes.append((docs.round_(d, opening.id), opening.to_firestore(), True))
    return writes
