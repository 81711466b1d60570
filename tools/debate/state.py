"""A debate read back from Firestore: its documents, progress figures and a fingerprint of the
outcome (statements, clusters, decision) to compare runs."""

from __future__ import annotations

import dataclasses
from typing import Any

from google.cloud import firestore

from shared.debate.models import (
    Cluster,
    Debate,
    DebateAgent,
    DebateStatus,
    Differences,
    Layer,
    Round,
    Statement,
)


@dataclasses.dataclass
class DebateState:
    debate: Debate
    agents: list[DebateAgent]
    layers: list[Layer]
    clusters: list[Cluster]
    rounds: list[Round]
    statements: list[Statement]
    errors: list[dict[str, Any]]
    model_calls: int
    """Every logged attempt: accepted, corrected, rejected and failed calls alike."""
    differences: list[Differences] = dataclasses.field(default_factory=list)
    """The differences that formed each layer above the first (one record per layer)."""

    @property
    def done(self) -> bool:
        return self.debate.status == DebateStatus.DONE

    @property
    def failed(self) -> bool:
        """A unit of it ended: nothing moves until a user touches the debate."""
        return self.debate.status == DebateStatus.FAILED

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.statements)

    def progress(self) -> dict[str, Any]:
        """Layer, clusters and rounds done, statements, tokens, model calls."""
        open_rounds = [r for r in self.rounds if not r.complete]
        return {
            "status": self.debate.status or "starting",
            "paused": self.debate.paused,
            "layer": max((la.index for la in self.layers), default=0),
            "clusters": f"{sum(c.complete for c in self.clusters)}/{len(self.clusters)}",
            "rounds": f"{len(self.rounds) - len(open_rounds)}/{len(self.rounds)}",
            "open": sorted(r.id for r in open_rounds),
            "statements": len(self.statements),
            "tokens": self.tokens,
            "modelCalls": self.model_calls,
            "errors": len(self.errors),
            "decision": (self.debate.decision or {}).get("conclusion"),
        }

    def fingerprint(self) -> dict[str, Any]:
        """What the same seed must reproduce: every statement, every cluster, the decision."""
        return {
            "statements": {s.id: s.text for s in self.statements},
            "clusters": {c.id: (c.members, c.debates, c.outputs) for c in self.clusters},
            "decision": (self.debate.decision or {}).get("votes"),
            "differences": [d.to_firestore() for d in self.differences],
        }


def _all(db: firestore.Client, path: str) -> list[dict[str, Any]]:
    return [s.to_dict() or {} for s in db.collection(path).stream()]


def read_errors(db: firestore.Client, debate_id: str) -> list[dict[str, Any]]:
    """The debate's error records (readable even when its document is not a valid debate)."""
    return _all(db, f"debates/{debate_id}/errors")


def read(db: firestore.Client, debate_id: str) -> DebateState:
    base = f"debates/{debate_id}"
    snap = db.document(base).get()
    debate = Debate.model_validate(snap.to_dict() or {})
    logs = db.collection(f"{base}/logs")  # every attempt is a model call (and billed)
    return DebateState(
        debate=debate,
        agents=[DebateAgent.model_validate(d) for d in _all(db, f"{base}/agents")],
        layers=sorted(
            (Layer.model_validate(d) for d in _all(db, f"{base}/layers")), key=lambda x: x.index
        ),
        clusters=sorted(
            (Cluster.model_validate(d) for d in _all(db, f"{base}/clusters")),
            key=lambda c: (c.layer, c.index),
        ),
        rounds=sorted(
            (Round.model_validate(d) for d in _all(db, f"{base}/rounds")),
            key=lambda r: (r.layer, r.cluster_id, r.index),
        ),
        statements=sorted(
            (Statement.model_validate(d) for d in _all(db, f"{base}/statements")),
            key=lambda s: (s.layer, s.cluster_id, s.round, s.agent),
        ),
        errors=_all(db, f"{base}/errors"),
        model_calls=len(list(logs.stream())),
        differences=sorted(
            (Differences.model_validate(d) for d in _all(db, f"{base}/differences")),
            key=lambda x: x.layer,
        ),
    )
