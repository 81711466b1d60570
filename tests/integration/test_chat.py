"""Group chat with agent participants and a mediator, on the real emulators and functions."""

from __future__ import annotations

import concurrent.futures
import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from chat_docs import (
    ALWAYS_SPEAKS,
    NOT_ELECTIONS,
    all_done,
    chat_experiment,
    chat_messages,
    check_no_message_twice,
    check_single_responders,
    persona_prompt,
    run_duplicated,
    trigger_logs,
)
from delivery_policies import Losing
from experiment_state import doc, errors, model_logs, participant, settle
from google.api_core import exceptions as gexc
from raw_docs import agent, human

from functions import store, transactions, usage
from functions.chat import election, messages, readiness, turn
from functions.rooms import Room
from functions.wire import AgentTurn
from shared.llm import providers
from shared.llm.base import ModelReply, Usage
from shared.models import ParticipantStatus

THREADS = [
    {"id": "t1", "type": "DEFAULT", "description": "Which project first?"},
    {"id": "t2", "type": "DEFAULT", "description": "How to fund it?"},
]


@pytest.fixture(autouse=True)
def _idle_now(monkeypatch):
    """Every watchdog tick counts every chat agent as idle (ticks stand for time passing), and
    a chat still empty a second after its agents arrived as stalled: when every agent chose
    silence for its opening (1 in 12 runs of two agents), it is opened again."""
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")
    monkeypatch.setenv("DLAB_STALLED_SECONDS", "1")


def test_agents_only_chat_starts_runs_and_everyone_moves_on(runtime, db):
    e = chat_experiment(db)
    ids = [agent(db, e, "intro", number=i) for i in range(3)]
    settle(runtime, all_done(db, e, ids))
    messages = check_single_responders(db, e)
    assert any(m["type"] == "participant" for m in messages)
    assert any(log.private_id == "med-1" for log in model_logs(db, e))  # the mediator took part
    left = [m for m in messages if m.get("leftChatBy")]
    assert sorted(m["leftChatBy"] for m in left) == [f"agent-{i}" for i in range(3)]
    for pid in ids:
        assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS
    assert errors(db, e) == []


def test_threads_advance_only_when_everyone_is_ready(runtime, db):
    """Agents that always speak when they have a turn (only their readiness is the model's
    choice), so that someone must answer in thread 2: an agent that could decline made a
    silent thread 2 a legitimate outcome now and then."""
    e = chat_experiment(db, discussions=THREADS)
    config = persona_prompt(db, e, max_responses=100)
    db.document(f"experiments/{e}/agentParticipants/talker/prompts/chat").update(
        {"structuredOutputConfig": ALWAYS_SPEAKS}
    )
    ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(3)]
    settle(runtime, all_done(db, e, ids))
    messages = check_single_responders(db, e)
    public = doc(db, f"experiments/{e}/cohorts/cohort-a/publicStageData/chat")
    assert public["currentDiscussionId"] == "t2"
    marker = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/triggerLogs/current-thread"
    assert doc(db, marker)["discussionId"] == "t2"  # written with the switch
    assert set(public["discussionTimestampMap"]["t1"]) == {f"agent-{i}" for i in range(3)}
    switch = next(
        i for i, m in enumerate(messages) if m["type"] == "system" and m["discussionId"] == "t2"
    )
    # nobody spoke in thread 2 before the switch; the announcement restarted the conversation
    assert all(m["discussionId"] == "t1" for m in messages[:switch] if m["type"] != "system")
    assert any(m["discussionId"] == "t2" and m["type"] == "participant" for m in messages[switch:])
    for pid in ids:
        assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS


