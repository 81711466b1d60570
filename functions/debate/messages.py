"""The debate's Pub/Sub turn: one agent, one statement of one round."""

from __future__ import annotations

from functions import pubsub
from functions.registry import DEBATE_TURN_TOPIC
from functions.wire import WireMessage
from shared.debate import naming


class DebateTurn(WireMessage):
    debate_id: str
    round_id: str
    agent: str

    @property
    def statement_id(self) -> str:
        return naming.statement_id(self.round_id, self.agent)


def publish_turns(debate_id: str, round_id: str, agents: list[str]) -> None:
    turns = [DebateTurn(debate_id=debate_id, round_id=round_id, agent=a) for a in agents]
    pubsub.publish_all(DEBATE_TURN_TOPIC, [t.to_json() for t in turns])
