"""The agent-turn Pub/Sub message: one agent, one chat message to answer (or an opening)."""

from __future__ import annotations

import dataclasses
from typing import Any

from functions import pubsub
from functions.chat.room import Room
from functions.registry import AGENT_TURN_TOPIC


@dataclasses.dataclass(frozen=True)
class Turn:
    """The agent-turn Pub/Sub message."""

    experiment_id: str
    cohort_id: str
    stage_id: str
    trigger_chat_id: str
    """The message answered; '' for an opening message."""
    agent_type: str
    agent_id: str
    order: tuple[str, ...] = ()
    """Claim policy: the agents (of this type) that may answer, in turn order."""
    readiness_only: bool = False
    nonce: str = ""
    """Makes a readiness-only turn distinct per watchdog tick (its lock id includes it)."""
    participant_id: str = ""
    """A private chat: whose (private id); '' for the cohort's group chat."""
    nudge: bool = False
    """A private chat that went quiet (a declined or failed reply, or the watchdog): the agent
    participant may speak again after its own message."""

    def to_json(self) -> dict[str, Any]:
        return {
            "experimentId": self.experiment_id,
            "cohortId": self.cohort_id,
            "stageId": self.stage_id,
            "triggerChatId": self.trigger_chat_id,
            "agentType": self.agent_type,
            "agentId": self.agent_id,
            "order": list(self.order),
            "readinessOnly": self.readiness_only,
            "nonce": self.nonce,
            "participantId": self.participant_id,
            "nudge": self.nudge,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Turn:
        return cls(
            experiment_id=data["experimentId"],
            cohort_id=data["cohortId"],
            stage_id=data["stageId"],
            trigger_chat_id=data.get("triggerChatId", ""),
            agent_type=data["agentType"],
            agent_id=data["agentId"],
            order=tuple(data.get("order") or ()),
            readiness_only=bool(data.get("readinessOnly")),
            nonce=str(data.get("nonce") or ""),
            participant_id=str(data.get("participantId") or ""),
            nudge=bool(data.get("nudge")),
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


def publish(*turns: Turn) -> None:
    """Publish the turns together (awaited): each one is its agent's own invocation."""
    pubsub.publish_all(AGENT_TURN_TOPIC, [turn.to_json() for turn in turns])
