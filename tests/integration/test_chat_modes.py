"""Private chats and turn-based group chats, on the real emulators and functions."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from chat_docs import (
    add_mediator,
    all_done,
    chat_experiment,
    chat_messages,
    check_single_responders,
    persona_prompt,
    run_duplicated,
    trigger_logs,
)
from experiment_state import errors, model_logs, participant, settle
from raw_docs import agent, human, stage, write_experiment

from functions import store
from functions.chat import turn_order
from functions.chat.turn import DECLINED
from functions.chat.turn import run as run_turn
from functions.rooms import Room
from functions.wire import AgentTurn
from shared.models import ChatMessage, ParticipantStatus, UserType
from shared.prompts.shuffle import shuffle_with_seed
from tests.fakes import Recorded, Step
from tests.fakes import fake_openai as openai

MEDIATOR_MARK = "You facilitate the discussion."  # chat_docs' mediator prompt
DECLINE_MARK = DECLINED.format(name="Host")


@pytest.fixture(autouse=True)
def _idle_now(monkeypatch):
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")


def private_experiment(db, mediator=True, **stage_fields):
    e = write_experiment(
        db,
        [
            stage("intro", "info"),
            stage("pchat", "privateChat", **stage_fields),
            stage("end", "info"),
        ],
    )
    if mediator:
        add_mediator(db, e, "pchat", "privateChat")
    return e


def test_private_chats_with_a_mediator_run_to_the_end(runtime, db):
    e = private_experiment(db, minNumberOfTurns=2)
    ids = [agent(db, e, "intro", number=i) for i in range(3)]
    settle(runtime, all_done(db, e, ids))
    for pid in ids:
        messages = check_single_responders(db, e, private_of=pid, stage_id="pchat")
        kinds = Counter(m["type"] for m in messages)
        assert kinds["mediator"] >= 1 and kinds["participant"] >= 2, kinds  # minNumberOfTurns
        public = participant(db, e, pid).public_id
        senders = {m["senderId"] for m in messages if m["type"] != "system"}
        assert senders <= {public, "med-1"}  # nobody else's conversation leaks in
        print(pid, [(m["type"], m["message"][:40]) for m in messages])
    assert chat_messages(db, e, stage_id="pchat") == []
    assert errors(db, e) == []


def _declining_mediator(request: Recorded) -> Step:
    """The mediator never answers; the agent participant asks, and says goodbye (ready to end)
    once it has seen the mediator decline."""
    prompt = json.dumps(request.body["messages"])
    if MEDIATOR_MARK in prompt:
        reply = {
            "explanation": "x",
            "shouldRespond": False,
            "response": "",
            "readyToEndChat": False,
        }
    else:
        seen = DECLINE_MARK in prompt
        text = "Thanks, goodbye." if seen else "Which option do you recommend?"
        reply = {
            "explanation": "x",
            "shouldRespond": True,
            "response": text,
            "readyToEndChat": seen,
        }
    return openai.text(json.dumps(reply))


@pytest.fixture
def fake_openai(db, monkeypatch):
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE")
    with openai.FakeOpenAI(api_key="sk-test") as fake:
        db.document("experimenterData/x@y.z").set(
            {"apiKeys": {"openAIApiKey": {"apiKey": "sk-test", "baseUrl": fake.base_url}}}
        )
        yield fake


def test_a_declining_mediator_writes_nothing_and_the_agent_does_not_hang(runtime, db, fake_openai):
    """DL #938 / #1011: shouldRespond false from a mediator in a private chat."""
    fake_openai.responder = _declining_mediator
    e = private_experiment(db, mediator=False)
    add_mediator(
        db,
        e,
        "pchat",
        "privateChat",
        api_type="OPENAI",
        structured=True,
        initialMessage="Hello! How can I help?",
    )
    config = persona_prompt(
        db, e, 100, stage_id="pchat", kind="privateChat", api_type="OPENAI", structured=True
    )
    pid = agent(db, e, "intro", agentConfig=config)
    runtime.wait_until_idle(timeout=60)  # no watchdog tick: nothing may depend on one
    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS
    messages = check_single_responders(db, e, private_of=pid, stage_id="pchat")
    said = [(m["type"], m["message"]) for m in messages]
    assert said[0] == ("mediator", "Hello! How can I help?")
    assert ("participant", "Which option do you recommend?") in said
    assert ("participant", "Thanks, goodbye.") in said
    assert [m for m in messages if m["type"] == "mediator"] == [messages[0]]  # only the opening
    notices = [m for m in messages if m.get("declinedBy")]
    assert notices and all(m["declinedBy"] == "med-1" for m in notices)
    answer = db.document(f"experiments/{e}/participants/{pid}/stageData/pchat").get().to_dict()
    assert answer["readyToEndChat"] is True
    assert errors(db, e) == []