def test_a_reply_written_for_a_thread_the_chat_has_left_is_not_posted(runtime, db):
    """A reply reads the thread, the chat switches (and announces it), then the reply is
    written: it must not land in the old thread after the new one began (the stress chat saw
    it in 2 of 10 runs). The post checks the switch's marker in its transaction."""
    e = chat_experiment(db, discussions=THREADS, mediator=False)
    room = Room(e, "cohort-a", "chat")
    responder = {"agentType": "participant", "privateId": "a", "publicId": "agent-a"}

    def reply(thread: str) -> dict:
        return messages.system_message("hi", thread, type="participant")

    first = reply("t1")
    assert messages.post(room, first, responder, election=None, slot=None) == "posted"
    transactions.run(lambda transaction: messages.mark_thread(room, "t2", transaction))
    late, on_time = reply("t1"), reply("t2")
    assert messages.post(room, late, responder, election=None, slot=None) == "thread-moved"
    assert messages.post(room, on_time, responder, election="m1-participant", slot=1) == "posted"
    again = reply("t2")
    assert messages.post(room, again, responder, election="m1-participant", slot=2) == "answered"
    posted = {m["id"] for m in chat_messages(db, e)}
    assert posted == {first.id, on_time.id}


def test_a_threaded_post_commits_in_the_transaction_its_marker_read_began(runtime, db, monkeypatch):
    """A reply's post begins its transaction with the marker's read, made beside the chat's
    last read (``messages.read_thread``: one round trip fewer than the client's own begin).
    It posts as before; it stops when the switch came first; either way it ends, so the next
    switch's write of the marker is not held up (an open one would hold it 2 s and abort it);
    and one that meets contention posts in a transaction of its own."""
    e = chat_experiment(db, discussions=THREADS, mediator=False)
    room = Room(e, "cohort-a", "chat")
    responder = {"agentType": "participant", "privateId": "a", "publicId": "agent-a"}
    marker = db.document(room.log_path(messages.THREAD_MARKER))

    def post(thread: str, read: transactions.Begun) -> str:
        message = messages.system_message("hi", thread, type="participant")
        return messages.post(room, message, responder, election=None, slot=None, thread_read=read)

    first = messages.read_thread(room)
    assert first.documents == {marker.path: None}  # no switch yet
    assert post("t1", first) == "posted" and first.ended
    transactions.run(lambda transaction: messages.mark_thread(room, "t2", transaction))
    late = messages.read_thread(room)
    assert late.documents[marker.path]["discussionId"] == "t2"
    assert post("t1", late) == "thread-moved" and late.ended
    marker.update({"checked": True}, timeout=10)  # at once: nothing holds the marker
    contended = messages.read_thread(room)

    def aborted() -> None:
        raise gexc.Aborted("Transaction lock timeout.")

    monkeypatch.setattr(contended, "commit", aborted)
    assert post("t2", contended) == "posted" and contended.ended
    assert sorted(m["discussionId"] for m in chat_messages(db, e)) == ["t1", "t2"]


def test_a_race_election_is_tried_once_by_the_turns_of_one_instance(runtime, db):
    """A message's turns on one instance, their models answering together, try its election
    record once (``messages.take_election``): one takes it, the others lose without a create
    of their own; another message's election is tried anew, and the record stands for the
    turns of other instances (``take_lock``)."""
    e = chat_experiment(db, mediator=False)
    room = Room(e, "cohort-a", "chat")
    owner = {"agentType": "participant", "privateId": "a", "publicId": "agent-a"}

    def take(log_id: str) -> bool:
        return messages.take_election(room, log_id, owner) is not None

    with concurrent.futures.ThreadPoolExecutor(7) as pool:
        together = list(pool.map(take, ["m1-participant"] * 7))
    assert sorted(together) == [False] * 6 + [True]
    with usage.counting() as used:
        assert [take("m2-participant") for _ in range(3)] == [True, False, False]
    assert used.by_method == {"Commit": 1}
    assert messages.take_lock(room, "m2-participant", owner) is None
    assert set(trigger_logs(db, e)) == {"m1-participant", "m2-participant"}


