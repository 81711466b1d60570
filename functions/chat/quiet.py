"""A message nobody may answer: no human is present, every other agent has used up its
responses (or waits for more messages), and its author may not follow itself. Nobody would be
asked again until the idle watchdog (two minutes), so the agents present are asked at once
whether they are ready to end, and the thread advances (or they leave) when their answers allow.

Checked in the author's own turn, which every agent message gets in a group chat under the race
policy; it stops at the first agent that may answer, so a lively chat pays a read or two.
"""

from __future__ import annotations

from functions import store
from functions.chat import agents, gates
from functions.rooms import Room
from functions.wire import AgentTurn, publish_turns
from shared.models import (
    ChatMessage,
    ChatPublicData,
    ChatStage,
    ConversationStage,
    ParticipantProfile,
)

QUIET = "quiet-"
"""Prefix of the readiness occasion: one round of questions per unanswerable message."""


def nobody_may_answer(
    room: Room, stage: ConversationStage, history: list[ChatMessage], turn: AgentTurn
) -> bool:
    """True if no agent but the author (``turn``'s) may answer its message. Only for a group
    chat under the race policy (claim hands the message down its order; turn-based chats pass
    the turn; a private chat has its own rules)."""
    if room.is_private or not isinstance(stage, ChatStage):
        return False
    if stage.is_turn_based or stage.election_policy != "race" or not turn.trigger_chat_id:
        return False
    if agents.participants_at(room.experiment_id, room.cohort_id, stage.id, humans=True):
        return False  # a human may always answer
    others = [
        ("participant", p)
        for p in agents.participants_at(room.experiment_id, room.cohort_id, stage.id)
    ] + [("mediator", m) for m in agents.mediators_of(room.experiment_id, room.cohort_id, stage)]
    for kind, private_id in others:
        if (kind, private_id) == (turn.agent_type, turn.agent_id):
            continue
        agent = agents.load(room.experiment_id, kind, private_id, stage)
        if agent is not None and gates.refusal(agent, history) is None:
            return False
    return True


def ask_who_is_ready(
    room: Room, stage: ConversationStage, public: ChatPublicData, message_id: str
) -> int:
    """A readiness-only turn for each agent participant present that has not yet said it is
    ready for the current thread (each asked once per message: the occasion is the message)."""
    present = agents.participants_at(room.experiment_id, room.cohort_id, stage.id)
    ready = set(public.discussion_timestamp_map.get(public.current_discussion_id or "", {}))
    if ready:
        present = [p for p in present if _public_id(room, p) not in ready]
    turns = [
        AgentTurn.in_room(
            room,
            "participant",
            private_id,
            trigger_chat_id=message_id,
            readiness_only=True,
            nonce=QUIET + message_id,
        )
        for private_id in present
    ]
    publish_turns(*turns)
    return len(turns)


def _public_id(room: Room, private_id: str) -> str:
    path = store.participant_path(room.experiment_id, private_id)
    return store.read(ParticipantProfile, path).public_id
