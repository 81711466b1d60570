"""Recovery without a touch: work an invocation lost (it died, or its event never came) is
driven on by the watchdog, and nothing is done twice."""

from __future__ import annotations

import contextlib
import json
import time
from datetime import timedelta

import pytest
from chat_docs import (
    ALWAYS_SPEAKS,
    all_done,
    chat_experiment,
    chat_messages,
    check_single_responders,
    persona_prompt,
)
from delivery_policies import Losing
from experiment_state import participant, settle
from raw_docs import agent, human, stage, write_experiment

from shared.models import ParticipantStatus, now
from tests.fakes import Recorded, Step, slow
from tests.fakes import fake_openai as openai

pytestmark = pytest.mark.usefixtures("clean")


def test_an_agent_whose_update_event_was_lost_is_moved_on_by_the_watchdog(runtime, db, monkeypatch):
    e = write_experiment(db, [stage("a", "info"), stage("b", "info"), stage("c", "info")])
    losing = Losing(lambda d: d.function == "onParticipantUpdated" and not losing.lost)
    with runtime.delivery_policy(losing):
        pid = agent(db, e, "a")
        runtime.wait_until_idle(timeout=60)
    assert losing.lost, "the test lost no event"
    stuck = participant(db, e, pid)
    assert stuck.current_status == ParticipantStatus.IN_PROGRESS
    runtime.tick()  # not stalled yet: nothing happens
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, pid).current_stage_id == stuck.current_stage_id
    monkeypatch.setenv("DLAB_STALLED_SECONDS", "0")
    settle(runtime, lambda: participant(db, e, pid).current_status == ParticipantStatus.SUCCESS)
    done = participant(db, e, pid).timestamps
    assert sorted(done.completed_stages) == ["a", "b", "c"]


def test_a_lease_left_by_a_dead_invocation_is_taken_over(runtime, db):
    e = write_experiment(db, [stage("a", "info"), stage("b", "info")])
    losing = Losing(lambda d: d.function == "onParticipantCreated")
    with runtime.delivery_policy(losing):
        pid = agent(db, e, "a")
        runtime.wait_until_idle(timeout=60)
    lease = f"experiments/{e}/moveLeases/{pid}"
    db.document(lease).set({"token": "dead", "expiresAt": now() - timedelta(seconds=1)})
    settle(runtime, lambda: participant(db, e, pid).current_status == ParticipantStatus.SUCCESS)
    assert not db.document(lease).get().exists


def test_a_chat_whose_openings_died_is_opened_again(runtime, db, monkeypatch):
    """Killed just as everyone entered the chat: the opening locks were taken, no opening was
    posted, and the idle watchdog skipped the empty chat."""
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")  # each settle tick stands for time passing
    e = chat_experiment(db)
    losing = Losing(lambda d: d.function == "onAgentTurn")
    with runtime.delivery_policy(losing):
        ids = [agent(db, e, "intro", number=i) for i in range(2)]
        runtime.wait_until_idle(timeout=60)
    assert losing.lost and chat_messages(db, e) == []
    logs = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/triggerLogs"
    for lost in ("initial-mediator-med-1", f"initial-participant-{ids[0]}"):
        db.document(f"{logs}/{lost}").set({"timestamp": now() - timedelta(minutes=5)})
    with monkeypatch.context() as later:  # one tick long after everyone arrived
        later.setenv("DLAB_STALLED_SECONDS", "0")
        runtime.tick()
        runtime.wait_until_idle(timeout=60)
    settle(runtime, all_done(db, e, ids))
    messages = check_single_responders(db, e)
    openings = [m for m in messages if m["type"] == "mediator"][:1]
    assert openings and messages[0]["type"] != "system"


QUESTION = "Which project first?"
ANSWER = "Project Alpha first."
LEASE_S = 5.0
"""``DLAB_LEASE_SECONDS`` in the claim tests: a claim's lease, renewed every third of it."""


