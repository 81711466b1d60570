"""A message nobody may answer: no human is present, every other agent has used up its
responses (or waits for more messages), and its author may not follow itself. Nobody would be
asked again until the idle watchdog (two minutes), so the agents present are asked at once
whether they are ready to end, and the thread advances (or they leave) when their answers allow.

Checked in a group chat in the one turn of the message its election policy names
(``election``). It stops at the first agent that may answer, so a lively chat pays a read or
two.
"""

from __future__ import annotations

from collections.abc import Sequence

from functions.chat import agents, gates, readiness
from functions.chat.gates import Refusal
from functions.rooms import Room
from functions.wire import AgentTurn, publish_turns
from shared.models import (
    ChatMessage,
    ChatPublicData,
    ConversationStage,
    ParticipantProfile,
)

QUIET = "quiet-"
"""Prefix of the readiness occasion: one round of questions per unanswerable message."""


def nobody_may_answer(
    room: Room, stage: ConversationStage, history: list[ChatMessage], turn: AgentTurn
) -> list[str] | None:
    """The agent participants present (private ids) if no agent may answer the turn's
    message, for ``ask_who_is_ready`` to ask without reading them again; None if one may. The
    turn's own agent may not (its caller knows why), and which turn of a message checks is the
    election policy's to say (``ElectionPolicy.asks_who_is_ready``)."""
    present = agents.present_at(room.experiment_id, room.cohort_id, stage.id)
    if present.humans:
        return None  # a human may always answer
    others = [("participant", p) for p in present.agents] + [
        ("mediator", m) for m in agents.mediators_of(room.experiment_id, room.cohort_id, stage)
    ]
    for kind, private_id in others:
        if (kind, private_id) == (turn.agent_type, turn.agent_id):
            continue  # may not answer
        agent = agents.load(room.experiment_id, kind, private_id, stage)
        if agent is not None and gates.refusal(agent, history) is None:
            return None
    return present.agents


def ask_who_is_ready(
    room: Room,
    stage: ConversationStage,
    public: ChatPublicData,
    history: list[ChatMessage],
    message_id: str,
    present: Sequence[str] | None = None,
) -> int:
    """Each agent participant present that has not yet said it is ready for the current thread:
    one that has used up its responses can add nothing more here and counts as ready (no model
    call: asking it again could only stall the chat); any other gets a readiness-only turn,
    once per message (the occasion is the message). ``present``: the agent participants at the
    stage, when the caller has just read them. Returns how many were asked."""
    ready = set(public.discussion_timestamp_map.get(public.current_discussion_id or "", {}))
    turns = []
    if present is None:
        present = agents.participants_at(room.experiment_id, room.cohort_id, stage.id)
    for private_id in present:
        agent = agents.participant_agent(room.experiment_id, private_id, stage)
        if agent is None or agent.public_id in ready:
            continue
        spent = gates.refusal(agent, history) == Refusal.MAX_RESPONSES
        if spent and isinstance(agent.profile, ParticipantProfile):
            readiness.participant_ready(
                room, stage, agent.profile, decided_in=public.current_discussion_id
            )
            continue
        turns.append(
            AgentTurn.in_room(
                room,
                "participant",
                private_id,
                trigger_chat_id=message_id,
                readiness_only=True,
                nonce=QUIET + message_id,
            )
        )
    publish_turns(*turns)
    return len(turns)
