"""Recovery without a touch: work an invocation lost (it died, or its event never came) is
driven on by the watchdog, and nothing is done twice."""

from __future__ import annotations

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

from functions.chat.watchdog import CLAIM_ENV, IDLE_ENV, STALLED_ENV
from shared.models import ParticipantStatus, now

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
    monkeypatch.setenv(STALLED_ENV, "0")
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
    monkeypatch.setenv(IDLE_ENV, "0")  # each settle tick stands for time passing
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
        later.setenv(STALLED_ENV, "0")
        runtime.tick()
        runtime.wait_until_idle(timeout=60)
    settle(runtime, all_done(db, e, ids))
    messages = check_single_responders(db, e)
    openings = [m for m in messages if m["type"] == "mediator"][:1]
    assert openings and messages[0]["type"] != "system"


@pytest.mark.parametrize("mode", ["claim", "turn-based"])
def test_a_message_whose_claim_died_is_answered_after_all(runtime, db, monkeypatch, mode):
    """An agent claimed a human's message (claim policy: nobody else is asked; turn-based: it
    held the turn) and its invocation died before it answered. Once the claim is older than any
    invocation, the watchdog releases it and the message is answered."""
    fields = {"electionPolicy": "claim"} if mode == "claim" else {"isTurnBased": True}
    e = chat_experiment(db, mediator=False, **fields)
    config = persona_prompt(db, e, max_responses=5)
    db.document(f"experiments/{e}/agentParticipants/talker/prompts/chat").update(
        {"structuredOutputConfig": ALWAYS_SPEAKS}
    )
    hu = human(db, e, "chat")  # present: the agent's own messages are not "nobody may answer"
    here = agent(db, e, "chat", number=1, agentConfig=config)
    runtime.wait_until_idle(timeout=60)
    losing = Losing(lambda d: d.function == "onAgentTurn")
    with runtime.delivery_policy(losing):
        db.document(f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/chats/h1").set(
            {
                "id": "h1",
                "type": "participant",
                "message": "Which project first?",
                "senderId": hu,
                "timestamp": now(),
                "profile": {"name": "Hu"},
            }
        )
        runtime.wait_until_idle(timeout=60)
    assert losing.lost, "the test lost no turn"
    logs = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/triggerLogs"
    # what the dead invocation left: its claim on the message
    dead = {"privateId": here, "agentType": "participant", "timestamp": now() - timedelta(hours=1)}
    db.document(f"{logs}/h1-participant").set(dead)
    monkeypatch.setenv(IDLE_ENV, "0")  # the tick comes long after the message
    monkeypatch.setenv(CLAIM_ENV, "0")
    runtime.tick()
    runtime.wait_until_idle(timeout=60)
    after = chat_messages(db, e)
    answers = after[[m["id"] for m in after].index("h1") + 1 :]
    assert [m["senderId"] for m in answers if m["type"] == "participant"][:1] == ["agent-1"]
    assert db.document(f"{logs}/h1-participant").get().to_dict()["privateId"] == here
    check_single_responders(db, e)


def test_an_agent_whose_leaving_died_leaves_after_all(runtime, db, monkeypatch):
    """An invocation died holding the agent's leaving lock (before it completed the stage):
    every later leave found the lock and did nothing. The watchdog releases the lock of an
    agent still in the chat once it is older than any invocation, and the agent leaves."""
    monkeypatch.setenv(IDLE_ENV, "0")
    monkeypatch.setenv(CLAIM_ENV, "0")
    e = chat_experiment(db)
    losing = Losing(lambda d: d.function == "onParticipantCreated")
    with runtime.delivery_policy(losing):
        pid = agent(db, e, "intro")
        runtime.wait_until_idle(timeout=60)
    logs = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/triggerLogs"
    db.document(f"{logs}/left-{pid}").set({"privateId": pid, "timestamp": now()})
    db.document(f"experiments/{e}/participants/{pid}").update({"touched": True})
    settle(runtime, all_done(db, e, [pid]))
    left = [m for m in chat_messages(db, e) if m.get("leftChatBy")]
    assert [m["leftChatBy"] for m in left] == ["agent-0"]