def test_a_chat_whose_openings_all_chose_silence_is_opened_again(runtime, db, monkeypatch):
    """Two agents open the chat, and both choose silence (their opening locks marked done, as
    such an opening leaves them): nobody would ever speak. Once the chat has stayed empty past
    the stall time, the watchdog asks for the openings again, each a new model call."""
    e = chat_experiment(db, mediator=False)
    config = persona_prompt(db, e, max_responses=5)
    with runtime.delivery_policy(Losing(lambda d: d.function == "onAgentTurn")):
        ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(2)]
        runtime.wait_until_idle(timeout=60)
    logs = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/triggerLogs"
    silent = datetime.now(UTC) - timedelta(minutes=5)
    for pid in ids:
        lock = {"privateId": pid, "timestamp": silent, "done": True}
        db.document(f"{logs}/initial-participant-{pid}").set(lock)
    monkeypatch.setenv("DLAB_STALLED_SECONDS", "0")
    runtime.tick()
    runtime.wait_until_idle(timeout=60)
    again = trigger_logs(db, e)
    for pid in ids:  # taken anew by the new openings (the old ones were released)
        assert again[f"initial-participant-{pid}"]["timestamp"] > silent
    described = {log.description for log in model_logs(db, e)}
    assert any(d.startswith("chat opening message (reopened-") for d in described), described


def test_a_readiness_decided_in_a_thread_the_chat_has_left_is_dropped(runtime, db):
    """An agent decides it is ready while thread 1 is on; the discussion moves to thread 2,
    the last, before the mark is written. The mark must not make the agent leave thread 2
    unseen (it did: in 1 of 12 runs every agent left the last thread without a word)."""
    e = chat_experiment(db, discussions=THREADS)
    db.document(f"experiments/{e}/cohorts/cohort-a/publicStageData/chat").update(
        {"currentDiscussionId": "t2"}
    )
    with runtime.delivery_policy(Losing(lambda d: True)):  # the agent itself stays still
        a = agent(db, e, "chat")
        runtime.wait_until_idle(timeout=60)
    room, stage = Room(e, "cohort-a", "chat"), store.read_stage(e, "chat")
    profile = participant(db, e, a)
    late = readiness.participant_ready(room, stage, profile, decided_in="t1")
    assert late == readiness.Readiness.THREAD_MOVED_ON
    assert participant(db, e, a).current_stage_id == "chat"
    assert readiness.participant_ready(room, stage, profile, decided_in="t2") == "left"
    assert participant(db, e, a).current_stage_id == "end"


class _AnsweredMeanwhile:
    """A model that replies, ready to end, while someone else answers the message (h2)."""

    def __init__(self, db, e):
        self.chats = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/chats"
        self.db = db

    def generate(self, request):
        _human_message(self.db, self.chats, "h2", "Or the park?")
        reply = {
            "explanation": "",
            "shouldRespond": True,
            "response": "The park.",
            "readyToEndChat": True,
        }
        return ModelReply(text=json.dumps(reply), usage=Usage(1, 1))


def _human_message(db, chats, mid, text):
    db.document(f"{chats}/{mid}").set(
        {
            "id": mid,
            "type": "participant",
            "message": text,
            "senderId": "human-1",
            "timestamp": datetime.now(UTC),
            "profile": {"name": "Hu"},
        }
    )


def test_the_readiness_of_a_reply_that_came_too_late_is_dropped_with_it(runtime, db):
    """An agent answers h1, ready to end; someone answers h1 first, so its reply is dropped.
    Its readiness goes with it: it was decided on a conversation that has moved on, and h2
    gives the agent a turn of its own. (Applied, it made an agent whose answer to a new
    thread's announcement lost to the mediator's leave the last thread without a word, and
    test_threads_advance_only_when_everyone_is_ready fail.)"""
    e = chat_experiment(db, mediator=False)
    config = persona_prompt(db, e, max_responses=5, structured=True)
    chats = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/chats"
    with runtime.delivery_policy(Losing(lambda d: True)):  # the agent itself stays still
        a = agent(db, e, "chat", agentConfig=config)
        _human_message(db, chats, "h1", "Which project first?")
        runtime.wait_until_idle(timeout=60)
        room = Room(e, "cohort-a", "chat")
        with providers.wrapped(lambda client: _AnsweredMeanwhile(db, e)):
            result = turn.run(AgentTurn.in_room(room, "participant", a, trigger_chat_id="h1"))
        runtime.wait_until_idle(timeout=60)
    assert (result.outcome, result.readiness) == (turn.TurnOutcome.MOVED_ON_AFTER_DELAY, None)
    assert participant(db, e, a).current_stage_id == "chat"  # still there to answer h2
    assert not [m for m in chat_messages(db, e) if m.get("leftChatBy")]


