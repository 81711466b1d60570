"""Pure parts of the chat turn, the fan-out and a participant's move: the wire message, gates,
who gets a turn, the steps' typed outcomes, and the move primitives."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import pytest

from functions._events import PubSubEvent
from functions.agents import moves
from functions.agents.progression import _resolve_attention_check
from functions.chat import election, gates, turn
from functions.chat.agents import ChatAgent
from functions.chat.readiness import Readiness
from functions.chat.turn import Scene, TurnOutcome, TurnResult, typing_delay_s
from functions.rooms import Room
from functions.wire import AgentTurn, AgentWake
from shared.models import (
    AgentChatSettings,
    ChatMessage,
    ChatStage,
    DocumentError,
    Experiment,
    ParticipantProfile,
    ParticipantStatus,
    PrivateChatStage,
    PromptConfig,
    UserType,
)

ROOM = Room("e1", "c1", "chat")


def _event(payload: object) -> PubSubEvent:
    return PubSubEvent("m1", "agent-turn", json.dumps(payload).encode(), {})


def test_the_turn_message_round_trips_in_camel_case() -> None:
    turn = AgentTurn.in_room(ROOM, "participant", "p1", trigger_chat_id="m9", order=("p1", "p2"))
    wire = turn.to_json()
    assert wire["triggerChatId"] == "m9" and wire["order"] == ["p1", "p2"]
    assert _event(wire).message(AgentTurn) == turn


def test_a_turn_message_without_a_field_names_it() -> None:
    wire = AgentTurn.in_room(ROOM, "participant", "p1").to_json()
    del wire["agentId"]
    with pytest.raises(DocumentError) as raised:
        _event(wire).message(AgentTurn)
    assert raised.value.field == "agentId" and raised.value.document == "pubsub/agent-turn/m1"


@pytest.mark.parametrize("payload", [["not", "an", "object"], "text"])
def test_a_message_that_is_not_a_json_object_is_a_document_error(payload: object) -> None:
    with pytest.raises(DocumentError, match="not a JSON object"):
        _event(payload).message(AgentWake)


def test_garbage_bytes_are_a_document_error() -> None:
    event = PubSubEvent("m1", "agent-wake", b"\xff{", {})
    with pytest.raises(DocumentError, match="not JSON"):
        event.message(AgentWake)


def test_claim_passes_the_message_down_the_order_and_stops_at_its_end() -> None:
    turn = AgentTurn.in_room(ROOM, "participant", "a", trigger_chat_id="m", order=("a", "b"))
    following = turn.next_in_order()
    assert following is not None and following.agent_id == "b"
    assert following.next_in_order() is None
    assert AgentTurn.in_room(ROOM, "participant", "a").next_in_order() is None  # opening


def test_log_ids_elect_one_responder_per_type_and_message() -> None:
    reply = AgentTurn.in_room(ROOM, "mediator", "m1", trigger_chat_id="x")
    assert reply.log_id == "x-mediator"
    assert AgentTurn.in_room(ROOM, "mediator", "m1").log_id == "initial-mediator-m1"


def _message(mid: str, sender: str, kind: UserType = UserType.PARTICIPANT) -> ChatMessage:
    return ChatMessage(id=mid, sender_id=sender, type=kind, timestamp=datetime.now(UTC))


def _agent(public_id: str = "me", **settings: object) -> ChatAgent:
    profile = ParticipantProfile(
        private_id=f"priv-{public_id}", public_id=public_id, agent_config={"agentId": "x"}
    )
    config = PromptConfig(id="chat", type="chat", chat_settings=AgentChatSettings(**settings))
    return ChatAgent("participant", profile, config, None)


def test_a_reply_to_a_message_someone_already_answered_is_stale() -> None:
    history = [_message("m1", "other"), _message("m2", "third")]
    assert gates.refusal_to_answer(_agent(), history, "m1") == gates.Refusal.MOVED_ON
    assert gates.refusal_to_answer(_agent(), history, "m2") is None
    assert gates.refusal_to_answer(_agent(), history, "") is None  # openings are never stale


def test_a_system_message_after_the_trigger_does_not_make_it_stale() -> None:
    history = [_message("m1", "other"), _message("s", "", UserType.SYSTEM)]
    assert gates.refusal_to_answer(_agent(), history, "m1") is None


def test_an_agent_follows_its_own_message_only_when_nudged() -> None:
    history = [_message("m1", "me")]
    assert gates.refusal_to_answer(_agent(), history, "m1") == gates.Refusal.OWN_MESSAGE
    assert gates.refusal_to_answer(_agent(), history, "m1", nudge=True) is None


def test_used_up_responses_come_before_every_other_gate() -> None:
    history = [_message("m1", "me"), _message("m2", "other")]
    agent = _agent(max_responses=1)
    assert gates.refusal_to_answer(agent, history, "m1") == gates.Refusal.MAX_RESPONSES


def _chat(**fields: object) -> ChatStage:
    return ChatStage(id="chat", name="Chat", **fields)


def test_race_gives_every_agent_a_turn() -> None:
    message = _message("msg-7", "human")
    race = election.Race(_chat())._turns_for(ROOM, message, "participant", ["a", "b", "c"])
    assert [t.agent_id for t in race] == ["a", "b", "c"] and all(not t.order for t in race)
    # asked already from the instance's memory: race asks only the others
    again = election.Race(_chat())._turns_for(ROOM, message, "participant", ["a", "b"], ["a"])
    assert [t.agent_id for t in again] == ["b"]


def test_claim_asks_one_agent_with_the_order_mediators_first(monkeypatch) -> None:
    published: list[AgentTurn] = []
    monkeypatch.setattr(election, "publish_turns", lambda *turns: published.extend(turns))
    claim = election.Claim(_chat(election_policy="claim"))
    message = _message("msg-7", "human")
    groups = {"participant": ["a", "b", "c"], "mediator": ["m2", "m1"]}
    assert claim.fan_out(ROOM, message, lambda: groups) == 1
    mediators = election.seeded_order("msg-7", ["m2", "m1"])
    participants = election.seeded_order("msg-7", ["a", "b", "c"])
    chain = [published[0]]
    while (following := chain[-1].next_in_order()) is not None:
        chain.append(following)
    assert [(t.agent_type, t.agent_id) for t in chain] == [
        *(("mediator", m) for m in mediators),
        *(("participant", p) for p in participants),
    ]
    assert chain[-1].order == tuple(participants)
    # asked already from the instance's memory, or a notice: nobody more
    assert claim.fan_out(ROOM, message, lambda: groups, {"participant": ["a"]}) == 0
    left = message.model_copy(update={"type": UserType.SYSTEM})
    left = ChatMessage.model_validate({**left.to_firestore(), "leftChatBy": "a"})
    assert claim.fan_out(ROOM, left, lambda: groups) == 0
    assert len(published) == 1
    # who of two comes first does not depend on who else is listed (an agent that left)
    assert [i for i in participants if i != "b"] == election.seeded_order("msg-7", ["a", "c"])


def test_a_stage_s_settings_choose_its_policy_once() -> None:
    assert isinstance(election.policy_for(_chat()), election.Race)
    assert isinstance(election.policy_for(_chat(election_policy="claim")), election.Claim)
    assert isinstance(election.policy_for(_chat(election_policy="conductor")), election.Conductor)
    turn_based = _chat(is_turn_based=True, election_policy="claim")
    assert isinstance(election.policy_for(turn_based), election.TurnBased)
    private = PrivateChatStage(id="p", name="Private")
    assert type(election.policy_for(private)) is election.Race


def test_a_turn_result_reads_as_its_steps() -> None:
    assert str(TurnResult(TurnOutcome.SPOKE)) == "spoke"
    assert str(TurnResult(gates.Refusal.MAX_RESPONSES, Readiness.LEFT)) == "max-responses+left"


def test_claims_are_taken_for_openings_turn_based_chats_and_the_claim_policy() -> None:
    agent = _agent()
    reply = AgentTurn.in_room(ROOM, "participant", "priv-me", trigger_chat_id="m")
    opening = AgentTurn.in_room(ROOM, "participant", "priv-me")
    assert not Scene(reply, _chat(), agent).claims  # race: the election is at posting
    assert Scene(reply, _chat(election_policy="claim"), agent).claims
    assert Scene(reply, _chat(is_turn_based=True), agent).claims
    assert Scene(opening, _chat(), agent).claims


def test_a_reply_beaten_by_another_answer_takes_its_readiness_with_it() -> None:
    """Moved on after the model call, or another participant elected: the readiness decided
    with the dropped reply is not applied (the message that beat it brings a new turn); a
    turn-based chat's holder is left as it was."""
    reply = AgentTurn.in_room(ROOM, "participant", "p1", trigger_chat_id="m")
    race, turn_based = (
        Scene(reply, _chat(), _agent()),
        Scene(reply, _chat(is_turn_based=True), _agent()),
    )
    assert turn._beaten(race, TurnOutcome.MOVED_ON_AFTER_DELAY)
    assert turn._beaten(race, TurnOutcome.NOT_ELECTED)
    assert not turn._beaten(race, TurnOutcome.SPOKE)
    assert not turn._beaten(race, TurnOutcome.DECLINED)
    assert not turn._beaten(turn_based, TurnOutcome.MOVED_ON_AFTER_DELAY)
    assert not turn._beaten(turn_based, TurnOutcome.NOT_ELECTED)


