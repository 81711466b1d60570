"""Layer completion, exactly once: when every cluster of a layer is complete, either the final
decision (after ``numLayers`` layers, or when one agent is left, or for the baselines) or the
next layer: the head agents re-clustered for diversity, each cluster's opening round made of
the statements its members carry up."""

from __future__ import annotations

from typing import Any

from google.api_core import exceptions as gexc

from functions import store
from functions.debate import docs, user
from shared.debate import clustering, decision, naming
from shared.debate.models import (
    Cluster,
    Debate,
    DebateMode,
    DebateStatus,
    Difference,
    Differences,
    Layer,
    Round,
    StatementKind,
)
from shared.models import now, parse_document

ATTEMPTS = 8
Write = tuple[str, dict[str, Any], bool]
"""(path, data, create: True to create, False to update)."""


def complete_layer(d: str, index: int) -> bool:
    """True if this call completed the layer: a batch conditional on the layer document's
    update time (compare-and-set, as for rounds), so concurrent checks complete it once."""
    path = docs.layer(d, naming.layer_id(index))
    for _ in range(ATTEMPTS):
        snap = store.ref(path).get()
        layer = parse_document(Layer, path, snap.to_dict() if snap.exists else None)
        if layer.complete:
            return False
        writes = _completion(d, layer)
        if writes is None:
            return False
        batch = store.batch()
        for write_path, data, create in writes:
            if write_path == path:
                option = store.unchanged_since(snap.update_time)
                batch.update(store.ref(path), data, option=option)
            elif create:
                batch.create(store.ref(write_path), data)
            else:
                batch.update(store.ref(write_path), data)
        try:
            batch.commit()
        except (gexc.FailedPrecondition, gexc.AlreadyExists, gexc.Aborted):
            continue
        return True
    raise RuntimeError(f"layer {index} of debate {d}: still changing after {ATTEMPTS} checks")


def _completion(d: str, layer: Layer) -> list[Write] | None:
    """The writes that complete the layer (the first one: the layer itself), or None while a
    cluster of it is still debating."""
    clusters = docs.read_many(Cluster, [docs.cluster(d, c) for c in layer.clusters])
    done = [c for c in clusters.values() if c is not None and c.complete]
    if len(done) < len(layer.clusters):
        return None
    debate = docs.read_debate(d)
    outputs = {a: s for c in sorted(done, key=lambda c: c.index) for a, s in c.outputs.items()}
    kit = user.kit(debate, d)
    made = docs.statements(d, list(outputs.values()))
    responses = {a: m.response for a, s in outputs.items() if (m := made[s]) is not None}
    writes: list[Write] = [(docs.layer(d, layer.id), {"complete": True, "outputs": outputs}, False)]
    final = (
        layer.index >= debate.num_layers
        or len(outputs) <= 1
        or debate.mode != DebateMode.HIERARCHICAL
    )
    if final:
        result = decision.get_final_decision(responses, kit.draw_final_conclusion)
        result.update(layer=layer.index, statements=outputs)
        return writes + _final(d, result)
    count = clustering.num_clusters(len(outputs), debate.num_rounds)
    table = clustering.differences(list(outputs), responses, kit.compare_responses)
    groups = clustering.form_clusters(
        list(outputs), table, count, f"{debate.seed}:L{layer.index + 1}"
    )
    record = _differences(d, layer.index + 1, list(outputs), count, table)
    return [*writes, record, *_next_layer(d, debate, layer.index + 1, groups, outputs)]


def _differences(
    d: str, index: int, agents: list[str], count: int, table: dict[tuple[str, str], float]
) -> Write:
    """The record of the differences that formed layer ``index`` (created with it, once)."""
    layer_id = naming.layer_id(index)
    pairs = [Difference(a=a, b=b, difference=v) for (a, b), v in table.items()]
    record = Differences(id=layer_id, layer=index, agents=agents, count=count, pairs=pairs)
    return (docs.differences(d, layer_id), record.to_firestore(), True)


def _final(d: str, result: dict[str, Any]) -> list[Write]:
    update = {
        "status": DebateStatus.DONE.value,
        "decision": result,
        "finishedAt": store.SERVER_TIMESTAMP,
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