def test_twenty_agents_racing_one_reply_per_message(runtime, db):
    e = chat_experiment(db)
    config = persona_prompt(db, e, max_responses=2)
    ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(20)]
    settle(runtime, all_done(db, e, ids), timeout=240)
    messages = check_single_responders(db, e)
    replies = Counter(
        log["agentType"]
        for log_id, log in trigger_logs(db, e).items()
        if not log_id.startswith(NOT_ELECTIONS)
    )
    assert replies["participant"] >= 3  # a real race happened
    per_sender = Counter(m["senderId"] for m in messages if m["type"] == "participant")
    assert max(per_sender.values()) <= 2  # maxResponses, the opening included


def _human_asks(db, e: str) -> None:
    """A human's message ``h1`` in the group chat."""
    chats = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/chats"
    db.document(f"{chats}/h1").set(
        {
            "id": "h1",
            "type": "participant",
            "message": "Which project first?",
            "senderId": "human-1",
            "timestamp": datetime.now(UTC),
            "profile": {"name": "Hu"},
        }
    )


def test_claim_passes_a_message_on_when_the_first_in_order_has_left(runtime, db):
    """The claim order is fixed at fan-out; an agent gone by its turn passes the message on."""
    e = chat_experiment(db, mediator=False, electionPolicy="claim")
    config = persona_prompt(db, e, max_responses=5)
    db.document(f"experiments/{e}/agentParticipants/talker/prompts/chat").update(
        {"structuredOutputConfig": ALWAYS_SPEAKS}
    )
    gone = agent(db, e, "end", number=0, agentConfig=config, currentStatus="SUCCESS")
    _human_asks(db, e)
    runtime.wait_until_idle(timeout=60)  # nobody was there to answer
    here = agent(db, e, "chat", number=1, agentConfig=config)
    runtime.wait_until_idle(timeout=60)
    assert "h1-participant" not in trigger_logs(db, e)
    room = Room(e, "cohort-a", "chat")
    request = AgentTurn.in_room(room, "participant", gone, trigger_chat_id="h1", order=(gone, here))
    outcome = turn.run(request)
    runtime.wait_until_idle(timeout=60)
    assert outcome.outcome == "not-at-stage"
    assert trigger_logs(db, e)["h1-participant"]["privateId"] == here
    assert any(m["senderId"] == "agent-1" for m in chat_messages(db, e))


def test_a_claim_turn_whose_claim_another_delivery_holds_stops_before_its_model(runtime, db):
    """A claim turn takes the message's claim beside its first reads: a delivery that finds
    another holding it stops there (no model call, no message); once the holder let it go
    without answering, the next delivery takes it and answers."""
    e = chat_experiment(db, mediator=False, electionPolicy="claim")
    config = persona_prompt(db, e, max_responses=5)
    db.document(f"experiments/{e}/agentParticipants/talker/prompts/chat").update(
        {"structuredOutputConfig": ALWAYS_SPEAKS}
    )
    with runtime.delivery_policy(Losing(lambda d: d.function == "onAgentTurn")):
        here = agent(db, e, "chat", number=1, agentConfig=config)
        _human_asks(db, e)
        runtime.wait_until_idle(timeout=60)
    room = Room(e, "cohort-a", "chat")
    other = {"agentType": "participant", "privateId": here}
    assert messages.take_lock(room, "h1-participant", other) is not None  # another delivery
    request = AgentTurn.in_room(room, "participant", here, trigger_chat_id="h1", order=(here,))
    assert turn.run(request).outcome == "already-claimed"
    assert not [log for log in model_logs(db, e) if "reply to h1" in log.description]
    messages.release_lock(room, "h1-participant")  # the holder did not answer
    assert turn.run(request).outcome == "spoke"
    assert trigger_logs(db, e)["h1-participant"]["privateId"] == here
    assert [m["senderId"] for m in chat_messages(db, e) if m["type"] == "participant"] == [
        "human-1",
        "agent-1",
    ]


