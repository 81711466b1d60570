"""What one step comes to (decided outside any transaction; ``commit`` applies it), and the
paths of the documents it touches."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from shared import paths
from shared.conductor.branches import Branch
from shared.conductor.documents import (
    CONVERSATION,
    STEP,
    STORED,
    Decision,
    Problem,
    Queued,
    Status,
    Step,
    step_id,
)


@dataclasses.dataclass(frozen=True)
class Completion:
    """Step n done (or failed), and what follows: step n+1, or the conversation's end."""

    output: dict[str, Any] | None = None
    is_final: bool = False
    decision: Decision | None = None
    next_step: Step | None = None
    hand_back: dict[str, Any] | None = None
    """The agent's final arguments, merged into the memory by field name at commit."""
    memory_fields: tuple[str, ...] = ()
    status: Status = Status.RUNNING
    answer: str = ""
    problem: Problem | None = None
    result: dict[str, Any] | None = None
    """Diskurs' ``final_result`` (what ``finalize``, ``fail`` or a finalizer gave)."""
    outcome: str = ""
    note: str = ""
    """On the step: what happened that is not an error ('No valid answer found after...')."""
    warnings: tuple[str, ...] = ()
    """Added to the conversation's ``warnings``."""
    branches: tuple[Branch, ...] = ()
    """A parallel agent's fan-out: created with ``next_step`` (its join step) at commit."""
    queue: tuple[str, ...] = ()
    """Topics the conversation goes to after ``next_step``'s chain ends, in order (an agent's
    second and later ``topics``): queued at commit with the memory as this step leaves it."""
    settles: str = ""
    """A conductor that finalizes or reached its cap (``Conversation.settled``)."""
    stored: dict[str, Any] | None = None
    """A finalizer's end: the memory's values it leaves, written to the conversation's store
    document (``Conversation.store_id``) at commit."""
    resume: Queued | None = None
    """The queued topic ``next_step`` goes to (the conversation would have ended): taken off the
    queue at commit, its memory the conversation's again."""


def conversation_path(conversation_id: str) -> str:
    return paths.build(CONVERSATION, conversationId=conversation_id)


def stored_path(workflow_id: str, store_id: str) -> str:
    return paths.build(STORED, workflowId=workflow_id, storeId=store_id)


def step_path(conversation_id: str, index: int) -> str:
    return paths.build(STEP, conversationId=conversation_id, stepId=step_id(index))


def failed(problem: Problem) -> Completion:
    return Completion(status=Status.FAILED, problem=problem)


def ended(outcome: str, result: dict[str, Any] | None, **more: Any) -> Completion:
    """The conversation DONE as Diskurs ends one: with its final result (None: none)."""
    answer = "" if result is None else _answer(result)
    return Completion(status=Status.DONE, outcome=outcome, result=result, answer=answer, **more)


def _answer(result: dict[str, Any]) -> str:
    """The answer shown for a result: its only value, or the whole result as text."""
    if len(result) == 1:
        (value,) = result.values()
        if isinstance(value, str):
            return value
    return json.dumps(result, ensure_ascii=False, default=str)
