"""The conductor's Firestore documents: workflows (loaded from ``config.yml`` and the agent
folders, editable in the console), conversations, their steps and long-term memory.

Two configuration formats load into these documents: this project's own and Diskurs' (its
``config.yml`` as Diskurs spells it, ``tools/diskurs_config.py``). ``WorkflowDoc.format`` says
which, because a few behaviours follow the format's own rules (how templates treat an undefined
variable, how the memory passes fields between agents, how a conversation that cannot finalize
ends); the documents are otherwise one model, so the functions run both the same way.

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

from pydantic import ConfigDict, Field, field_validator, model_validator

from shared import paths
from shared.conductor.human import HumanConfig, HumanWait
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
STORED = WORKFLOW + "/store/{storeId}"
"""Diskurs' conversation store, as Firestore documents (``Stored``)."""
START = "start"
"""The start's lease id (beside the steps' ``0000``, ``0001``...): the start is a unit too."""

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_MODULE = re.compile(r"^workflows(\.[A-Za-z_][A-Za-z0-9_]*)+$")

Attempts = Annotated[int, Field(ge=1, le=MAX_ATTEMPTS_LIMIT)]
ReasoningSteps = Annotated[int, Field(ge=1, le=100)]


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


class RouteFunction(Strict):
    """A routing rule written as a Python function (Diskurs' ``rules``): ``condition(conversation)``
    in a deployed file; true routes to ``target_agent`` before any model call."""

    name: str
    description: str = ""
    location: str
    """The folder holding ``rules.py`` (as the agents' ``promptLocation``)."""
    condition_name: str
    target_agent: str


class ConductorConfig(Strict):
    name: str = CONDUCTOR
    """The conductor's name: ``conductor``, or a Diskurs project's conductor agent (whose
    templates, prompt class and functions are in its agent document of that name)."""
    topics: list[str] | None = None
    """The agents it may route to; None: every agent of the workflow."""
    finalizer_name: str = ""
    """When it can finalize: the agent that finalizes (its ``finalProperties`` are the result)."""
    supervisor: str = ""
    """When it can finalize: the agent the conversation goes to instead (a supervisor)."""
    can_finalize_agent: str = ""
    """A ``multistep_predicate`` agent asked whether the conversation can finalize (Diskurs'
    conductor-level ``canFinalizeName``)."""
    can_finalize_name: str = ""
    """``can_finalize(longterm_memory)`` in the conductor's prompt.py; '' : never (Diskurs)."""
    finalize_name: str = "finalize"
    fail_name: str = "fail"
    longterm_memory_class: str = ""
    """The long-term memory class (a Diskurs ``LongtermMemory``) in the conductor's prompt.py, or
    ``Class`` in ``longtermMemoryLocation``; '' : the memory is the ``memoryFields``."""
    longterm_memory_location: str = ""
    """The file defining ``longtermMemoryClass`` when it is not the conductor's prompt.py."""
    route_functions: list[RouteFunction] = []
    fallback_to_llm: bool = True
    """No rule matched: ask the model (else the conversation fails, as in Diskurs)."""
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


class WorkflowFormat(StrEnum):
    DLAB = "dlab"
    """This project's format: pydantic prompt arguments, strict templates, the memory by name."""
    DISKURS = "diskurs"
    """Diskurs' own: dataclass prompt arguments, Input/Output fields, lenient templates."""


class ValidationMessage(StrEnum):
    VERBATIM = "verbatim"
    """The ``PromptValidationError``'s message is the corrective turn, as Diskurs sends it."""
    WRAPPED = "wrapped"
    """'Your previous reply was not valid: <message>. Reply again with only the corrected JSON'."""


class NoValidReply(StrEnum):
    CARRY_ON = "carry_on"
    """Diskurs: the step ends with its arguments unchanged and 'No valid answer found after n
    trials.'; the agent's turn goes on (or hands back)."""
    FAIL = "fail"
    """The conversation ends FAILED naming the step and the last error."""


class Semantics(Strict):
    """Where Diskurs and this project differ; None: the deployment's setting
    (``DLAB_CONDUCTOR_VALIDATION_MESSAGE``, ``DLAB_CONDUCTOR_NO_VALID_REPLY``: Diskurs')."""

    validation_message: ValidationMessage | None = None
    no_valid_reply: NoValidReply | None = None


class ToolEntry(Strict):
    """One of the workflow's tools (Diskurs' ``tools``): a function in a deployed file."""

    name: str
    function_name: str
    module_path: str = ""
    """The file defining it (resolved when loaded)."""
    module_name: str = ""
    configs: dict[str, Any] | None = None
    """Given, the file's ``create_<functionName>(configs)`` makes the function (Diskurs)."""
    dependencies: list[str] | None = None