def test_claim_policy_costs_about_one_call_per_message(runtime, db):
    e = chat_experiment(db, mediator=False, electionPolicy="claim")
    config = persona_prompt(db, e, max_responses=3)
    ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(10)]
    settle(runtime, all_done(db, e, ids), timeout=240)
    messages = check_single_responders(db, e)
    replies = [m for m in messages if m["type"] == "participant"]
    reply_calls = [
        log
        for log in model_logs(db, e)
        if log.description.startswith("chat reply") and log.response.status == "OK"
    ]
    delivered = sum(1 for m in messages if m["type"] != "participant" or m["id"])  # every message
    assert replies and delivered
    assert len(reply_calls) / delivered <= 1.5, (len(reply_calls), delivered)


def test_time_limit_ends_the_chat_and_moves_agents_on(runtime, db, monkeypatch):
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "3600")  # only the timer may end this chat
    e = chat_experiment(db, mediator=False, timeLimitInMinutes=1)
    config = persona_prompt(db, e, max_responses=100, ready_field=False, min_messages=10**6)
    ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(2)]
    runtime.wait_until_idle(timeout=120)
    public = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat"
    # an hour passes
    db.document(public).update({"discussionStartTimestamp": datetime.now(UTC) - timedelta(hours=1)})
    settle(runtime, all_done(db, e, ids))
    assert doc(db, public)["discussionEndTimestamp"] is not None
    messages = chat_messages(db, e)
    ended = [i for i, m in enumerate(messages) if m.get("timerEnded")]
    assert len(ended) == 1
    assert not [m for m in messages[ended[0] + 1 :] if m["type"] == "participant"]


def test_every_event_delivered_twice_posts_nothing_twice(runtime, db):
    e = run_duplicated(runtime, db, 6, seed=7, discussions=THREADS)
    messages = check_no_message_twice(db, e)
    left = Counter(m["leftChatBy"] for m in messages if m.get("leftChatBy"))
    assert left == Counter({f"agent-{i}": 1 for i in range(6)})  # each agent left once
    switches = [m for m in messages if m["type"] == "system" and "moved on" in m["message"]]
    assert len(switches) == 1
    duplicated = Counter(d.event_id for d in runtime.deliveries if d.function == "onAgentTurn")
    assert max(duplicated.values()) >= 2  # the duplicates really were delivered


def _keen_after_spent(runtime, db, e):
    """Agents a (5 responses) and b (1), each of whom posted once, b first, their turns lost:
    the chat's last message is a's, and only a has responses left. Returns a, b and a's
    persona config."""
    keen = persona_prompt(db, e, max_responses=5, persona="keen", ready_field=False)
    spent = persona_prompt(db, e, max_responses=1, persona="spent", ready_field=False)
    with runtime.delivery_policy(Losing(lambda d: d.function == "onAgentTurn")):
        a = agent(db, e, "intro", number=0, agentConfig=keen)
        b = agent(db, e, "intro", number=1, agentConfig=spent)
        runtime.wait_until_idle(timeout=60)
        chats = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/chats"
        for mid, sender in (("b1", "agent-1"), ("a1", "agent-0")):
            db.document(f"{chats}/{mid}").set(
                {
                    "id": mid,
                    "type": "participant",
                    "message": f"hello from {sender}",
                    "senderId": sender,
                    "timestamp": datetime.now(UTC),
                }
            )
            runtime.wait_until_idle(timeout=60)
    return a, b, keen


