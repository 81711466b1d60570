"""The society's Pub/Sub messages: one member's turn on one day; one shard's phase of a close."""

from __future__ import annotations

from functions import pubsub
from functions.registry import SOCIETY_CLOSE_TOPIC, SOCIETY_TURN_TOPIC
from functions.wire import WireMessage


class SocietyTurn(WireMessage):
    society_id: str
    day: int
    agent_id: int
    slot: int = 1

    @property
    def action_id(self) -> str:
        return f"{self.agent_id}-{self.slot}"


def publish_turns(turns: list[SocietyTurn]) -> None:
    """Every turn its own message (its own invocation), published together and awaited."""
    pubsub.publish_all(SOCIETY_TURN_TOPIC, [turn.to_json() for turn in turns])


class CloseShard(WireMessage):
    society_id: str
    day: int
    phase: str
    shard: int


def publish_shards(messages: list[CloseShard]) -> None:
    pubsub.publish_all(SOCIETY_CLOSE_TOPIC, [m.to_json() for m in messages])