class WorkflowDoc(Strict):
    name: str = ""
    description: str = ""
    format: WorkflowFormat = WorkflowFormat.DLAB
    agents: list[str]
    """The agents' names (the conductor's not among them), in the order the conductor's prompt
    lists them."""
    first_contact: str = ""
    """The agent that takes step 0; '' : the conductor."""
    semantics: Semantics = Field(default_factory=Semantics)
    tools: list[ToolEntry] = []
    tool_dependencies: dict[str, Any] = {}
    """Diskurs' ``toolDependencies``, as written."""
    warnings: list[str] = []
    """What the loader found that Diskurs tolerates in silence (a finalizer never defined...)."""
    conductor: ConductorConfig = Field(default_factory=ConductorConfig)
    conductors: list[ConductorConfig] = []
    """A Diskurs project's other conductors (nested: a conductor among another's topics, which
    hands the conversation back through its ``supervisor``), each routing its own topics with
    its own agent document, as ``conductor`` does."""
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

    def conductor_name(self) -> str:
        return self.conductor.name

    def starts_with(self) -> str:
        """The agent of step 0 (the conductor's name unless ``firstContact`` says otherwise)."""
        return self.first_contact or self.conductor.name

    def routable(self) -> list[str]:
        """The agents (and other conductors) the conductor may route to."""
        topics = self.conductor.topics
        every = [*self.agents, *(c.name for c in self.conductors)]
        return [a for a in every if topics is None or a in topics]

    def conductor_names(self) -> list[str]:
        return [self.conductor.name, *(c.name for c in self.conductors)]

    def led_by(self, name: str) -> WorkflowDoc:
        """The workflow as its conductor ``name`` runs it: ``conductor`` that one's map (the
        memory's class the project's), the others in ``conductors``."""
        found = next((c for c in self.conductors if c.name == name), None)
        if found is None:
            return self
        memory = {
            "longterm_memory_class": self.conductor.longterm_memory_class,
            "longterm_memory_location": self.conductor.longterm_memory_location,
        }
        others = [self.conductor, *(c for c in self.conductors if c.name != name)]
        return self.model_copy(update={"conductor": found.model_copy(update=memory),
                                       "conductors": others})  # fmt: skip

    def asking(self, agent: str) -> ConductorConfig | None:
        """The conductor whose ``multistep_predicate`` agent ``agent`` is."""
        every = [self.conductor, *self.conductors]
        return next(
            (c for c in every if c.can_finalize_agent and c.can_finalize_agent == agent), None
        )


class AgentType(StrEnum):
    """Diskurs' agent types (``agents[].type``)."""

    CONDUCTOR = "conductor"
    MULTISTEP = "multistep"
    MULTISTEP_FINALIZER = "multistep_finalizer"
    MULTISTEP_PREDICATE = "multistep_predicate"
    PARALLEL_MULTISTEP = "parallel_multistep"
    HEURISTIC = "heuristic"
    HEURISTIC_FINALIZER = "heuristic_finalizer"
    LLM_COMPILER = "llm_compiler"


FINALIZERS = (AgentType.MULTISTEP_FINALIZER, AgentType.HEURISTIC_FINALIZER)
HEURISTICS = (AgentType.HEURISTIC, AgentType.HEURISTIC_FINALIZER)


class AgentDoc(Strict):
    name: str
    type: AgentType = AgentType.MULTISTEP
    description: str = ""
    system_prompt: str = ""
    user_prompt: str = ""
    module: str = ""
    """The agent's deployed ``prompt.py`` as a module (``workflows.example.extractor.prompt``),
    or '' with ``promptLocation``."""
    prompt_location: str = ""
    """The folder of the agent's ``prompt.py`` as a path (a Diskurs project's
    ``prompt.location``): under ``workflows/`` or a folder of ``DLAB_WORKFLOW_DIRS``."""
    code_filename: str = "prompt.py"
    system_prompt_argument: str = "SystemPromptArgument"
    """'' : the system template is rendered with the user prompt argument (Diskurs)."""
    user_prompt_argument: str = "UserPromptArgument"
    system_arguments: dict[str, Any] = {}
    """Values of the system prompt arguments (central configuration, as Diskurs recommends)."""
    is_valid_name: str = "is_valid"
    is_final_name: str = "is_final"
    max_attempts: Attempts = 3
    """Replies per step, the corrective ones included (Diskurs' ``maxTrials``)."""
    max_reasoning_steps: ReasoningSteps | None = None
    """Steps of one turn before it hands back (Diskurs' ``maxReasoningSteps``); None: the
    workflow's ``maxAgentSteps``."""
    topics: list[str] | None = None
    """Where its turn goes when it ends (Diskurs' ``topics``: to each in turn, each topic's
    chain of turns to its end before the next, ``Conversation.queued``); None: the conductor."""
    init_from_memory: bool = True
    """Its first arguments of a turn take the memory's values (Diskurs'
    ``initPromptArgumentsWithLongtermMemory``)."""
    locked_fields: dict[str, Any] = {}
    """Argument values set at every turn, never taken from a reply (Diskurs' ``lockedFields``)."""
    final_properties: list[str] | None = None
    """A finalizer's arguments that are the conversation's result (None: all)."""
    heuristic_sequence_name: str = "heuristic_sequence"
    render_prompt: bool = True
    tools: list[str] = []
    """Names of the workflow's ``tools`` this agent may call."""
    parallel_location: str = ""
    """A ``parallel_multistep`` agent's folder with ``parallelize.py`` (Diskurs' ``location``)."""
    branch_conversation_name: str = "branch_conversation"
    join_conversations_name: str = "join_conversations"
    invoke_on_final: bool = True
    model_settings: AgentModelSettings | None = None
    human: HumanConfig | None = None
    """Set: a person answers instead of a model (``shared.conductor.human``)."""

    @field_validator("module")
    @classmethod
    def _module(cls, module: str) -> str:
        if module and not _MODULE.match(module):
            raise ValueError(f"must be a module under workflows/ (got {module!r})")
        return module

    @model_validator(mode="after")
    def _code(self) -> AgentDoc:
        codeless = (AgentType.CONDUCTOR, AgentType.LLM_COMPILER)  # Diskurs' own prompt for both
        if bool(self.module) == bool(self.prompt_location) and self.type not in codeless:
            raise ValueError("give exactly one of module (a workflows/ module) or promptLocation")
        return self

    def steps_per_turn(self, workflow: WorkflowDoc) -> int:
        return self.max_reasoning_steps or workflow.max_agent_steps


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


