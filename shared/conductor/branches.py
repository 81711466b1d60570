"""The documents of a parallel agent's fan-out: one ``Branch`` per branched prompt argument,
under the join step that waits for them all.

Layout::

    conversations/{c}/steps/{n}                         the join step (kind ``join``)
    conversations/{c}/steps/{n}/branches/{bb}           Branch: one branch's state and output
    conversations/{c}/steps/{n}/branches/{bb}/attempts  its model attempts (every agent step)

The branches are created in the same transaction that completes the step which branched and
creates the join step, so a join step always has exactly ``branches`` of them.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from shared import paths
from shared.conductor.documents import STEP, StepStatus
from shared.models import DocModel, Timestamp
from shared.models._base import Count, Positive

BRANCH = STEP + "/branches/{branchId}"
BRANCH_ATTEMPTS = BRANCH + "/attempts"


def branch_id(index: int) -> str:
    """Zero-padded, so the console lists branches in order."""
    return f"{index:02d}"


def branch_unit(join_step: str, index: int) -> str:
    """The branch's unit id, beside the steps' (``0003-01``): its lease's document id."""
    return f"{join_step}-{branch_id(index)}"


def branch_path(conversation_id: str, join_step: str, index: int) -> str:
    return paths.build(
        BRANCH, conversationId=conversation_id, stepId=join_step, branchId=branch_id(index)
    )


def branches_collection(conversation_id: str, join_step: str) -> str:
    return paths.collection_of(BRANCH, conversationId=conversation_id, stepId=join_step)


def attempts_collection(conversation_id: str, join_step: str, index: int) -> str:
    return paths.build(
        BRANCH_ATTEMPTS,
        conversationId=conversation_id,
        stepId=join_step,
        branchId=branch_id(index),
    )


class JoinInput(DocModel):
    """The join step's ``input``: how many branches it waits for; for the planner, the
    arguments its turn goes on from and the agent step that planned."""

    branches: Count
    arguments: dict[str, Any] = {}
    agent_step: Count = 0


class Branch(DocModel):
    """One branch of a parallel agent: its own multi-step turn on the branched prompt
    argument, one agent step at a time (``agentStep``), until ``is_final`` or the agent's
    step cap; then ``done`` with its output, which the join step reads."""

    index: Count
    join: Count
    """The join step's index."""
    agent: str
    kind: str = "agent"
    """``agent``: the parallel agent's turn; ``call``: one planned call of the planner."""
    depends_on: list[int] = Field(default_factory=list)
    """Branches whose outputs it waits for (a planned call's dependencies): it runs once they
    are all done, published by the last of them."""
    agent_step: Positive = 1
    status: StepStatus = StepStatus.PENDING
    input: dict[str, Any] = {}
    """The prompt argument of its current agent step (the branch function's, then the last
    reply's)."""
    output: dict[str, Any] | None = None
    outputs: list[dict[str, Any]] = Field(default_factory=list)
    """Every agent step's reply, in order."""
    is_final: bool = False
    claimed: bool = False
    """A planned call whose tool run started: set before the tool runs, so a run cut off is
    never repeated (``functions.conductor.planner``)."""
    error: str = ""
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None
    completed_at: Timestamp | None = None