def _mediator_garbled_once() -> Callable[[Recorded], Step]:
    """The mediator's first answer is well-formed JSON that is not a valid answer (no message
    although it says it responds); with numRetries 0 that one reply is a model failure."""
    mediator_calls = itertools.count()

    def respond(request: Recorded) -> Step:
        prompt = json.dumps(request.body["messages"])
        if MEDIATOR_MARK in prompt:
            first = next(mediator_calls) == 0
            text = "" if first else "Option A, because it is cheaper."
            reply = {"explanation": "x", "shouldRespond": True, "response": text}
            reply["readyToEndChat"] = False
        else:
            done = "Option A" in prompt
            text = "Thanks, goodbye." if done else "Which option do you recommend?"
            reply = {"explanation": "x", "shouldRespond": True, "response": text}
            reply["readyToEndChat"] = done
        return openai.text(json.dumps(reply))

    return respond


def test_a_garbled_mediator_reply_gives_the_participant_the_turn(runtime, db, fake_openai):
    """The mediator's "Error fetching response" neither counts as its reply nor ends the
    exchange: the agent participant gets the turn at once (no idle watchdog), asks again, and
    the chat runs to its end."""
    fake_openai.responder = _mediator_garbled_once()
    e = private_experiment(db, mediator=False)
    add_mediator(
        db, e, "pchat", "privateChat", api_type="OPENAI", structured=True, initialMessage="Hi!"
    )
    config = persona_prompt(
        db, e, 100, stage_id="pchat", kind="privateChat", api_type="OPENAI", structured=True
    )
    pid = agent(db, e, "intro", agentConfig=config)
    runtime.wait_until_idle(timeout=60)  # no watchdog tick: nothing may depend on one
    messages = chat_messages(db, e, private_of=pid, stage_id="pchat")
    failed = [i for i, m in enumerate(messages) if m.get("isError")]
    assert len(failed) == 1 and messages[failed[0]]["message"] == "Error fetching response"
    following = [m for m in messages[failed[0] + 1 :] if m["type"] != "system"]
    assert following and following[0]["type"] == "participant"
    assert ("mediator", "Option A, because it is cheaper.") in [
        (m["type"], m["message"]) for m in following
    ]
    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS


def test_a_human_in_a_private_chat_gets_the_mediator(runtime, db):
    e = private_experiment(db, mediator=False)
    add_mediator(db, e, "pchat", "privateChat", initialMessage="Hi, I am your guide.")
    pid = human(db, e, "pchat")
    runtime.wait_until_idle(timeout=60)
    (opening,) = chat_messages(db, e, private_of=pid, stage_id="pchat")
    assert opening["message"] == "Hi, I am your guide." and opening["senderId"] == "med-1"
    base = f"experiments/{e}/participants/{pid}/stageData/pchat"
    db.document(f"{base}/privateChats/h1").set(
        {
            "id": "h1",
            "type": "participant",
            "message": "What is this study about?",
            "senderId": pid,
            "timestamp": datetime.now(UTC),
            "profile": {"name": "Hu"},
        }
    )
    runtime.wait_until_idle(timeout=60)
    messages = check_single_responders(db, e, private_of=pid, stage_id="pchat")
    assert [m["type"] for m in messages] == ["mediator", "participant", "mediator"]
    assert "h1-mediator" in trigger_logs(db, e, private_of=pid, stage_id="pchat")
    # the human ends the chat the way DL's client does: readyToEndChat in its answer
    db.document(base).set({"id": "pchat", "kind": "privateChat", "readyToEndChat": True})
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, pid).current_stage_id == "end"


def _said(messages):
    return [m for m in messages if m["type"] != "system"]


def test_turn_based_chat_follows_the_seeded_order(runtime, db):
    e = chat_experiment(db, isTurnBased=True)
    config = persona_prompt(db, e, max_responses=3)
    ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(3)]
    settle(runtime, all_done(db, e, ids))
    messages = check_single_responders(db, e)
    said = _said(messages)
    publics = [participant(db, e, p).public_id for p in sorted(ids)]
    first_cycle = ["med-1", *shuffle_with_seed(publics, "cohort-a-chat-0")]
    assert [m["senderId"] for m in said[: len(first_cycle)]] == first_cycle
    # every cycle: the mediator first, then participants in that cycle's seeded order (those
    # who still speak)
    cycles: list[list[str]] = []
    for m in said:
        if m["senderId"] == "med-1":
            cycles.append([])
        else:
            cycles[-1].append(m["senderId"])
    for index, spoke in enumerate(cycles):
        expected = shuffle_with_seed(publics, f"cohort-a-chat-{index}")
        assert spoke == [p for p in expected if p in spoke], (index, spoke, expected)
    per_sender = Counter(m["senderId"] for m in said if m["type"] == "participant")
    assert max(per_sender.values()) <= 3
    assert errors(db, e) == []