def test_under_claim_the_last_of_the_order_that_may_not_answer_asks_everyone(runtime, db):
    """Claim: the message goes down its order; when the last agent may not answer it either
    and none could, everyone present is asked at once whether they are ready (before, the
    chat was silent until the idle watchdog). An order ending in an agent that merely declined
    asks nothing: it may still speak."""
    e = chat_experiment(db, mediator=False, electionPolicy="claim")
    a, b, keen = _keen_after_spent(runtime, db, e)
    room = Room(e, "cohort-a", "chat")
    order = (a, b)
    with runtime.delivery_policy(Losing(lambda d: d.function == "onAgentTurn")):
        first = turn.run(
            AgentTurn.in_room(room, "participant", a, trigger_chat_id="a1", order=order)
        )
        runtime.wait_until_idle(timeout=60)  # b's turn, handed on: lost, b's is run below
    assert (first.outcome, first.readiness) == ("own-message", None)  # b comes next
    last = AgentTurn.in_room(room, "participant", b, trigger_chat_id="a1", order=order)
    assert turn.run(last).readiness == "asked-everyone"
    runtime.wait_until_idle(timeout=60)
    asked = {log for log in trigger_logs(db, e) if log.startswith("ready-")}
    assert f"ready-{a}-quiet-a1" in asked
    assert participant(db, e, b).current_stage_id == "end"  # nothing left to say: ready

    c = agent(db, e, "chat", number=2, agentConfig=keen)  # one who may still answer
    runtime.wait_until_idle(timeout=60)
    again = turn.run(AgentTurn.in_room(room, "participant", a, trigger_chat_id="a1", order=(c, a)))
    assert again.readiness is None


def test_readiness_query_option_asks_in_a_second_call(runtime, db):
    """readinessQuery: the reply's own readyToEndChat is not there (NEVER_READY has no such
    field); the agents still end the chat, through the separate query after their turns. The
    agents' ids are fixed: with drawn ids the scripted model sometimes had both decline the
    opening, and the chat then ended through the idle path, with no turn to query after."""
    e = chat_experiment(db, mediator=False, readinessQuery=True)
    config = persona_prompt(db, e, max_responses=4, ready_field=False)
    ids = [
        agent(db, e, "intro", number=i, private_id=f"agent-{i}-fixed", agentConfig=config)
        for i in range(2)
    ]
    settle(runtime, all_done(db, e, ids))
    queries = [log for log in model_logs(db, e) if "readiness query (after-" in log.description]
    assert queries and all(log.response.status == "OK" for log in queries)
    check_single_responders(db, e)


def test_a_message_nobody_may_answer_asks_everyone_present_at_once(runtime, db):
    """The only agent with responses left posted; nobody else may answer it and it may not
    follow itself. At once, the agents with nothing left to say count as ready and the others
    are asked (before, nobody was asked until the idle watchdog, two minutes later)."""
    e = chat_experiment(db, mediator=False)
    a, b, keen = _keen_after_spent(runtime, db, e)
    room = Room(e, "cohort-a", "chat")
    result = turn.run(AgentTurn.in_room(room, "participant", a, trigger_chat_id="a1"))
    assert (result.outcome, result.readiness) == ("own-message", "asked-everyone")
    runtime.wait_until_idle(timeout=60)
    asked = {log for log in trigger_logs(db, e) if log.startswith("ready-")}
    assert f"ready-{a}-quiet-a1" in asked
    assert f"ready-{b}-quiet-a1" not in asked  # b has nothing left to say: it counts as ready
    assert participant(db, e, b).current_stage_id == "end"

    c = agent(db, e, "chat", number=2, agentConfig=keen)  # one who may still answer
    runtime.wait_until_idle(timeout=60)
    again = turn.run(AgentTurn.in_room(room, "participant", a, trigger_chat_id="a1"))
    assert again.readiness is None, c