def test_a_participant_owing_private_turns_must_respond() -> None:
    private = Room("e1", "c1", "pc", "priv-me")
    turn = AgentTurn.in_room(private, "participant", "priv-me", trigger_chat_id="m")
    stage = PrivateChatStage(id="pc", name="Private", min_number_of_turns=2)
    scene = Scene(turn, stage, _agent())
    assert scene.must_respond([_message("m0", "me")])
    assert not scene.must_respond([_message("m0", "me"), _message("m1", "me")])
    assert Scene(turn, _chat(is_turn_based=True), _agent()).must_respond([])


def test_the_typing_delay_is_capped_and_off_without_a_speed() -> None:
    rng = random.Random(1)
    assert typing_delay_s("a b c", None, rng) == 0.0
    assert typing_delay_s("word " * 500, 60, rng) == 10.0
    assert 0.75 <= typing_delay_s("one", 60, rng) <= 1.25


def _participant(**fields: object) -> ParticipantProfile:
    return ParticipantProfile(
        private_id="p", public_id="pub", current_stage_id="s1", current_cohort_id="c", **fields
    )


def test_completing_a_stage_moves_to_the_next_and_the_last_one_finishes() -> None:
    experiment = Experiment(id="e", stage_ids=["s1", "s2"])
    p = _participant()
    moves.completion(experiment, p.model_copy(deep=True), None)(p, None)
    assert p.current_stage_id == "s2" and "s1" in p.timestamps.completed_stages
    assert "s2" in p.timestamps.ready_stages and p.timestamps.start_experiment is not None
    moves.complete_stage(p, experiment)
    assert p.current_status == ParticipantStatus.SUCCESS and p.timestamps.end_experiment