def test_a_departure_in_a_turn_based_chat_costs_the_holder_no_second_call(runtime, db):
    """ "X has left the chat" does not re-trigger the agent holding the turn: every model call
    for a chat message ends in a message (before, each departure made the holder call its model
    twice, and the two posts collided)."""
    e = chat_experiment(db, isTurnBased=True)
    config = persona_prompt(db, e, max_responses=2)
    ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(4)]
    settle(runtime, all_done(db, e, ids))
    messages = chat_messages(db, e)
    assert sum(1 for m in messages if m.get("leftChatBy")) == 4
    calls = [
        log
        for log in model_logs(db, e)
        if log.description.startswith(("chat reply to", "chat opening"))
        and log.response.status == "OK"
    ]
    posted = _said(messages)
    assert len(calls) == len(posted), sorted(log.description for log in calls)


def test_an_out_of_turn_agent_reply_is_never_written(runtime, db):
    e = chat_experiment(db, isTurnBased=True, mediator=False)
    config = persona_prompt(db, e, max_responses=1, ready_field=False, min_messages=10**6)
    ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(2)]
    runtime.wait_until_idle(timeout=60)
    public = db.document(f"experiments/{e}/cohorts/cohort-a/publicStageData/chat").get().to_dict()
    holder = public["currentTurnParticipantId"]
    other = next(p for p in ids if participant(db, e, p).public_id != holder)
    stage = store.read_stage(e, "chat")
    room = Room(e, "cohort-a", "chat")
    message = ChatMessage(
        id="out-of-turn",
        type=UserType.PARTICIPANT,
        message="me first!",
        sender_id=participant(db, e, other).public_id,
        timestamp=datetime.now(UTC),
    )
    responder = {"agentType": "participant", "privateId": other, "publicId": message.sender_id}
    assert not turn_order.post_in_turn(room, stage, message, responder, "x-participant", 1, [])
    assert run_turn(AgentTurn.in_room(room, "participant", other)).outcome == "not-my-turn"
    assert "out-of-turn" not in {m["id"] for m in chat_messages(db, e)}


def _broken_agent(request: Recorded) -> Step:
    return openai.error(400, "This model is not supported", "invalid_request_error")


def test_an_agent_whose_turn_fails_is_skipped(runtime, db, fake_openai):
    fake_openai.responder = _broken_agent
    e = chat_experiment(db, isTurnBased=True)
    config = persona_prompt(db, e, max_responses=3)
    broken = persona_prompt(db, e, max_responses=3, persona="broken", api_type="OPENAI")
    good = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(2)]
    bad = agent(db, e, "intro", number=9, agentConfig=broken)
    settle(runtime, all_done(db, e, good))
    messages = chat_messages(db, e)
    skips = [i for i, m in enumerate(messages) if m.get("skippedTurnOf") == "agent-9"]
    assert skips and messages[skips[0]]["message"] == "agent-9 was skipped due to a model error."
    assert not [m for m in messages if m["senderId"] == "agent-9" and m["type"] != "system"]
    after = _said(messages[skips[0] + 1 :])
    assert after and after[0]["senderId"] != "agent-9"  # the next one took the turn
    assert len(skips) <= turn_order.MAX_SKIPS + 1  # then it is passed over
    assert any(r.document.endswith(bad) for r in errors(db, e))
    runtime.wait_until_idle(timeout=60)  # nothing keeps cycling through the broken agent


def test_turn_based_chat_with_every_event_delivered_twice(runtime, db):
    e = run_duplicated(runtime, db, 3, seed=11, isTurnBased=True)
    messages = check_single_responders(db, e)
    said = _said(messages)
    assert len({m["id"] for m in said}) == len(said)
    assert all(
        a["senderId"] != b["senderId"]
        for a, b in itertools.pairwise(said)
        if a["type"] == "participant"
    )
    left = Counter(m["leftChatBy"] for m in messages if m.get("leftChatBy"))
    assert left == Counter({f"agent-{i}": 1 for i in range(3)})
