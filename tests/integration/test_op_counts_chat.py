"""What a chat message and a reply cost, counted: three agents (fixed ids, so the scripted
model's answers are fixed) in a group chat whose replies always speak, each with 2 responses,
every delivery counted by the interceptor (``bench.cost.DeliveryUsage`` over
``functions.usage``, whose chain of sequential round trips counts side-by-side reads once and a
Pub/Sub publish of any number of messages as one).

A reply's round trips are its fan-out's up to the publish that starts the turn, plus the turn's
up to the commit that writes the reply (the model call between them is not a round trip). The
budgets below are the issue's targets (38 item 2: claim <= 3, race <= 4) for a message whose
fan-out publishes from the instance's memory of the chat (``fanout.ask_from_memory``); the
chat's first message, fanned out before any memory, reads first. A change that adds a round trip
to a reply, a Firestore call to a turn or a fan-out, or a model call to a message fails here:
undo it, or raise the budget in the same commit with its reason (and a ``python -m bench
--compare`` table, docs/TESTS.md)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from chat_docs import _chat_output, all_done, chat_experiment, chat_messages, persona_prompt
from experiment_state import errors, model_logs, settle
from raw_docs import agent

from bench.cost import DeliveryUsage
from functions.usage import Usage

AGENTS = 3
SPEAKS_NEVER_READY = _chat_output("explanation", "response")
"""Replies that always speak and never leave on their own: every agent answers until its two
responses are used (then leaves at its next turn)."""
REPLY_ROUND_TRIPS = {"claim": 3, "race": 4}
"""Per reply to a message fanned out from memory: the issue's targets."""
FIRST_REPLY_ROUND_TRIPS = {"claim": 8, "race": 9}
"""Per reply to the chat's first message: its fan-out has no memory of the chat (it reads the
stage and who is there first, and starts the discussion's clock: 4 before its publish), and
the turn re-reads the chat (4 claim, 4-5 race, seen)."""
FANOUT = {"rpcs": 5, "round_trips_before_publish": 4, "publishes": 1}
"""Per ``onChatMessageCreated``: its Firestore calls, the round trips before its first
publish (from memory: 1), and its publish calls (one for all the turns)."""
TURN_RPCS = 23
"""Per ``onAgentTurn``, at most: a turn that replies and then leaves the chat (its responses
used up: the leaving lock, the participant's transaction, the system message; 18-19 seen),
with room for that transaction to be retried once under contention (3 calls)."""


@dataclasses.dataclass(frozen=True)
class Reply:
    trigger: str
    fanout: int
    """The fan-out's round trips up to its first publish."""
    turn: int
    """The turn's round trips up to the reply's commit."""

    @property
    def round_trips(self) -> int:
        return self.fanout + self.turn


def _message_id(subject: str) -> str:
    return subject.rsplit("/", 1)[-1]


def _reply_commit(used: Usage) -> tuple[int, str] | None:
    """The turn's reply commit (it writes the message and the model call's log): its place in
    the chain, and the message it answers (its ``{message}-participant`` election or claim)."""
    triggers = [
        n.rsplit("/", 1)[-1].removesuffix("-participant")
        for _, method, names in used.calls
        for n in names
        if method == "Commit" and n.endswith("-participant") and "/triggerLogs/" in n
    ]
    for place, method, names in used.calls:
        reply = any("/chats/" in n for n in names) and any("/logs/" in n for n in names)
        if method == "Commit" and reply:
            return (place, triggers[0]) if triggers else None  # none: an opening
    return None


def _replies(counted: DeliveryUsage) -> list[Reply]:
    fanouts = {
        _message_id(subject): used
        for function, subject, used in counted.each
        if function == "onChatMessageCreated"
    }
    out = []
    for function, _, used in counted.each:
        commit = _reply_commit(used) if function == "onAgentTurn" else None
        if commit is not None and commit[1] in fanouts:
            place, trigger = commit
            out.append(Reply(trigger, fanouts[trigger].first_publish or 0, place))
    return out


def _asked(db, e: str) -> None:
    """The chat's first message, ``m1``, as the first agent's: a cohort of agents only, whose
    claim replies post on their first read (``turn._first_read_decides``), every sender a
    member (whose profile comes with the members read beside the chat), and a first message
    that is itself a reply."""
    db.document(f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/chats/m1").set(
        {
            "id": "m1",
            "type": "participant",
            "message": "Which project first?",
            "senderId": "agent-0",
            "agentId": "talker",
            "timestamp": datetime.now(UTC),
            "profile": {"name": "agent-0"},
        }
    )


@pytest.fixture(autouse=True)
def _idle_now(monkeypatch):
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")


@pytest.mark.parametrize("policy", ["claim", "race"])
def test_a_reply_and_a_message_cost_no_more_than_their_budget(runtime, db, policy):
    e = chat_experiment(db, mediator=False, electionPolicy=policy)
    config = persona_prompt(db, e, max_responses=2, min_messages=1)  # nobody opens the chat
    db.document(f"experiments/{e}/agentParticipants/talker/prompts/chat").update(
        {"structuredOutputConfig": SPEAKS_NEVER_READY}
    )
    ids = [
        agent(db, e, "chat", number=i, private_id=f"agent-{i}", agentConfig=config)
        for i in range(AGENTS)
    ]
    runtime.wait_until_idle(timeout=60)
    with DeliveryUsage() as counted:
        _asked(db, e)
        settle(runtime, all_done(db, e, ids))
    assert errors(db, e) == []
    said = [m for m in chat_messages(db, e) if m["type"] == "participant"][1:]
    assert len(said) >= AGENTS  # every agent answered (then used its second response or left)

    replies = _replies(counted)
    assert len(replies) >= AGENTS  # the openings aside, each reply found with its fan-out
    system = {m["id"] for m in chat_messages(db, e) if m["type"] == "system"}
    over = [
        r
        for r in replies
        if r.round_trips
        > (FIRST_REPLY_ROUND_TRIPS if r.fanout > 1 else REPLY_ROUND_TRIPS)[policy]
        + (r.trigger in system)  # an answer to a system message reads the chat again
    ]
    assert not over, (policy, over, replies)
    fanouts = [u for f, _, u in counted.each if f == "onChatMessageCreated"]
    assert fanouts and all(
        u.rpcs <= FANOUT["rpcs"]
        and (u.first_publish or 0) <= FANOUT["round_trips_before_publish"]
        and u.by_method["Publish"] + sum(1 for c in u.calls if c[1] == "Publish")
        <= FANOUT["publishes"]
        for u in fanouts
    ), [(u.rpcs, u.first_publish, u.calls) for u in fanouts]
    turns = [u.rpcs for f, _, u in counted.each if f == "onAgentTurn"]
    assert max(turns) <= TURN_RPCS, sorted(turns)

    calls = [log for log in model_logs(db, e) if log.description.startswith("chat reply")]
    if policy == "claim":  # one call per reply, and one per message that overtook a reply in
        # flight (an agent's leaving, written while another's claimed turn waited for its model)
        assert len(said) <= len(calls) <= len(said) + len(system), (len(calls), len(said))
    else:  # each agent that may answer calls once: the others, on every reply
        most = (AGENTS - 1) * (len(said) + 1)
        assert len(said) <= len(calls) <= most, (len(calls), len(said))
