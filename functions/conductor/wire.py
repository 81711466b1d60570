"""The conductor's Pub/Sub messages: run step ``index`` of a conversation, or one agent step of
a parallel agent's branch."""

from __future__ import annotations

from functions import pubsub
from functions.registry import CONDUCTOR_BRANCH_TOPIC, CONDUCTOR_STEP_TOPIC
from functions.wire import WireMessage


class ConductorStep(WireMessage):
    conversation_id: str
    index: int
    reason: str = ""


def publish_steps(*steps: ConductorStep) -> None:
    """Publish the steps together (awaited); each is its own invocation."""
    pubsub.publish_all(CONDUCTOR_STEP_TOPIC, [step.to_json() for step in steps])


class ConductorBranch(WireMessage):
    """Run agent step ``agent_step`` of branch ``branch`` of the join step ``index``."""

    conversation_id: str
    index: int
    branch: int
    agent_step: int = 1
    reason: str = ""


def publish_branches(*branches: ConductorBranch) -> None:
    pubsub.publish_all(CONDUCTOR_BRANCH_TOPIC, [branch.to_json() for branch in branches])
