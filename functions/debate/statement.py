"""One statement: a Pub/Sub turn of one agent in one round. The statement's id is
deterministic (round and agent) and it is created, never overwritten; a lease per statement
keeps duplicate deliveries from asking the model twice."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from typing import Any

from google.api_core import exceptions as gexc

from functions import errors, store, work
from functions.agents.model_call import AnswerFailed
from functions.debate import asking, docs, failing, user
from functions.debate.messages import DebateTurn
from shared.debate import compose, naming, tokens
from shared.debate.kits import Kit
from shared.debate.models import (
    Cluster,
    Debate,
    DebateAgent,
    DebateStatus,
    Round,
    Statement,
    StatementKind,
)
from shared.debate.prompts import Memory
from shared.errors import AlreadyRecorded
from shared.llm import ModelError
from shared.models import DocumentError, ErrorRecord, now

log = logging.getLogger(__name__)


class ProviderWaits(AlreadyRecorded):
    """The provider kept failing through this attempt: the platform retries the turn (the unit
    counts it); the record comes once, when the unit's attempts are spent."""


def take_turn(turn: DebateTurn) -> None:
    """The statement as a unit of work: ended, its round shows the agent blocked and the debate
    FAILED (``_ended``)."""
    lease = docs.lease(turn.debate_id, turn.statement_id)
    where = docs.agent(turn.debate_id, turn.agent)
    ended = functools.partial(_ended, turn)
    work.run(work.Unit(lease, where, lambda: _make(turn), ended=ended))


def _ended(turn: DebateTurn, failure: work.Failure) -> None:
    rnd = store.ref(docs.round_(turn.debate_id, turn.round_id))
    rnd.set(Round.fields(blocked={turn.agent: failure.reason[:500]}), merge=True)
    failing.fail(turn.debate_id, failure)


def _make(turn: DebateTurn) -> None:
    d = turn.debate_id
    path = docs.statement(d, turn.statement_id)
    round_path = docs.round_(d, turn.round_id)
    exists, debate, round_exists = docs.fetch(
        (None, path), (Debate, docs.debate(d)), (None, round_path)
    )
    if not round_exists:
        # a round is written before its turns are published: this one was lost (the data
        # restored from an export, issue 40 row 9). Its previous round's completion, re-driven
        # by the watchdog, writes it again and publishes its turns: no record, no retry.
        log.info("debate %s: turn %s of round %s, which is gone", d, turn.agent, turn.round_id)
        return
    rnd = docs.read_round(d, turn.round_id)
    if exists or debate.paused or debate.status == DebateStatus.FAILED:
        return  # made already; paused or failed: resuming or a touch re-drives what is missing
    if turn.agent not in rnd.agents:
        raise DocumentError(docs.round_(d, rnd.id), "agents", f"{turn.agent} is not in the round")
    made: Statement | None
    if rnd.kind == StatementKind.CARRIED:
        made = _carry(d, rnd, docs.read_cluster(d, rnd.cluster_id), turn.agent)
    else:
        cluster, agent = docs.fetch(
            (Cluster, docs.cluster(d, rnd.cluster_id)), (DebateAgent, docs.agent(d, turn.agent))
        )
        made = _speak(d, debate, rnd, cluster, agent)
    if made is None:
        return
    with contextlib.suppress(gexc.AlreadyExists):  # another delivery made it meanwhile
        store.ref(path).create(made.to_firestore())
    if turn.agent in rnd.blocked:
        _resolved(d, rnd, turn.agent)


def _carry(d: str, rnd: Round, cluster: Cluster, agent: str) -> Statement:
    source_id = cluster.carried.get(agent)
    if not source_id:
        raise DocumentError(docs.cluster(d, cluster.id), f"carried.{agent}", "missing")
    source = docs.statements(d, [source_id])[source_id]
    if source is None:
        raise DocumentError(docs.statement(d, source_id), "(document)", "document does not exist")
    return Statement(
        id=naming.statement_id(rnd.id, agent),
        round_id=rnd.id,
        cluster_id=cluster.id,
        layer=rnd.layer,
        round=rnd.index,
        agent=agent,
        kind=StatementKind.CARRIED,
        text=source.text,
        response=source.response,
        conclusion=source.conclusion,
        source=source.id,
        created_at=now(),
    )


