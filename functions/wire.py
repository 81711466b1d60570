"""The Pub/Sub messages the functions send each other, as frozen models, and their publishing.

The JSON field names are camelCase like the documents'; a message that lacks a field or has the
wrong type is a DocumentError naming it (recorded, not retried).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from functions import pubsub
from functions.registry import AGENT_TURN_TOPIC, AGENT_WAKE_TOPIC
from functions.rooms import Room


class WireMessage(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore"
    )

    def to_json(self) -> dict[str, object]:
        return self.model_dump(by_alias=True, mode="json")


class AgentTurn(WireMessage):
    """One agent, one chat message to answer (or an opening): an ``agent-turn`` message."""

    experiment_id: str
    cohort_id: str
    stage_id: str
    trigger_chat_id: str = ""
    """The message answered; '' for an opening message."""
    agent_type: str
    agent_id: str
    order: tuple[str, ...] = ()
    """Claim policy: the agents (of this type) that may answer, in turn order."""
    participants_after: tuple[str, ...] = ()
    """Claim policy, a mediator's turn: the participants asked, in order, once no mediator of
    ``order`` answered."""
    readiness_only: bool = False
    nonce: str = ""
    """Makes a readiness-only turn distinct per watchdog tick (its lock id includes it)."""
    participant_id: str = ""
    """A private chat: whose (private id); '' for the cohort's group chat."""
    nudge: bool = False
    """A private chat that went quiet (a declined or failed reply, or the watchdog): the agent
    participant may speak again after its own message."""
    conducted: bool = False
    """Conductor policy: picked by the chat's conductor; a decline asks it to pick again."""
    declined: tuple[str, ...] = ()
    """Conductor policy: the agents (``type:privateId``) that declined this message before."""
    redriven: bool = False
    """Handed on by the watchdog for a message whose turn was lost with its invocation: it may
    repeat a turn made before, so its model calls look in the journal first (the turns it hands
    on do not)."""

    @classmethod
    def in_room(cls, room: Room, agent_type: str, agent_id: str, **rest: object) -> AgentTurn:
        return cls.model_validate(
            {
                "experiment_id": room.experiment_id,
                "cohort_id": room.cohort_id,
                "stage_id": room.stage_id,
                "participant_id": room.participant_id,
                "agent_type": agent_type,
                "agent_id": agent_id,
                **rest,
            }
        )

    @property
    def room(self) -> Room:
        return Room(self.experiment_id, self.cohort_id, self.stage_id, self.participant_id)

    @property
    def is_opening(self) -> bool:
        return not self.trigger_chat_id

    @property
    def log_id(self) -> str:
        """The election record: one responder of each type per message (or opening)."""
        if self.is_opening:
            return f"initial-{self.agent_type}-{self.agent_id}"
        return f"{self.trigger_chat_id}-{self.agent_type}"

    def next_in_order(self) -> AgentTurn | None:
        """Claim policy: the same message for the next agent in the order, if any (after the
        mediators', the first of ``participants_after``)."""
        if self.is_opening or self.agent_id not in self.order:
            return None
        index = self.order.index(self.agent_id)
        if index + 1 < len(self.order):
            return self.model_copy(update={"agent_id": self.order[index + 1], "redriven": False})
        if not self.participants_after:
            return None
        following = self.participants_after
        return self.model_copy(
            update={
                "agent_type": "participant",
                "agent_id": following[0],
                "order": following,
                "participants_after": (),
                "redriven": False,
            }
        )


class AgentWake(WireMessage):
    """Make one move for an agent participant: an ``agent-wake`` message."""

    experiment_id: str
    participant_id: str
    reason: str = ""
    cohort_id: str = ""
    stage_id: str = ""
    """Where the waker saw the participant ('' if it did not): read with it (a guess only)."""
    agent_id: str = ""
    """Its persona, if the waker saw it: the persona's prompt there is read with it too."""


def publish_turns(*turns: AgentTurn) -> None:
    """Publish the turns together (awaited): each one is its agent's own invocation."""
    pubsub.publish_all(AGENT_TURN_TOPIC, [turn.to_json() for turn in turns])


def publish_wakes(
    experiment_id: str,
    reason: str,
    *participant_ids: str,
    seen_at: Mapping[str, tuple[str, str, str]] | None = None,
) -> None:
    """One wake message per participant, published together; ``seen_at``: (cohort, stage,
    persona) where the waker saw each one, if it knows."""
    at = seen_at or {}
    wakes = [
        AgentWake(
            experiment_id=experiment_id,
            participant_id=p,
            reason=reason,
            cohort_id=at.get(p, ("", "", ""))[0],
            stage_id=at.get(p, ("", "", ""))[1],
            agent_id=at.get(p, ("", "", ""))[2],
        )
        for p in participant_ids
    ]
    pubsub.publish_all(AGENT_WAKE_TOPIC, [wake.to_json() for wake in wakes])