def test_a_completion_decided_on_an_old_snapshot_does_not_apply() -> None:
    experiment = Experiment(id="e", stage_ids=["s1", "s2"])
    decided = _participant()
    moved_on = _participant()
    moves.complete_stage(moved_on, experiment)
    with pytest.raises(moves.Stale):
        moves.completion(experiment, decided, None)(moved_on, None)


def test_an_attention_check_goes_back_to_where_the_agent_was() -> None:
    finished = _participant(current_status="ATTENTION_CHECK", timestamps={"endExperiment": 1})
    _resolve_attention_check(finished, None)
    assert finished.current_status == ParticipantStatus.SUCCESS
    transferring = _participant(current_status="ATTENTION_CHECK", transfer_cohort_id="c2")
    _resolve_attention_check(transferring, None)
    assert transferring.current_status == ParticipantStatus.TRANSFER_PENDING
    with pytest.raises(moves.Stale):
        _resolve_attention_check(_participant(), None)


def test_a_reply_into_a_thread_that_has_moved_on_is_stale() -> None:
    old = _message("m1", "other").model_copy(update={"discussion_id": "t1"})
    switch = _message("s", "", UserType.SYSTEM).model_copy(update={"discussion_id": "t2"})
    history = [old, switch]
    assert gates.stale(_agent(), history, "m1", "t2") == gates.Refusal.THREAD_CHANGED
    assert gates.stale(_agent(), history, "s", "t2") is None  # the announcement is answered
    assert gates.stale(_agent(), history, "m1", "t1") is None


def test_a_late_reply_in_the_old_thread_does_not_answer_the_switch() -> None:
    """The switch is announced; a reply to thread 1, already on its way, lands after it. The
    announcement is still unanswered in thread 2 (else nobody restarts the conversation)."""
    switch = _message("s", "", UserType.SYSTEM).model_copy(update={"discussion_id": "t2"})
    late = _message("late", "other").model_copy(update={"discussion_id": "t1"})
    answer = _message("a", "other").model_copy(update={"discussion_id": "t2"})
    assert gates.stale(_agent(), [switch, late], "s", "t2") is None
    assert gates.stale(_agent(), [switch, late, answer], "s", "t2") == gates.Refusal.MOVED_ON


def test_nothing_is_said_after_the_authors_own_departure() -> None:
    left = _message("l", "me", UserType.SYSTEM).model_copy(update={"leftChatBy": "me"})
    history = [_message("m1", "other"), left]
    assert gates.stale(_agent(), history, "m1", None) == gates.Refusal.LEFT
    assert gates.stale(_agent(), history, "", None) == gates.Refusal.LEFT
    assert gates.stale(_agent("you"), history, "m1", None) is None