def _chat_with_a_claimed_message(runtime, db, mode, *, losing=None, api_type="SCRIPTED", wait=True):
    """A human and an agent in a chat (claim policy, or turn-based), the human's message ``h1``
    written (its turns lost to ``losing``, if given; ``wait``: and handled). Returns the
    experiment and the agent's id."""
    fields = {"electionPolicy": "claim"} if mode == "claim" else {"isTurnBased": True}
    e = chat_experiment(db, mediator=False, **fields)
    config = persona_prompt(db, e, max_responses=5, api_type=api_type)
    db.document(f"experiments/{e}/agentParticipants/talker/prompts/chat").update(
        {"structuredOutputConfig": ALWAYS_SPEAKS}
    )
    hu = human(db, e, "chat")  # present: the agent's own messages are not "nobody may answer"
    here = agent(db, e, "chat", number=1, agentConfig=config)
    runtime.wait_until_idle(timeout=60)
    with runtime.delivery_policy(losing) if losing else contextlib.nullcontext():
        db.document(f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/chats/h1").set(
            {
                "id": "h1",
                "type": "participant",
                "message": QUESTION,
                "senderId": hu,
                "timestamp": now(),
                "profile": {"name": "Hu"},
            }
        )
        if wait:
            runtime.wait_until_idle(timeout=60)
    return e, here


def _tick_until_answered(runtime, db, e, within: float) -> float:
    """Tick the watchdog every second (as the local runtime does every 2 s) until ``h1`` has
    an answer, for at most ``within`` seconds; returns how long it took."""
    started = time.monotonic()
    while not _answers(db, e) and time.monotonic() - started < within:
        runtime.tick()
        runtime.wait_until_idle(timeout=60)
        time.sleep(1)
    return time.monotonic() - started


def _answers(db, e) -> list[str]:
    after = chat_messages(db, e)
    answers = after[[m["id"] for m in after].index("h1") + 1 :]
    return [m["senderId"] for m in answers if m["type"] == "participant"]


@pytest.mark.parametrize("mode", ["claim", "turn-based"])
def test_a_message_whose_claim_died_is_answered_after_all(runtime, db, monkeypatch, mode):
    """An agent claimed a human's message (claim policy: nobody else is asked; turn-based: it
    held the turn) and its invocation died before it answered, leaving a claim written before
    claims expired (no ``expiresAt``, taken long ago): once the message is a lease old, the
    watchdog releases the claim and the message is answered."""
    monkeypatch.setenv("DLAB_LEASE_SECONDS", str(LEASE_S))
    losing = Losing(lambda d: d.function == "onAgentTurn")
    e, here = _chat_with_a_claimed_message(runtime, db, mode, losing=losing)
    assert losing.lost, "the test lost no turn"
    logs = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/triggerLogs"
    # what the dead invocation left: its claim on the message
    dead = {"privateId": here, "agentType": "participant", "timestamp": now() - timedelta(hours=1)}
    db.document(f"{logs}/h1-participant").set(dead)
    _tick_until_answered(runtime, db, e, within=LEASE_S + 30)
    assert _answers(db, e)[:1] == ["agent-1"]
    assert db.document(f"{logs}/h1-participant").get().to_dict()["privateId"] == here
    check_single_responders(db, e)


@pytest.mark.parametrize("mode", ["claim", "turn-based"])
def test_a_message_whose_turn_was_lost_is_answered_after_all(runtime, db, monkeypatch, mode):
    """A message whose turn was lost before it claimed anything (its fan-out, or a hand-on,
    died with its invocation) has no claim to expire: a lease after it, the watchdog hands it
    on (claim: to the first agent of its order that has not passed it on, its ``passed-``
    records; turn-based: the agent holding the turn). Under claim the chat is idle meanwhile
    (``DLAB_IDLE_AGENT_SECONDS=0``) but its order has not run out, so nobody is asked a
    readiness question the calm run would not have asked."""
    monkeypatch.setenv("DLAB_LEASE_SECONDS", str(LEASE_S))
    if mode == "claim":
        monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")
    losing = Losing(lambda d: d.function == "onAgentTurn")
    e, _ = _chat_with_a_claimed_message(runtime, db, mode, losing=losing)
    assert losing.lost, "the test lost no turn"
    answered_after = _tick_until_answered(runtime, db, e, within=LEASE_S + 30)
    print(f"{mode}: the lost turn's message answered {answered_after:.1f} s after it")
    assert _answers(db, e) == ["agent-1"]
    asked = [
        s.to_dict().get("description", "") for s in db.collection(f"experiments/{e}/logs").get()
    ]
    assert not [a for a in asked if "readiness" in a], asked
    check_single_responders(db, e)


