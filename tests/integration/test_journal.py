"""The journal of model calls on the emulator: a reply that arrived is recorded with its call log,
and a unit's re-execution (a later attempt, a takeover of a dead holder's lease) or a replay
takes it from there instead of asking the provider again; a first execution reads nothing."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta

import pytest
from chat_docs import (
    add_mediator,
    all_done,
    chat_experiment,
    chat_messages,
    persona_prompt,
)
from delivery_policies import Retrying
from experiment_state import settle
from google.api_core import exceptions as gexc
from raw_docs import agent, human

from functions import journal, spend, work
from functions.agents import model_call
from functions.chat import messages
from functions.rooms import Room
from functions.settings import BackboneSettings
from functions.wire import AgentTurn, publish_turns
from shared.llm import providers
from shared.llm.base import ModelClient, ModelReply, ModelRequest, Usage
from shared.models import AgentModelSettings, ApiType, ParticipantProfile, ProfileAgentConfig, now

pytestmark = pytest.mark.usefixtures("clean")
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


class Counting:
    """The scripted model, counting the requests it answers (the provider's bill): their
    prompts, or (``seeds``) their seeds, which name the asking agent and what it is asked."""

    def __init__(self, inner: ModelClient, asked: list[str], seeds: bool = False) -> None:
        self.inner = inner
        self.asked = asked
        self.seeds = seeds

    def generate(self, request: ModelRequest) -> ModelReply:
        self.asked.append(request.seed if self.seeds else request.prompt)
        return self.inner.generate(request)


def _site(run: str) -> model_call.CallSite:
    agent = ParticipantProfile(
        private_id="member-1",
        agent_config=ProfileAgentConfig(
            model_settings=AgentModelSettings(api_type=ApiType.SCRIPTED)
        ),
    )
    return model_call.CallSite("x", agent, "day-1", "a turn", log_collection=f"{run}/logs")


def _ask(run: str) -> tuple[dict, model_call.CallStats]:
    stats = model_call.CallStats()
    answer = model_call.ask(_site(run), "Count.", SCHEMA, lambda parsed: parsed, stats=stats)
    return answer, stats


def _journal(db, run: str) -> list[dict]:
    return [d.to_dict() for d in db.collection(f"{run}/journal").get()]


def test_a_unit_run_again_takes_the_reply_it_recorded(db):
    run, lease = "societies/j1", "societies/j1/turnLeases/m1"
    asked: list[str] = []
    answers: list[dict] = []
    reused: list[int] = []

    def turn() -> None:
        answer, stats = _ask(run)
        answers.append(answer)
        reused.append(stats.reused)
        if len(answers) == 1:
            raise RuntimeError("the step's write failed after the reply arrived")

    unit = work.Unit(lease, "societies/j1/members/m1", turn)
    with providers.wrapped(lambda client: Counting(client, asked)):
        with pytest.raises(work.AttemptFailed):
            work.run(unit)
        assert work.run(unit).state == work.State.RAN
    assert len(asked) == 1  # one paid call for one logical call
    assert answers[0] == answers[1] and reused == [0, 1]
    (entry,) = _journal(db, run)
    assert entry["text"] and entry["log"].startswith(f"{run}/logs/")
    assert entry["description"] == "a turn" and entry["agent"] == "member-1"
    assert entry["expireAt"] > now() + timedelta(days=89)
    assert len(db.collection(f"{run}/logs").get()) == 1
    assert spend.totals(run).calls == 1


def test_a_takeover_of_a_dead_holder_takes_recorded_replies_and_spends_no_attempt(db):
    run, lease = "societies/j2", "societies/j2/turnLeases/m1"
    asked: list[str] = []
    with providers.wrapped(lambda client: Counting(client, asked)):
        first, _ = _ask(run)  # as the holder that then died did
        db.document(lease).set(
            {"token": "dead", "expiresAt": now() - timedelta(seconds=1), "attempts": 3}
        )
        again: list[dict] = []
        unit = work.Unit(lease, "societies/j2/members/m1", lambda: again.append(_ask(run)[0]))
        outcome = work.run(unit, BackboneSettings(work_max_attempts=3))
    assert outcome.state == work.State.RAN  # the dead holder's attempt was not the work's
    assert again == [first] and len(asked) == 1


def test_a_first_execution_reads_no_journal(db):
    """Outside a re-execution the journal is not read (no round trip): an entry planted for
    the very request is not seen, and the provider is asked."""
    run = "societies/j3"
    asked: list[str] = []
    with providers.wrapped(lambda client: Counting(client, asked)):
        first, _ = _ask(run)
        (entry,) = _journal(db, run)
        db.document(f"{run}/journal/{entry['key']}").update({"text": '{"n": -1}'})
        unit = work.Unit(f"{run}/turnLeases/m1", "societies/j3/members/m1", lambda: _ask(run))
        answer, stats = work.run(unit).result or ({}, None)
    assert len(asked) == 2 and answer == first != {"n": -1}
    assert stats is not None and stats.reused == 0


def test_a_replay_takes_every_recorded_reply(db, monkeypatch):
    run = "societies/j4"
    asked: list[str] = []
    with providers.wrapped(lambda client: Counting(client, asked)):
        first, _ = _ask(run)
        monkeypatch.setenv("DLAB_JOURNAL_REPLAY", "1")
        again, stats = _ask(run)
    assert again == first and len(asked) == 1 and stats.reused == stats.calls == 1
    assert spend.totals(run).calls == 1  # paid once, counted once
    assert journal.lookups_on()


def test_platform_interruptions_end_a_unit_only_past_their_own_bound(db):
    lease = "societies/j5/turnLeases/m1"
    ended: list[work.Failure] = []
    unit = work.Unit(lease, "societies/j5/members/m1", lambda: "x", ended=ended.append)
    dead = {"token": "dead", "expiresAt": now() - timedelta(seconds=1), "attempts": 1}
    db.document(lease).set({**dead, "interrupted": 2})
    assert work.run(unit, BackboneSettings(work_max_platform_failures=3)).result == "x"
    db.document(lease).set({**dead, "interrupted": 3})
    outcome = work.run(unit, BackboneSettings(work_max_platform_failures=3))
    assert outcome.state == work.State.ENDED
    (failure,) = ended
    assert failure.field == "(platform)"
    assert "platform interrupted it 4 time(s)" in failure.reason
    assert "not a failure of the work" in failure.reason and "killed runtime" in failure.reason


def test_a_transient_firestore_error_is_an_interruption_not_an_attempt(db):
    from google.api_core import exceptions as gexc

    lease = "societies/j6/turnLeases/m1"
    ended: list[work.Failure] = []

    def unavailable() -> str:
        raise gexc.ServiceUnavailable("the emulator went away")

    unit = work.Unit(lease, "societies/j6/members/m1", unavailable, ended=ended.append)
    settings = BackboneSettings(work_max_attempts=1, work_max_platform_failures=2)
    for interrupted in (1, 2):  # the work's budget of 1 is never spent
        with pytest.raises(work.AttemptFailed):
            work.run(unit, settings)
        lease_doc = db.document(lease).get().to_dict()
        assert (lease_doc["attempts"], lease_doc["interrupted"]) == (0, interrupted)
    assert work.run(unit, settings).state == work.State.ENDED
    (failure,) = ended
    assert failure.field == "(platform)" and "interrupted it 3 time(s)" in failure.reason
    assert "ServiceUnavailable" in failure.reason


def test_a_chat_turn_run_again_after_a_failure_takes_its_recorded_reply(runtime, db, monkeypatch):
    """A chat turn is not a unit of work: its delivery is retried. The retry of one whose post
    failed after its reply arrived (the reply is recorded with the call's log all the same)
    finds the event's failed delivery, read with its first reads, and takes the reply from the
    journal: the provider is asked once, and the message posted is the one the failed post
    wrote (its id names its author and slot)."""
    failed: list[str] = []
    post = messages.post

    def post_failing_once(room, message, *args, **kwargs):
        if not failed and message.type == "participant":
            failed.append(message.id)
            raise gexc.ServiceUnavailable("injected: the post's commit failed")
        return post(room, message, *args, **kwargs)

    monkeypatch.setattr(messages, "post", post_failing_once)
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")
    asked: list[str] = []
    retrying = Retrying(frozenset(spec.name for spec in runtime.registry if spec.retry))
    with (
        runtime.delivery_policy(retrying),
        runtime.model_wrapper(lambda client: Counting(client, asked, seeds=True)),
    ):
        e = chat_experiment(db, mediator=False, electionPolicy="claim")
        add_mediator(db, e, structured=True, initialMessage="Welcome!")
        config = persona_prompt(db, e, max_responses=2, structured=True)
        ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(2)]
        taken = journal.taken[f"experiments/{e}"]
        settle(runtime, all_done(db, e, ids))
    assert failed and failed[0] in {m["id"] for m in chat_messages(db, e)}
    assert journal.taken[f"experiments/{e}"] > taken
    twice = {seed: n for seed, n in Counter(asked).items() if n > 1}
    assert asked and not twice, twice


class Declining:
    """A model that declines every chat turn (structured output: ``shouldRespond`` false),
    counting the requests it answers by their seeds."""

    def __init__(self, asked: list[str]) -> None:
        self.asked = asked

    def generate(self, request: ModelRequest) -> ModelReply:
        self.asked.append(request.seed)
        text = json.dumps({"explanation": "nothing to add", "shouldRespond": False, "response": ""})
        return ModelReply(text=text, usage=Usage(10, 10))


def test_a_duplicate_of_a_claim_turn_that_passed_takes_its_decline_from_the_journal(runtime, db):
    """Under claim a turn that declines lets its claim go for the next agent of the order, with
    a ``passed-`` record in the same batch. A duplicate of it (Pub/Sub delivers at least once)
    takes the free claim, reads that record beside its first reads and takes its decline from
    the journal: the provider is asked once, and the duplicate passes the message on again."""
    asked: list[str] = []
    with runtime.model_wrapper(lambda client: Declining(asked)):
        e = chat_experiment(db, mediator=False, electionPolicy="claim")
        config = persona_prompt(db, e, max_responses=5, structured=True)
        hu = human(db, e, "chat")  # present: the chat is not "nobody may answer"
        here = agent(db, e, "chat", number=1, agentConfig=config)
        runtime.wait_until_idle(timeout=60)
        chat = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat"
        question = {"id": "h1", "type": "participant", "message": "Which project first?"}
        db.document(f"{chat}/chats/h1").set(
            {**question, "senderId": hu, "timestamp": now(), "profile": {"name": "Hu"}}
        )
        runtime.wait_until_idle(timeout=60)
        replies = [seed for seed in asked if "reply to h1" in seed]
        assert replies == [asked[-1]], asked  # the turn declined, once
        passed = messages.passed_id("h1", "participant", here)
        assert db.document(f"{chat}/triggerLogs/{passed}").get().exists
        assert not db.document(f"{chat}/triggerLogs/h1-participant").get().exists  # let go
        taken = journal.taken[f"experiments/{e}"]
        duplicate = AgentTurn.in_room(
            Room(e, "cohort-a", "chat"), "participant", here, trigger_chat_id="h1", order=(here,)
        )
        publish_turns(duplicate)
        runtime.wait_until_idle(timeout=60)
    assert [seed for seed in asked if "reply to h1" in seed] == replies  # not asked again
    assert journal.taken[f"experiments/{e}"] == taken + 1
    assert [m["id"] for m in chat_messages(db, e)][-1] == "h1"