class _RepliedMeanwhile:
    """A model that answers while another agent's reply to the trigger is written, through
    ``messages.post`` as every agent reply is; or, with ``human``, while a person writes h2."""

    def __init__(self, db, room, human=False, trigger="h1"):
        self.db, self.room, self.human, self.trigger = db, room, human, trigger

    def generate(self, request):
        if self.human:
            _human_message(self.db, rooms_chats(self.room), "h2", "Or the park?")
        else:
            other = messages.system_message("The library.", None).model_copy(
                update={"type": "mediator", "sender_id": "med-x"}
            )
            responder = {"agentType": "mediator", "privateId": "med-x", "publicId": "med-x"}
            posted = messages.post(
                self.room, other, responder, election=None, slot=1, answers=self.trigger
            )
            assert posted == messages.Posted.POSTED
        reply = {"explanation": "", "response": "The park.", "readyToEndChat": False}
        return ModelReply(text=json.dumps(reply), usage=Usage(1, 1))


def rooms_chats(room):
    return f"experiments/{room.experiment_id}/cohorts/{room.cohort_id}/publicStageData/chat/chats"


@pytest.mark.parametrize("case", ["agents", "person-here", "person-before", "system-trigger"])
def test_a_claim_turn_among_agents_posts_on_its_first_read(runtime, db, case):
    """In a cohort of agents only, a claim turn on a reply does not read the chat again after
    its model: what can come after the message is an agent's reply, whose ``answered-`` record
    refuses this one's write (not elected). With a person in the cohort (at the stage, or at an
    earlier one and so free to come) it reads the chat again, and a person's message written
    meanwhile stops it there (moved on); so does a system message it answers."""
    e = chat_experiment(db, mediator=False, electionPolicy="claim")
    config = persona_prompt(db, e, max_responses=5)
    db.document(f"experiments/{e}/agentParticipants/talker/prompts/chat").update(
        {"structuredOutputConfig": ALWAYS_SPEAKS}
    )
    person = case.startswith("person")
    trigger = "s1" if case == "system-trigger" else "h1"
    with runtime.delivery_policy(Losing(lambda d: True)):  # nothing else runs
        a = agent(db, e, "chat", number=1, agentConfig=config)
        if person:
            human(db, e, "chat" if case == "person-here" else "intro")
        _human_asks(db, e)
        if trigger == "s1":
            system = messages.system_message("Time to decide.", None)
            messages.write(Room(e, "cohort-a", "chat"), system.model_copy(update={"id": "s1"}))
        runtime.wait_until_idle(timeout=60)
        room = Room(e, "cohort-a", "chat")
        request = AgentTurn.in_room(room, "participant", a, trigger_chat_id=trigger, order=(a,))
        model = lambda client: _RepliedMeanwhile(db, room, person, trigger)  # noqa: E731
        with providers.wrapped(model):
            result = turn.run(request)
        runtime.wait_until_idle(timeout=60)
    said = [m["senderId"] for m in chat_messages(db, e) if m["type"] != "system"]
    if case == "agents":
        assert result.outcome == turn.TurnOutcome.NOT_ELECTED
        assert said == ["human-1", "med-x"]
        assert trigger_logs(db, e)["answered-h1"]["replyId"] != ""
    else:
        assert result.outcome == turn.TurnOutcome.MOVED_ON_AFTER_DELAY
        assert said == ["human-1", "human-1" if person else "med-x"]
    assert f"{trigger}-participant" not in trigger_logs(db, e)  # let go: it did not answer


