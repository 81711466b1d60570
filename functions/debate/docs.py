"""Where a debate's documents live, and typed reads of them: by path, and the named queries the
debate's steps make (open rounds and layers, ended units, a member's error records)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from functions import store
from shared import paths
from shared.debate.models import (
    TERMINAL,
    Cluster,
    Debate,
    DebateAgent,
    Layer,
    Round,
    Statement,
)
from shared.models import parse_document

M = TypeVar("M", bound=BaseModel)


def debate(d: str) -> str:
    return paths.build(paths.DEBATE, debateId=d)


def _in_debate(pattern: str) -> Callable[[str, str], str]:
    """The path of one kind of a debate's documents, from the debate's id and the document's."""
    name = pattern.rsplit("{", 1)[1].rstrip("}")

    def path(d: str, doc_id: str) -> str:
        return paths.build(pattern, debateId=d, **{name: doc_id})

    return path


agent = _in_debate(paths.DEBATE_AGENT)
layer = _in_debate(paths.DEBATE_LAYER)
cluster = _in_debate(paths.DEBATE_CLUSTER)
round_ = _in_debate(paths.DEBATE_ROUND)
statement = _in_debate(paths.DEBATE_STATEMENT)
lease = _in_debate(paths.DEBATE_LEASE)
differences = _in_debate(paths.DEBATE_DIFFERENCES)


def _collection(d: str, pattern: str) -> str:
    return paths.collection_of(pattern, debateId=d)


def open_rounds(d: str) -> list[Round]:
    """The debate's rounds not complete yet."""
    found = store.find(_collection(d, paths.DEBATE_ROUND), ("complete", "==", False))
    return [Round.model_validate(snap.to_dict()) for snap in found]


def open_layers(d: str) -> list[Layer]:
    """The debate's layers not complete yet."""
    found = store.find(_collection(d, paths.DEBATE_LAYER), ("complete", "==", False))
    return [Layer.model_validate(snap.to_dict()) for snap in found]


def ended_leases(d: str) -> list[str]:
    """The paths of the leases of the debate's ended units (``LeaseDoc.failed``)."""
    found = store.find(_collection(d, paths.DEBATE_LEASE), ("failed", "==", True))
    return [snap.reference.path for snap in found]


def error_records(d: str, document: str) -> list[tuple[str, dict[str, Any]]]:
    """The debate's error records about ``document``: each one's path and data."""
    found = store.find(_collection(d, paths.DEBATE_ERROR), ("document", "==", document))
    return [(snap.reference.path, snap.to_dict() or {}) for snap in found]


def unfinished_debates() -> list[str]:
    """The ids of the debates neither done nor failed: running ones, and ones that never
    started (only their status read)."""
    found = store.find(paths.DEBATE.rsplit("/", 1)[0], fields=["status"])
    return [s.id for s in found if (s.to_dict() or {}).get("status") not in TERMINAL]


def read_debate(d: str, transaction: store.Transaction | None = None) -> Debate:
    return store.read(Debate, debate(d), transaction)


def read_agent(d: str, name: str, transaction: store.Transaction | None = None) -> DebateAgent:
    return store.read(DebateAgent, agent(d, name), transaction)


def read_cluster(d: str, cluster_id: str, transaction: store.Transaction | None = None) -> Cluster:
    return store.read(Cluster, cluster(d, cluster_id), transaction)


def read_round(d: str, round_id: str, transaction: store.Transaction | None = None) -> Round:
    return store.read(Round, round_(d, round_id), transaction)


def read_layer(d: str, layer_id: str, transaction: store.Transaction | None = None) -> Layer:
    return store.read(Layer, layer(d, layer_id), transaction)


def read_many(
    model: type[M], refs: list[str], transaction: store.Transaction | None = None
) -> dict[str, M | None]:
    """Documents by path in one round trip (``None`` for a missing one)."""
    snaps = store.snapshots(refs, transaction)
    found: dict[str, M | None] = dict.fromkeys(refs)
    for path, snap in snaps.items():
        if snap.exists:
            found[path] = parse_document(model, path, snap.to_dict())
    return found


def fetch(*wanted: tuple[type[BaseModel] | None, str]) -> list[Any]:
    """Several documents in one round trip, each parsed as its model (a DocumentError names a
    missing or malformed one); ``None`` for a model asks only whether the document exists."""
    snaps = store.snapshots([p for _, p in wanted])
    out: list[Any] = []
    for model, path in wanted:
        snap = snaps.get(path)
        data = snap.to_dict() if snap is not None and snap.exists else None
        out.append(data is not None if model is None else parse_document(model, path, data))
    return out


def statements(
    d: str, ids: list[str], transaction: store.Transaction | None = None
) -> dict[str, Statement | None]:
    """Statements by id (``None`` for one not made yet)."""
    by_path = read_many(Statement, [statement(d, i) for i in ids], transaction)
    return {i: by_path[statement(d, i)] for i in ids}
