"""The conductor's Pub/Sub message: run step ``index`` of a conversation."""

from __future__ import annotations

from functions import pubsub
from functions.registry import CONDUCTOR_STEP_TOPIC
from functions.wire import WireMessage


class ConductorStep(WireMessage):
    conversation_id: str
    index: int
    reason: str = ""


def publish_steps(*steps: ConductorStep) -> None:
    """Publish the steps together (awaited); each is its own invocation."""
    pubsub.publish_all(CONDUCTOR_STEP_TOPIC, [step.to_json() for step in steps])
