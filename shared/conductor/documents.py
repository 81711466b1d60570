"""The conductor's Firestore documents: workflows (loaded from ``config.yml`` and the agent
folders, editable in the console), conversations, their steps and long-term memory.

Layout::

    workflows/{workflowId}                      WorkflowDoc (conductor, model, caps)
    workflows/{workflowId}/agents/{agent}       AgentDoc (description, templates, arguments)
    conversations/{conversationId}              Conversation (query, status, memory, answer)
    conversations/{c}/steps/{0000}              Step (one model turn or routing decision)
    conversations/{c}/steps/{n}/attempts/{id}   one model attempt with its error (model log)
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import ConfigDict, Field, field_validator

from shared import paths
from shared.models import AgentModelSettings, ApiType, DocModel, Timestamp
from shared.models._base import Count, Positive

FINISH = "FINISH"
"""The conductor's choice that ends a conversation with an answer."""
CONDUCTOR = "conductor"
"""The conductor's name in steps and memory provenance."""
MAX_ATTEMPTS_LIMIT = 10

WORKFLOW = paths.WORKFLOW
AGENT = paths.WORKFLOW_AGENT
CONVERSATION = paths.CONVERSATION
STEP = paths.CONVERSATION_STEP
ATTEMPTS = STEP + "/attempts"
STEP_LEASE = CONVERSATION + "/leases/{stepId}"
START = "start"
"""The start's lease id (beside the steps' ``0000``, ``0001``...): the start is a unit too."""

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_MODULE = re.compile(r"^workflows(\.[A-Za-z_][A-Za-z0-9_]*)+$")

Attempts = Annotated[int, Field(ge=1, le=MAX_ATTEMPTS_LIMIT)]


def step_id(index: int) -> str:
    """Zero-padded, so the console lists steps in order."""
    return f"{index:04d}"


def _settings() -> AgentModelSettings:
    return AgentModelSettings(api_type=ApiType.SCRIPTED, model_name="scripted")


class Strict(DocModel):
    """A workflow's own document or map: an unknown key is refused, not kept. A misspelt key
    kept in silence changes what the conductor does (``shared.conductor.checks`` says which key
    was probably meant)."""

    model_config = ConfigDict(extra="forbid")


class RoutingRule(Strict):
    """Rule-based routing before the model: the first rule whose memory fields match decides."""

    when_missing: list[str] = []
    """Memory fields that must all be empty (or absent)."""
    when_present: list[str] = []
    """Memory fields that must all be set."""
    then: str
    """An agent's name, or FINISH."""

    def matches(self, memory: dict[str, Any]) -> bool:
        missing = all(not memory.get(f) for f in self.when_missing)
        present = all(bool(memory.get(f)) for f in self.when_present)
        return missing and present


class ConductorConfig(Strict):
    system_prompt: str = ""
    """Jinja2; '' uses the default conductor prompt (the agents and their descriptions)."""
    user_prompt: str = ""
    """Jinja2; '' uses the default (analyse the conversation, pick the next agent)."""
    memory_fields: list[str] = []
    """The long-term memory: agents' prompt arguments with these names are kept."""
    rules: list[RoutingRule] = []
    max_dispatches: Positive = 8
    """Dispatches to agents per conversation; the next one ends it (a loop stops here)."""
    finish_field: str = "answer"
    """The memory field that is the conversation's answer when the conductor finishes."""
    max_attempts: Attempts = 3
    model_settings: AgentModelSettings | None = None


class WorkflowDoc(Strict):
    name: str = ""
    description: str = ""
    agents: list[str]
    """The agents' names, in the order the conductor's prompt lists them."""
    conductor: ConductorConfig = Field(default_factory=ConductorConfig)
    model_settings: AgentModelSettings = Field(default_factory=_settings)
    max_agent_steps: Positive = 4
    """Steps of one agent's turn before it hands back even if not final."""
    creator: str = ""
    """Its owner (tools/owner.py); the security rules scope it to them."""
    permissions: dict[str, Any] = {}
    """``{visibility, readers}``, as an experiment's (firestore.rules)."""

    @field_validator("agents")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        bad = [n for n in names if not _NAME.match(n) or n in (FINISH, CONDUCTOR)]
        if bad or not names:
            raise ValueError(f"agent names must be simple identifiers (not {FINISH}): {bad}")
        return names


class AgentDoc(Strict):
    name: str
    description: str = ""
    system_prompt: str = ""
    user_prompt: str
    module: str
    """The agent's deployed ``prompt.py`` (e.g. ``workflows.example.extractor.prompt``)."""
    system_prompt_argument: str = "SystemPromptArgument"
    user_prompt_argument: str = "UserPromptArgument"
    system_arguments: dict[str, Any] = {}
    """Values of the system prompt arguments (central configuration, as Diskurs recommends)."""
    max_attempts: Attempts = 3
    model_settings: AgentModelSettings | None = None

    @field_validator("module")
    @classmethod
    def _module(cls, module: str) -> str:
        if not _MODULE.match(module):
            raise ValueError(f"must be a module under workflows/ (got {module!r})")
        return module


class Status(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    DONE = "DONE"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


ACTIVE = (Status.PENDING, Status.RUNNING)


class Remembered(DocModel):
    """One long-term memory value and where it came from."""

    value: Any = None
    agent: str = ""
    turn: Count = 0
    """The dispatch (1, 2, ...) whose hand-back set it; 0 for a console edit."""
    step: Count = 0


class Problem(DocModel):
    document: str
    field: str
    reason: str


class UnitFailure(DocModel):
    """A unit of work (the start, a step) that ended for good: what its error record says.
    Set with status FAILED; a user who fixed the cause sets the status back to RUNNING (or
    PENDING, if it never started) and the watchdog re-arms the unit (docs/CONDUCTOR.md)."""

    document: str
    field: str
    reason: str
    attempts: Count = 0


class Conversation(DocModel):
    query: str
    workflow_id: str = "example"
    status: Status = Status.PENDING
    answer: str = ""
    memory: dict[str, Remembered] = {}
    dispatches: Count = 0
    current_step: int = -1
    active_agent: str = ""
    error: Problem | None = None
    failure: UnitFailure | None = None
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None

    def memory_values(self) -> dict[str, Any]:
        return {name: kept.value for name, kept in self.memory.items()}


class StepKind(StrEnum):
    CONDUCTOR = "conductor"
    AGENT = "agent"


class StepStatus(StrEnum):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


class Decision(DocModel):
    next_agent: str
    by: str = "model"
    """'rule', 'model' or 'cap'."""
    answer: str = ""
    reason: str = ""


class Step(DocModel):
    index: Count
    kind: StepKind
    agent: str
    turn: Count = 0
    """The dispatch this step belongs to (0: the first conductor step)."""
    agent_step: Count = 0
    """1, 2, ... within an agent's turn; 0 for a conductor step."""
    status: StepStatus = StepStatus.PENDING
    input: dict[str, Any] = {}
    output: dict[str, Any] | None = None
    is_final: bool = False
    decision: Decision | None = None
    error: str = ""
    created_at: Timestamp | None = None
    completed_at: Timestamp | None = None
