"""Round and cluster completion, each detected exactly once: a transaction re-reads the round,
checks every statement of it exists, marks it complete and creates what comes next (the next
round, the head agent and its opening statement's round, or the cluster's outputs). Statement
creation triggers it; duplicates and late deliveries find the round complete and do nothing."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from google.api_core import exceptions as gexc

from functions import store
from functions.debate import docs, user
from shared.debate import clustering, naming
from shared.debate.kits import Kit
from shared.debate.models import (
    Cluster,
    Debate,
    DebateAgent,
    DebateMode,
    Role,
    Round,
    Statement,
    StatementKind,
)
from shared.models import now, parse_document

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Next:
    """What a completed round leads to."""

    round: Round | None = None
    head: DebateAgent | None = None
    cluster_update: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def cluster_complete(self) -> bool:
        return bool(self.cluster_update.get("complete"))


ATTEMPTS = 8


def complete_round(d: str, round_id: str) -> Next | None:
    """Complete the round if all its statements exist; what came next, or None.

    Compare-and-set rather than a transaction: the statements of a round are made together, so
    their checks run together, and the emulator's pessimistic transactions queued them for about
    2 s each. The check reads the round, then commits ``complete`` and what comes next in one
    atomic batch conditional on the round's update time; of concurrent checks one commits, the
    others re-read and find the round complete."""
    for _ in range(ATTEMPTS):
        snap = store.ref(docs.round_(d, round_id)).get()
        if not snap.exists:
            # lost with the data (the Firestore emulator started again from an export, issue
            # 40 row 9) under a statement made after it, by a turn in flight across the
            # restart: the previous round's completion, re-driven by the watchdog, writes the
            # round again, and its statements' checks complete it. No record.
            log.info("debate %s: a statement of round %s, which is gone", d, round_id)
            return None
        rnd = parse_document(
            Round, docs.round_(d, round_id), snap.to_dict() if snap.exists else None
        )
        if rnd.complete:
            return None
        made = docs.statements(d, [naming.statement_id(rnd.id, a) for a in rnd.agents])
        if any(s is None for s in made.values()):
            return None  # the missing statement's own trigger checks again
        debate = docs.read_debate(d)
        kit = user.kit(debate, d)
        cluster = docs.read_cluster(d, rnd.cluster_id)
        by_agent = {s.agent: s for s in made.values() if s is not None}
        step = _next(d, debate, kit, cluster, rnd, by_agent)
        batch = store.batch()
        option = store.unchanged_since(snap.update_time)
        batch.update(
            store.ref(docs.round_(d, rnd.id)),
            Round.fields(complete=True, blocked={}),
            option=option,
        )
        if step.round is not None:
            batch.create(store.ref(docs.round_(d, step.round.id)), step.round.to_firestore())
        if step.head is not None:
            batch.set(store.ref(docs.agent(d, step.head.name)), step.head.to_firestore())
        if step.cluster_update:
            batch.update(store.ref(docs.cluster(d, cluster.id)), step.cluster_update)
        try:
            batch.commit()
        except (gexc.FailedPrecondition, gexc.AlreadyExists, gexc.Aborted):
            continue  # another check got there first (or the round changed): look again
        return step
    raise RuntimeError(f"round {round_id} of debate {d}: still changing after {ATTEMPTS} checks")


def _round(cluster: Cluster, index: int, kind: StatementKind, agents: list[str]) -> Round:
    return Round(
        id=naming.round_id(cluster.id, index, head=kind == StatementKind.HEAD_OPENING),
        cluster_id=cluster.id,
        layer=cluster.layer,
        index=index,
        kind=kind,
        agents=agents,
        created_at=now(),
    )


def _outputs(by_agent: dict[str, Statement], agents: list[str]) -> dict[str, Any]:
    return {"complete": True, "outputs": {a: by_agent[a].id for a in agents}}


def _next(
    d: str, debate: Debate, kit: Kit, cluster: Cluster, rnd: Round, by_agent: dict[str, Statement]
) -> Next:
    if rnd.kind == StatementKind.HEAD_OPENING:
        return Next(cluster_update=_outputs(by_agent, rnd.agents))
    if rnd.index == 0:
        return _after_openings(d, debate, kit, cluster, by_agent)
    if rnd.index < debate.num_rounds:
        return Next(round=_round(cluster, rnd.index + 1, StatementKind.ARGUMENT, cluster.members))
    return _after_debate(d, debate, cluster, by_agent, rnd.index + 1)


def _after_openings(
    d: str, debate: Debate, kit: Kit, cluster: Cluster, by_agent: dict[str, Statement]
) -> Next:
    """The seed's rule decides whether the cluster debates; one that does not passes on its
    first dynamic agent, and says why."""
    if cluster.synthesize:
        responses = {a: s.response for a, s in by_agent.items()}
        debates, reason = clustering.should_debate(
            cluster.members,
            cluster.dynamic,
            responses,
            kit.compare_responses,
            debate.diversity_threshold,
        )
        if not debates:
            first = (cluster.dynamic or cluster.members)[0]
            update = {**_outputs(by_agent, [first]), "debates": False, "reason": reason}
            return Next(cluster_update=update)
    elif debate.mode == DebateMode.SELF_CONSISTENCY:
        update = {**_outputs(by_agent, cluster.members), "debates": False}
        return Next(cluster_update={**update, "reason": "self-consistency: samples only"})
    else:
        debates, reason = True, "baseline: every agent debates"
    decided = {"debates": debates, "reason": reason}
    if debate.num_rounds >= 1:
        next_round = _round(cluster, 1, StatementKind.ARGUMENT, cluster.members)
        return Next(round=next_round, cluster_update=decided)
    step = _after_debate(d, debate, cluster, by_agent, 1)
    return dataclasses.replace(step, cluster_update={**decided, **step.cluster_update})


def _after_debate(
    d: str, debate: Debate, cluster: Cluster, by_agent: dict[str, Statement], index: int
) -> Next:
    """After the last round: the head agent's opening statement, or (baselines) every member's last
    statement as the cluster's outputs."""
    if not cluster.synthesize:
        return Next(cluster_update=_outputs(by_agent, cluster.members))
    head = head_agent(d, debate, cluster)
    update = {"headAgent": head.name}
    return Next(
        round=_round(cluster, index, StatementKind.HEAD_OPENING, [head.name]),
        head=head,
        cluster_update=update,
    )


def head_agent(d: str, debate: Debate, cluster: Cluster) -> DebateAgent:
    """The seed's head agent: a first-layer head holds its cluster's data (its category's, or
    its part's of a split category); a head above represents heads and reads their debate
    (their data is in their statements)."""
    if cluster.layer == 1:
        name = naming.category_head(debate.name, cluster.name, cluster.part, cluster.parts)
        members = docs.read_many(DebateAgent, [docs.agent(d, m) for m in cluster.dynamic])
        entries = [e for a in members.values() if a is not None for e in a.entries]
    else:
        name = naming.cluster_head(debate.name, cluster.index, cluster.layer)
        entries = []
    return DebateAgent(
        name=name,
        role=Role.HEAD,
        category=cluster.name if cluster.layer == 1 else "",
        entries=entries,
        layer=cluster.layer,
        represented_agents=cluster.members,
        represented_cluster=cluster.id,
    )