def memory(d: str, cluster: Cluster, rounds: int) -> Memory:
    """The seed's debate memory: rounds 0..rounds-1 of the cluster, agent → statement text."""
    ids = [
        naming.statement_id(naming.round_id(cluster.id, i), a)
        for i in range(rounds)
        for a in cluster.members
    ]
    found = docs.statements(d, ids)
    out: list[dict[str, str]] = []
    for i in range(rounds):
        texts: dict[str, str] = {}
        for agent in cluster.members:
            statement_id = naming.statement_id(naming.round_id(cluster.id, i), agent)
            made = found[statement_id]
            if made is None:
                raise DocumentError(docs.statement(d, statement_id), "(document)", "not made yet")
            texts[agent] = made.text
        out.append(texts)
    return out


def _speak(
    d: str, debate: Debate, rnd: Round, cluster: Cluster, agent: DebateAgent
) -> Statement | None:
    kit = user.kit(debate, d)
    prompt = compose.statement_prompt(
        kit.prompts, agent, StatementKind(rnd.kind), memory(d, cluster, rnd.index), debate.data
    )
    try:
        formatted = asking.ask(
            d,
            debate,
            agent.name,
            rnd.id,
            prompt,
            kit.prompts.response_schema,
            kit.format_agent_response,
        )
    except ModelError as error:
        if error.retryable:
            reason = f"round {rnd.id}: no statement from {agent.name}: {error}"
            raise ProviderWaits(reason) from error
        _blocked(d, rnd, agent, error)
        return None
    except AnswerFailed as error:
        _blocked(d, rnd, agent, error)
        return None
    return _statement(kit, rnd, agent, prompt, formatted)


def _statement(
    kit: Kit, rnd: Round, agent: DebateAgent, prompt: str, formatted: dict[str, Any]
) -> Statement:
    reply = formatted.get("text") if set(formatted) == {"text"} else json.dumps(formatted)
    return Statement(
        id=naming.statement_id(rnd.id, agent.name),
        round_id=rnd.id,
        cluster_id=rnd.cluster_id,
        layer=rnd.layer,
        round=rnd.index,
        agent=agent.name,
        kind=rnd.kind,
        text=kit.prompts.render(formatted),
        response=formatted,
        conclusion=kit.draw_final_conclusion(formatted),
        prompt_tokens=tokens.count(prompt),
        completion_tokens=tokens.count(str(reply)),
        created_at=now(),
    )


def _blocked(d: str, rnd: Round, agent: DebateAgent, error: Exception) -> None:
    """The model never answered validly (or cannot be called): the statement stops at once,
    since asking again would cost as much and fail the same way. One record names the agent
    and the round; the round keeps the reason and the debate is FAILED until a touch retries
    it (a redelivery meanwhile finds it FAILED and calls nothing)."""
    reason = f"round {rnd.id}: no statement from {agent.name}: {error}"
    where = DocumentError(docs.agent(d, agent.name), f"rounds.{rnd.id}", reason)
    errors.record_error(errors.current_function(), where)
    blocked = Round.fields(blocked={agent.name: str(error)[:500]})
    store.ref(docs.round_(d, rnd.id)).set(blocked, merge=True)
    failing.fail(d, work.Failure(where.document, where.field, failing.attempt(), reason))
    log.warning("%s", reason)


def _resolved(d: str, rnd: Round, agent: str) -> None:
    """The statement a failed unit had stopped is made: its error records get ``resolvedAt``."""
    for path, data in docs.error_records(d, docs.agent(d, agent)):
        if data.get("field") == f"rounds.{rnd.id}" or f"round {rnd.id}:" in data.get("reason", ""):
            store.ref(path).update(ErrorRecord.fields(resolved_at=now()))