class MemoryChange(DocModel):
    """One memory field a step (or a console edit) changed: its value before and after."""

    field: str
    before: Any = None
    after: Any = None


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


class Queued(DocModel):
    """A topic still to be published to: Diskurs' agent publishes its turn to each of its
    ``topics`` in turn, and the next topic gets the conversation as the agent left it."""

    agent: str
    memory: dict[str, Remembered] = {}
    """The memory when the agent's turn ended (what a later chain changed does not reach it)."""


class Stored(DocModel):
    """A Diskurs conversation in its project's conversation store: what its finalizer left, as
    Diskurs' store persists a conversation when its finalizer finalizes it; the next
    conversation with the same Diskurs ``conversation_id`` starts from it."""

    memory: dict[str, Any] = {}
    """The long-term memory's values (its ``LongtermMemory``'s fields, ``user_query`` included)."""
    conversation: str = ""
    """The conversation document that left it."""
    updated_at: Timestamp | None = None


class Conversation(DocModel):
    query: str
    workflow_id: str = "example"
    status: Status = Status.PENDING
    answer: str = ""
    memory: dict[str, Remembered] = {}
    dispatches: Count = 0
    visits: dict[str, Count] = {}
    """Each conductor's visits, this one included (Diskurs' ``n_dispatches``, against its
    ``maxDispatches``): a step of a conductor that is not a further reasoning step of its
    visit nor its return from a ``multistep_predicate`` agent."""
    settled: list[str] = []
    """Conductors that finalized or reached their cap in the current chain of turns: when the
    chain ends and a queued topic is taken up, their visits count from 0 again (Diskurs sets
    ``n_dispatches`` back once its ``finalize`` or ``fail`` has run)."""
    current_step: int = -1
    active_agent: str = ""
    error: Problem | None = None
    failure: UnitFailure | None = None
    metadata: dict[str, Any] = {}
    """Diskurs' ``DiskursInput.metadata``: what the project's functions find on the conversation."""
    result: dict[str, Any] | None = None
    """Diskurs' ``final_result``: what ``finalize``, ``fail`` or a finalizer returned."""
    outcome: str = ""
    """How it ended: ``answer``, ``finalize``, ``finalizer``, ``fail``, ``no topic``..."""
    warnings: list[str] = []
    store_id: str = ""
    """Diskurs' ``conversation_id`` (``DiskursInput``): the conversation starts from its stored
    memory (``STORED``), and a finalizer's end stores its memory there; '' : not stored."""
    queued: list[Queued] = []
    """Topics still to publish to, a stack (the last is next): when the conversation would end,
    it goes on with the last, from its memory."""
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None

    def memory_values(self) -> dict[str, Any]:
        return {name: kept.value for name, kept in self.memory.items()}


class StepKind(StrEnum):
    CONDUCTOR = "conductor"
    AGENT = "agent"
    JOIN = "join"
    """Waits for a parallel agent's branches (``shared.conductor.branches``), then joins them."""
    HUMAN = "human"
    """A human agent's step: it waits for a person's answer document."""


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
    note: str = ""
    """What happened that is not an error: 'No valid answer found after 5 trials.'..."""
    agent_type: str = ""
    predicate: bool | None = None
    """On a conductor step after a ``multistep_predicate`` turn: its answer (asked once)."""
    after_join: bool = False
    """An agent step of a parallel agent's turn after its join (``invokeOnFinal``): the turn's
    end hands back, it does not branch again."""
    waiting: HumanWait | None = None
    """A human step waiting for its answer: the question, the answer's schema, the deadline."""
    memory_changes: list[MemoryChange] = []
    """What its hand-back changed in the memory (written by the commit that applied it)."""
    created_at: Timestamp | None = None
    completed_at: Timestamp | None = None
