"""A step that waits for a person: the human agent's settings, what its step shows while it
waits, and the person's answer document.

A human agent is a workflow agent with a ``human`` map: its user prompt template is the question
put to the person (rendered with the step's arguments, the memory's values), its user prompt
argument class the fields of the answer (validated as a model's reply would be, with its
``is_valid``). The answer is a document of its own, ``conversations/{c}/humanAnswers/{stepId}``,
written by the console, the REST API or the tools; writing it wakes the step. The functions
never wait in memory: a waiting step is a pending step with a ``waiting`` map and a deadline.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import ConfigDict, Field

from shared import paths
from shared.models import DocModel, Timestamp

ANSWER = paths.HUMAN_ANSWER
"""The person's answer to the step ``stepId`` (one per step: its id is the step's)."""
ANSWER_FIELD = "humanAnswer"
"""The field error records name for a step's answer (missing by the deadline, or invalid)."""
MAX_DEADLINE_SECONDS = 30 * 86_400
MAX_ANSWER_BYTES = 64 * 1024
"""The largest answer a person may give (its values as JSON): the step's output, the
conversation's memory and the next prompt carry it, each in a document of at most 1 MiB."""


class OnDeadline(StrEnum):
    """What the conversation does when nobody answered by the deadline."""

    CONTINUE = "continue"
    """Hand back to the conductor with ``deadline_answer`` (or nothing) for the memory."""
    FINISH = "finish"
    """End it DONE, with the memory's finish field as the answer (as far as it got)."""
    FAIL = "fail"
    """End it FAILED, the step naming the missing answer."""


class HumanConfig(DocModel):
    """An agent's ``human`` map (``config.yml`` and ``workflows/{w}/agents/{a}``)."""

    model_config = ConfigDict(extra="forbid")

    deadline_seconds: float = Field(default=86_400.0, gt=0, le=MAX_DEADLINE_SECONDS)
    """From the step's creation; the conductor watchdog acts on it at its next tick."""
    on_deadline: OnDeadline = OnDeadline.CONTINUE
    deadline_answer: dict[str, Any] = {}
    """The answer's values taken when nobody answered (``continue``): e.g. ``{approved: false}``."""


class HumanWait(DocModel):
    """A step's ``waiting`` map, written by its first run: what the console shows and asks."""

    question: str
    """The agent's user prompt, rendered with the step's arguments."""
    answer_schema: dict[str, Any]
    """The JSON Schema of the answer's ``values`` (the console builds its form from it)."""
    deadline: Timestamp
    on_deadline: OnDeadline


class HumanAnswer(DocModel):
    """``conversations/{c}/humanAnswers/{stepId}``: the person's answer."""

    values: dict[str, Any]
    """The answer's fields, by the agent's user prompt argument names."""
    by: str = ""
    """Who answered: ``console``, ``api:<experimenter>``, a tool."""
    created_at: Timestamp | None = None


def answer_path(conversation_id: str, step_id: str) -> str:
    return paths.build(ANSWER, conversationId=conversation_id, stepId=step_id)
