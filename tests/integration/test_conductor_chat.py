"""The conductor election policy in a group chat: one conductor call picks the agent to ask,
so at most one agent answers each message (also with events delivered twice), at about two
model calls per message."""

from __future__ import annotations

from collections import Counter

import pytest
from chat_docs import all_done, chat_experiment, chat_messages, persona_prompt, trigger_logs
from experiment_state import model_logs, settle
from raw_docs import agent

from emulator.chaos import ChaosSettings
from functions.chat.conducted import CONDUCTOR_ID

pytestmark = pytest.mark.usefixtures("clean")

NOT_ELECTIONS = ("initial-", "ready-", "quota-", "left-", "turn-", "answered-", "conductor-")


def test_conductor_policy_asks_one_agent_per_message(runtime, db, monkeypatch):
    monkeypatch.setenv("DLAB_CHAT_CONDUCTOR_MAX_PICKS", "2")
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")  # each watchdog tick stands for time passing
    doubled = ChaosSettings(seed=3, duplicate_rate=0.5, max_delay_s=0.05, fault_rate=0.0)
    with runtime.chaos(doubled) as run:  # half the events delivered twice, reordered
        e = chat_experiment(db, electionPolicy="conductor")
        config = persona_prompt(db, e, max_responses=2)
        ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(5)]
        settle(runtime, all_done(db, e, ids), timeout=240)
    assert run.counts()["duplicated"] > 0

    messages = chat_messages(db, e)
    logs = trigger_logs(db, e)
    # the answering agent keeps its claim on the message: {message}-{type}; one per message
    answered = Counter(
        log_id.rsplit("-", 1)[0] for log_id in logs if not log_id.startswith(NOT_ELECTIONS)
    )
    assert answered and max(answered.values()) == 1  # at most one agent answers each message
    ids_seen = [m["id"] for m in messages]
    assert len(ids_seen) == len(set(ids_seen))

    calls = [log for log in model_logs(db, e) if log.description.startswith("chat reply to ")]
    by_message = Counter(log.description.removeprefix("chat reply to ") for log in calls)
    conductor = Counter(
        log.description.removeprefix("chat reply to ")
        for log in calls
        if log.participant_id == CONDUCTOR_ID
    )
    assert conductor, "the conductor was never asked"
    assert max(conductor.values()) <= 2  # a pick, and at most one re-pick after a decline
    picks = {k: v for k, v in logs.items() if k.startswith("conductor-") and "picked" in v}
    assert picks
    # only the agents the conductor picked were asked to answer a message
    for message_id in by_message:
        pick = logs.get(f"conductor-{message_id}", {})
        asked = {pick.get("picked")} | {d.split(":", 1)[1] for d in pick.get("declined", [])}
        callers = {
            log.participant_id
            for log in calls
            if log.description == f"chat reply to {message_id}"
            and log.participant_id != CONDUCTOR_ID
        }
        assert callers <= asked, (message_id, callers, asked)
    print(f"{len(calls)} calls for {len(by_message)} messages")