@pytest.mark.parametrize("finished", [False, True])
def test_a_reply_refused_by_a_dead_leave_hands_the_message_on(runtime, db, monkeypatch, finished):
    """A claim turn whose write is refused by its author's leaving lock, left by a leave that
    died: the lock is released (it expired) and the message handed to the next in the order, so
    neither the agent's replies nor the message stay blocked. A finished leave's lock (marked
    done) stays, however old: the agent has left."""
    e = chat_experiment(db, mediator=False, electionPolicy="claim")
    config = persona_prompt(db, e, max_responses=5)
    db.document(f"experiments/{e}/agentParticipants/talker/prompts/chat").update(
        {"structuredOutputConfig": ALWAYS_SPEAKS}
    )
    published: list[AgentTurn] = []
    monkeypatch.setattr(election, "publish_turns", lambda *turns: published.extend(turns))
    with runtime.delivery_policy(Losing(lambda d: True)):  # nothing else runs
        a = agent(db, e, "chat", number=1, agentConfig=config)
        b = agent(db, e, "chat", number=2, agentConfig=config)
        _human_asks(db, e)
        runtime.wait_until_idle(timeout=60)
        room = Room(e, "cohort-a", "chat")
        dead = datetime.now(UTC) - timedelta(minutes=5)
        db.document(room.log_path(messages.left_lock_id(a))).set(
            {"privateId": a}
            | messages.LockDoc(timestamp=dead, expires_at=dead, done=finished).to_firestore()
        )
        request = AgentTurn.in_room(room, "participant", a, trigger_chat_id="h1", order=(a, b))
        result = turn.run(request)
        runtime.wait_until_idle(timeout=60)
    assert result.outcome == turn.TurnOutcome.WRITE_REFUSED
    assert (messages.left_lock_id(a) in trigger_logs(db, e)) == finished  # a dead one released
    assert [(t.agent_id, t.trigger_chat_id) for t in published] == [(b, "h1")]
    assert [m["senderId"] for m in chat_messages(db, e)] == ["human-1"]


def test_a_reply_is_refused_in_its_own_write_once_its_author_left(runtime, db):
    """A participant's reply is written only while its ``left-`` lock is absent, so a claim
    turn posting on its first read never speaks after its author's "has left"."""
    e = chat_experiment(db, mediator=False)
    room = Room(e, "cohort-a", "chat")
    _human_asks(db, e)
    owner = {"agentType": "participant", "privateId": "agent-x", "publicId": "agent-x"}
    message = messages.system_message("Late.", None).model_copy(
        update={"type": "participant", "sender_id": "agent-x"}
    )
    assert messages.take_lock(room, messages.left_lock_id("agent-x"), owner) is not None
    posted = messages.post(room, message, owner, election=None, slot=1, answers="h1")
    assert posted == messages.Posted.ANSWERED
    assert [m["id"] for m in chat_messages(db, e)] == ["h1"]
    assert "answered-h1" not in trigger_logs(db, e)  # nothing of the write was applied
    messages.release_lock(room, messages.left_lock_id("agent-x"))
    posted = messages.post(room, message, owner, election=None, slot=1, answers="h1")
    assert posted == messages.Posted.POSTED


def test_a_claim_order_that_runs_out_asks_who_came_since(runtime, db, monkeypatch):
    """The claim order is drawn at the fan-out (or from an instance's memory of the chat): when
    it runs out, whoever of the type came to the chat since is asked, once, so an agent who
    may answer is never left out; with nobody new, nobody is asked."""
    e = chat_experiment(db, mediator=False, electionPolicy="claim")
    published: list[AgentTurn] = []
    monkeypatch.setattr(election, "publish_turns", lambda *turns: published.extend(turns))
    with runtime.delivery_policy(Losing(lambda d: True)):  # nothing else runs
        a = agent(db, e, "chat", number=1)
        runtime.wait_until_idle(timeout=60)
        room = Room(e, "cohort-a", "chat")
        policy = election.policy_for(store.read_stage(e, "chat"))
        last = AgentTurn.in_room(room, "participant", a, trigger_chat_id="h1", order=(a,))
        policy.hand_on(last)
        assert published == []  # nobody new
        b = agent(db, e, "chat", number=2)
        runtime.wait_until_idle(timeout=60)
        policy.hand_on(last)
        runtime.wait_until_idle(timeout=60)
    assert [(t.agent_id, t.order) for t in published] == [(b, (a, b))]
    published.clear()
    policy.hand_on(last.model_copy(update={"agent_id": b, "order": (a, b)}))
    assert published == []  # b was the last of the order, and nobody came since
