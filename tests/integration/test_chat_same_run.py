"""The same seed gives the same chat: a claim chat and a turn-based chat, run calm and then again
(same experiment, same ids) under chaos delivery (duplicates, reordering, lost acks, model
faults: 429s, 503s, garbled replies), say the same messages, by the same authors, in the same
order (docs/WORK.md, "The same seed, the same run"). Chaos from ``DLAB_CHAOS_*``, seed 11 by
default.

The chat ends without a clock: the watchdog is ticked only once every delivery has settled
(``settle``), with ``DLAB_IDLE_AGENT_SECONDS=0``, so each tick stands for the chat having gone
quiet, and finds the same quiet chat in both runs."""

from __future__ import annotations

from collections import Counter

import pytest
from chat_docs import (
    add_mediator,
    all_done,
    chat_experiment,
    chat_messages,
    persona_prompt,
    trigger_logs,
)
from experiment_state import settle
from raw_docs import agent

from emulator.chaos import ChaosSettings
from functions.chat import fanout

pytestmark = pytest.mark.usefixtures("clean")

AGENTS = 4
RETRIES = 3
"""Corrective turns per chat reply: a garbled reply (an injected fault) is sent back, and the
scripted model answers as it would have (with none, DL's default, the fault ends the turn)."""
POLICIES = {"claim": {"electionPolicy": "claim"}, "turn-based": {"isTurnBased": True}}

Said = tuple[str, str, str]
"""A chat message as compared: type, author, text."""


@pytest.fixture(autouse=True)
def _quiet_means_idle(monkeypatch):
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")


def _write_chat(db, experiment_id: str, fields: dict) -> list[str]:
    """A mediator that opens with a fixed message and agents with fixed ids, all answering in
    structured output with ``RETRIES`` corrective turns."""
    e = chat_experiment(db, mediator=False, experiment_id=experiment_id, **fields)
    add_mediator(db, e, structured=True, initialMessage="Welcome: which option, and why?")
    config = persona_prompt(db, e, max_responses=3, structured=True)
    for prompt in ("agentMediators/host/prompts/chat", "agentParticipants/talker/prompts/chat"):
        db.document(f"experiments/{e}/{prompt}").update({"numRetries": RETRIES})
    return [
        agent(db, e, "intro", number=i, agentConfig=config, private_id=f"agent-{i}")
        for i in range(AGENTS)
    ]


def _said(db, e: str) -> list[Said]:
    return [(m["type"], m.get("senderId") or "", m["message"]) for m in chat_messages(db, e)]


def _conversation(said: list[Said]) -> list[Said]:
    """What the agents said, in order (a departure notice lands when its leave commits, which
    races the others' replies: its place is timing, that it came is not)."""
    return [m for m in said if m[0] != "system"]


def _transcript(db, e: str) -> str:
    """The chat with what each reply answered, for a failure's message."""
    messages = chat_messages(db, e)
    index = {m["id"]: i for i, m in enumerate(messages)}
    answered = {
        log["replyId"]: log_id.removeprefix("answered-")
        for log_id, log in trigger_logs(db, e).items()
        if log_id.startswith("answered-")
    }
    return "\n".join(
        f"{i:2} {m['type']:11} {m.get('senderId')}: {m['message'][:40]!r}"
        f" (answers {index.get(answered.get(m['id'], ''), '-')})"
        for i, m in enumerate(messages)
    )


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_chat_under_chaos_says_what_the_calm_run_said(runtime, db, monkeypatch, policy):
    e = f"exp-same-{policy}"
    ids = _write_chat(db, e, POLICIES[policy])
    done = all_done(db, e, ids)
    settle(runtime, done, rounds=30)
    calm, calm_transcript = _said(db, e), _transcript(db, e)
    runtime.reset()
    # a fresh instance: the calm run's memory of whom it asked in this room would otherwise
    # stand for the same room's first message under chaos (``fanout.ask_from_memory``)
    monkeypatch.setattr(fanout, "_asked", {})
    settings = ChaosSettings.from_env(duplicate_rate=0.5, fault_rate=0.25, max_delay_s=0.1, seed=11)
    with runtime.chaos(settings) as run:
        _write_chat(db, e, POLICIES[policy])
        settle(runtime, done, rounds=30)
    chaotic = _said(db, e)
    both = f"{run.describe()}\ncalm:\n{calm_transcript}\nunder chaos:\n{_transcript(db, e)}"
    assert _conversation(chaotic) == _conversation(calm), both
    assert Counter(chaotic) == Counter(calm), both  # the same departures
    assert len({m[1] for m in _conversation(calm)}) >= 3, both  # the mediator and 2 agents
    assert sum(run.faults.injected.values()) > 0 and run.counts()["duplicated"] > 0, both