@pytest.mark.parametrize("mode", ["claim", "turn-based"])
def test_a_claim_left_by_a_killed_turn_is_released_within_a_lease(runtime, db, monkeypatch, mode):
    """Issue 27: a chat turn killed while it held its claim (a fresh lease nobody renews any
    more) stops the chat for one lease and a tick, not for the old fixed 360 s claim, and not
    only once the chat counts as idle (``DLAB_IDLE_AGENT_SECONDS``' 120 s)."""
    monkeypatch.setenv("DLAB_LEASE_SECONDS", str(LEASE_S))
    losing = Losing(lambda d: d.function == "onAgentTurn")
    e, here = _chat_with_a_claimed_message(runtime, db, mode, losing=losing)
    assert losing.lost, "the test lost no turn"
    logs = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/triggerLogs"
    killed = {
        "privateId": here,
        "agentType": "participant",
        "publicId": "agent-1",
        "timestamp": now(),
        "token": "killed",
        "expiresAt": now() + timedelta(seconds=LEASE_S),
    }
    db.document(f"{logs}/h1-participant").set(killed)
    answered_after = _tick_until_answered(runtime, db, e, within=LEASE_S + 30)
    print(f"{mode}: the dead claim's message answered {answered_after:.1f} s after the kill")
    assert _answers(db, e) == ["agent-1"]
    assert answered_after < LEASE_S + 20  # a lease, a tick, the reply; slack for a loaded machine
    check_single_responders(db, e)


def test_a_live_claim_outlasts_its_lease_while_the_model_is_slow(runtime, db, monkeypatch):
    """The claim's holder renews it while the model answers for longer than a lease, so the
    watchdog ticking meanwhile takes nothing over: one model call for the message, one
    reply."""
    monkeypatch.setenv("DLAB_LEASE_SECONDS", "3")
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE")
    slow_s = 10.0

    def answer(request: Recorded) -> Step:
        prompt = json.dumps(request.body)
        to_h1 = QUESTION in prompt and ANSWER not in prompt
        fields = {
            "explanation": "x",
            "response": ANSWER if to_h1 else "Hello.",
            "readyToEndChat": False,
        }
        reply = openai.text(json.dumps(fields))
        return slow(reply, slow_s) if to_h1 else reply

    with openai.FakeOpenAI(api_key="sk-test") as fake:
        fake.responder = answer
        db.document("experimenterData/x@y.z").set(
            {"apiKeys": {"openAIApiKey": {"apiKey": "sk-test", "baseUrl": fake.base_url}}}
        )
        e, _ = _chat_with_a_claimed_message(runtime, db, "claim", api_type="OPENAI", wait=False)
        started = time.monotonic()
        while time.monotonic() - started < slow_s + 3:  # the watchdog ticks through the call
            runtime.tick()
            time.sleep(1)
        runtime.wait_until_idle(timeout=60)
        asked = [r for r in fake.requests if QUESTION in json.dumps(r.body)]
        asked = [r for r in asked if ANSWER not in json.dumps(r.body)]
    assert _answers(db, e) == ["agent-1"]
    assert len(asked) == 1, f"{len(asked)} model calls for one message"


def test_an_agent_whose_leaving_died_leaves_after_all(runtime, db, monkeypatch):
    """An invocation died holding the agent's leaving lock (before it completed the stage):
    every later leave found the lock and did nothing. The watchdog releases the lock of an
    agent still in the chat once it is older than any invocation, and the agent leaves."""
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")
    e = chat_experiment(db)
    losing = Losing(lambda d: d.function == "onParticipantCreated")
    with runtime.delivery_policy(losing):
        pid = agent(db, e, "intro")
        runtime.wait_until_idle(timeout=60)
    logs = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/triggerLogs"
    dead = {"privateId": pid, "timestamp": now(), "token": "dead", "expiresAt": now()}
    db.document(f"{logs}/left-{pid}").set(dead)
    db.document(f"experiments/{e}/participants/{pid}").update({"touched": True})
    settle(runtime, all_done(db, e, [pid]))
    left = [m for m in chat_messages(db, e) if m.get("leftChatBy")]
    assert [m["leftChatBy"] for m in left] == ["agent-0"]
