"""The debate live view's data: progress (layer, clusters, rounds, statements, tokens), the
clusters with their members and why they debated, the latest statements, error records and the
decision, read in one pass (``tools.debate.state``)."""

from __future__ import annotations

from typing import Any

from google.cloud import firestore
from pydantic import BaseModel

from tools.debate import state as debate_state

LATEST = 40


class ClusterRow(BaseModel):
    id: str
    layer: int
    name: str
    members: list[str]
    head: str
    debates: bool | None
    reason: str
    rounds: str
    complete: bool


class StatementRow(BaseModel):
    id: str
    agent: str
    round: str
    kind: str
    conclusion: str
    tokens: int
    text: str


class DifferenceRow(BaseModel):
    """One pair of the seed's dictionary of differences that formed a layer's clusters."""

    layer: int
    a: str
    b: str
    difference: float


class DebateView(BaseModel):
    debate_id: str
    name: str
    mode: str
    progress: dict[str, Any]
    clusters: list[ClusterRow]
    statements: list[StatementRow]
    errors: list[dict[str, Any]]
    decision: dict[str, Any] | None
    differences: list[DifferenceRow] = []


def _cluster(s: debate_state.DebateState, c: Any) -> ClusterRow:
    rounds = [r for r in s.rounds if r.cluster_id == c.id]
    return ClusterRow(
        id=c.id,
        layer=c.layer,
        name=c.label,
        members=c.members,
        head=c.head_agent,
        debates=c.debates,
        reason=c.reason,
        rounds=f"{sum(r.complete for r in rounds)}/{len(rounds)}",
        complete=c.complete,
    )


def read_view(db: firestore.Client, debate_id: str) -> DebateView:
    s = debate_state.read(db, debate_id)
    latest = sorted(s.statements, key=lambda x: x.created_at.timestamp() if x.created_at else 0.0)[
        -LATEST:
    ]
    return DebateView(
        debate_id=debate_id,
        name=s.debate.name,
        mode=str(s.debate.mode),
        progress=s.progress(),
        clusters=[_cluster(s, c) for c in s.clusters],
        statements=[
            StatementRow(
                id=x.id,
                agent=x.agent,
                round=x.round_id,
                kind=str(x.kind),
                conclusion=x.conclusion,
                tokens=x.tokens,
                text=x.text,
            )
            for x in reversed(latest)
        ],
        errors=[
            {k: e.get(k) for k in ("document", "field", "reason", "occurrences")} for e in s.errors
        ],
        decision=s.debate.decision,
        differences=[
            DifferenceRow(layer=d.layer, a=p.a, b=p.b, difference=p.difference)
            for d in s.differences
            for p in d.pairs
        ],
    )
