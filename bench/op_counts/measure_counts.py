"""Issue 38 item 1's counts per chat message, per reply and per stage move, measured on two
trees alike (bench/RESULTS.md section 15b): not a test (it asserts nothing; the budgets are in
tests/integration/test_op_counts*.py). Copy it into a tree's tests/integration/ and run
``pytest tests/integration/measure_counts.py -s``: it prints one ``MEASURE {json}`` line per
scenario. An older tree needs ``functions.usage``'s chain of round trips (``Usage.round_trips``,
``published``, ``first_publish``, ``calls``) and the join in its side-by-side reads ported first,
as was done for 3d7acad (``3d7acad_round_trips.patch`` here). It keeps its own copies of the
op-count tests' helpers (the reply's commit, the move's commit, the first message): it must run
on trees that have no such tests."""

import collections
import json
import os
import threading
from datetime import UTC, datetime

import pytest
from chat_docs import _chat_output, all_done, chat_experiment, chat_messages, persona_prompt
from experiment_state import errors, model_logs, participants, settle
from raw_docs import agent

import emulator.invoker
from bench import transitions
from functions import usage
from tools.load_template import load

AGENTS = int(os.environ.get("MEASURE_AGENTS", "3"))
RESPONSES = int(os.environ.get("MEASURE_RESPONSES", "3"))


class Each:
    def __enter__(self):
        self.each, lock, original = [], threading.Lock(), emulator.invoker.Invoker.invoke
        me = self

        def invoke(invoker, delivery):
            with usage.counting() as used:
                try:
                    return original(invoker, delivery)
                finally:
                    with lock:
                        me.each.append((delivery.function, delivery.subject, used))

        self._saved = original
        emulator.invoker.Invoker.invoke = invoke
        return self

    def __exit__(self, *exc):
        emulator.invoker.Invoker.invoke = self._saved


def _totals(each):
    out = collections.Counter()
    for _, _, u in each:
        for k in ("rpcs", "reads", "writes", "transactions", "published"):
            out[k] += getattr(u, k)
    return out


def _reply(used):
    triggers = [
        n.rsplit("/", 1)[-1].removesuffix("-participant")
        for _, m, ns in used.calls
        for n in ns
        if m == "Commit" and n.endswith("-participant") and "/triggerLogs/" in n
    ]
    for place, m, ns in used.calls:
        if m == "Commit" and any("/chats/" in n for n in ns) and any("/logs/" in n for n in ns):
            return (place, triggers[0]) if triggers else None
    return None


@pytest.fixture(autouse=True)
def _idle_now(monkeypatch):
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")


@pytest.mark.parametrize("policy", ["claim", "race"])
def test_chat(runtime, db, policy):
    e = chat_experiment(db, mediator=False, electionPolicy=policy)
    config = persona_prompt(db, e, max_responses=RESPONSES, min_messages=1)
    db.document(f"experiments/{e}/agentParticipants/talker/prompts/chat").update(
        {"structuredOutputConfig": _chat_output("explanation", "response")}
    )
    ids = [agent(db, e, "chat", number=i, agentConfig=config) for i in range(AGENTS)]
    runtime.wait_until_idle(timeout=60)
    with Each() as counted:
        db.document(f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/chats/m1").set(
            {
                "id": "m1",
                "type": "participant",
                "message": "Which project first?",
                "senderId": "agent-0",
                "agentId": "talker",
                "timestamp": datetime.now(UTC),
                "profile": {"name": "Nine"},
            }
        )
        settle(runtime, all_done(db, e, ids), timeout=240)
    msgs = chat_messages(db, e)
    fanouts = {s.rsplit("/", 1)[-1]: u for f, s, u in counted.each if f == "onChatMessageCreated"}
    replies = []
    for f, _, u in counted.each:
        r = _reply(u) if f == "onAgentTurn" else None
        if r and r[1] in fanouts:
            replies.append(((fanouts[r[1]].first_publish or 0), r[0], r[1] == "m1"))
    logs = model_logs(db, e)
    calls = [x for x in logs if x.description.startswith("chat reply")]
    turns = [u for f, _, u in counted.each if f == "onAgentTurn"]
    tot = _totals(counted.each)
    n = len(msgs)
    said = sum(1 for m in msgs if m["type"] == "participant")
    before = collections.Counter(u.first_publish for u in fanouts.values())
    print(
        "MEASURE "
        + json.dumps(
            {
                "scenario": f"chat-{policy}",
                "messages": n,
                "participantMessages": said,
                "errors": len(errors(db, e)),
                "perMessage": {k: round(v / n, 2) for k, v in tot.items()},
                "modelCallsPerMessage": round(len(logs) / n, 2),
                "replyCallsPerReply": round(len(calls) / max(1, said - 1), 2),
                "replies": [(a, b, a + b) for a, b, first in replies if not first],
                "firstReply": [(a, b, a + b) for a, b, first in replies if first],
                "fanoutRoundTripsBeforePublish": sorted(before.items(), key=str),
                "fanoutRpcs": round(
                    sum(u.rpcs for u in fanouts.values()) / max(1, len(fanouts)), 2
                ),
                "turns": len(turns),
                "turnRpcs": round(sum(u.rpcs for u in turns) / max(1, len(turns)), 2),
                "turnRoundTrips": round(sum(u.round_trips for u in turns) / max(1, len(turns)), 2),
            }
        )
    )


def test_moves(runtime, db, monkeypatch):
    monkeypatch.setenv("DLAB_MODEL_OVERRIDE", "SCRIPTED")
    with Each() as counted:
        result = load(db, transitions.template(), agents=1, api_type="SCRIPTED", seed=1)
        e = result.experiment_id
        settle(runtime, lambda: all(p.timestamps.end_experiment for p in participants(db, e)))
    moves = []
    for f, _, u in counted.each:
        if f != "onParticipantUpdated":
            continue
        for place, m, ns in u.calls:
            if m == "Commit" and any("/participants/" in n for n in ns):
                moves.append((place, any("/logs/" in n for n in ns)))
                break
    tot = _totals(counted.each)
    n = 10
    print(
        "MEASURE "
        + json.dumps(
            {
                "scenario": "moves",
                "errors": len(errors(db, e)),
                "perMove": {k: round(v / n, 2) for k, v in tot.items()},
                "modelCallsPerMove": round(len(model_logs(db, e)) / n, 2),
                "moveRoundTrips": moves,
                "onParticipantUpdatedRoundTrips": [
                    u.round_trips for f, _, u in counted.each if f == "onParticipantUpdated"
                ],
                "deliveries": dict(collections.Counter(f for f, _, _ in counted.each)),
            }
        )
    )
