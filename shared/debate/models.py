"""The debate's documents: ``debates/{d}`` and its agents, layers, clusters, rounds and
statements. camelCase in Firestore like every other document (``DocModel``)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, field_validator

from shared.models import DocModel, Timestamp
from shared.models._base import Count, Positive
from shared.models.participant import ApiType

BACKEND_FIELDS = frozenset({"status", "decision", "startedAt", "finishedAt", "failure"})
"""Fields of the debate document only the backend writes; a write that changes nothing else is
not a user's touch."""

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]


class DebateMode(StrEnum):
    HIERARCHICAL = "hierarchical"
    ALL_TO_ALL = "all_to_all"
    """Baseline: the same leaf agents in one cluster, every agent sees every statement."""
    SELF_CONSISTENCY = "self_consistency"
    """Baseline: one agent with all the data, ``samples`` independent answers, majority."""


class Role(StrEnum):
    LEAF = "leaf"
    HEAD = "head"


class StatementKind(StrEnum):
    OPENING = "opening"
    ARGUMENT = "argument"
    HEAD_OPENING = "head_opening"
    """The seed's head agent, formed to represent its cluster (its prompt holds the cluster's
    data and whole debate), gives its opening statement: a statement of its own, its round
    ``{clusterId}-H``; it is what the cluster passes up."""
    CARRIED = "carried"
    """A head agent's opening statement (or a passed agent's last statement) as its opening in
    the next layer: a copy, no model call."""


class DebateStatus(StrEnum):
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    """A unit of it ended (a user function raised, the model never answered validly, the
    provider kept failing): ``failure`` says which; a user's touch clears it and retries."""


TERMINAL = frozenset({DebateStatus.DONE.value, DebateStatus.FAILED.value})
"""Statuses the watchdog leaves alone (a failed debate waits for a touch)."""


class DebateFailure(DocModel):
    """Why a debate stopped: the document and field (or user function) of its error record."""

    document: str
    field: str
    reason: str
    attempts: Count = 0
    at: Timestamp | None = None


class StaticAgentSpec(DocModel):
    name: str = ""
    """Default ``{DEBATE}_Static{i}``."""
    personality: str = Field(min_length=1)


class UserFunctions(DocModel):
    """Names of registered user functions (``shared.debate.kits``)."""

    format_agent_response: str = "stock_trading"
    draw_final_conclusion: str = "stock_trading"
    compare_responses: str = "stock_trading"
    prompts: str = "stock_trading"


class DebateModelSettings(DocModel):
    api_type: ApiType = ApiType.SCRIPTED
    model_name: str = ""


class Debate(DocModel):
    """``debates/{d}``: what a researcher writes (settings and data) and, written by the backend
    only, ``status``, ``decision``, ``failure``, ``startedAt``, ``finishedAt``."""

    name: str = Field(min_length=1, max_length=60, pattern=r"^[A-Za-z0-9-]+$")
    """DEBATE_NAME of the seed's naming conventions."""
    data: list[dict[str, Any]] = Field(min_length=1, max_length=5000)
    categories: list[str] = []
    """Categories the model may choose from; empty: it names them (at most ``maxCategories``)."""
    max_categories: Positive = 8
    num_rounds: Annotated[int, Field(ge=0, le=20)] = 2
    num_layers: Annotated[int, Field(ge=1, le=10)] = 2
    token_limit: Positive = 400
    """Most data tokens one leaf agent holds (an entry larger than this gets an agent alone)."""
    max_cluster_size: Annotated[int, Field(ge=2, le=100)] = 8
    """Most leaf agents of one category in one first-layer cluster: a larger category is split
    into several clusters (``packing.cluster_sizes``), so no debate memory grows with the data."""
    seed: int = 0
    diversity_threshold: Fraction = 0.5
    static_agents: list[StaticAgentSpec] = []
    user_functions: UserFunctions = Field(default_factory=UserFunctions)
    model: DebateModelSettings = Field(default_factory=DebateModelSettings)
    mode: DebateMode = DebateMode.HIERARCHICAL
    samples: Annotated[int, Field(ge=1, le=50)] = 5
    """Self-consistency baseline: answers sampled."""
    num_retries: Annotated[int, Field(ge=0, le=10)] = 3
    """Corrective turns for a reply that is not a valid statement."""
    paused: bool = False
    status: str = ""
    decision: dict[str, Any] | None = None
    failure: DebateFailure | None = None
    started_at: Timestamp | None = None
    finished_at: Timestamp | None = None

    @field_validator("data")
    @classmethod
    def _entries_are_objects(cls, data: list[Any]) -> list[Any]:
        for i, entry in enumerate(data):
            if not isinstance(entry, dict):
                raise ValueError(f"entry {i} is not a JSON object")
        return data


class DebateAgent(DocModel):
    """``debates/{d}/agents/{name}``."""

    name: str
    role: Role
    dynamic: bool = True
    """Static agents hold all the data and a personality."""
    category: str = ""
    personality: str = ""
    entry_indexes: list[int] = []
    entries: list[dict[str, Any]] = []
    data_tokens: Count = 0
    layer: Positive = 1
    represented_agents: list[str] = []
    represented_cluster: str = ""


class Layer(DocModel):
    """``debates/{d}/layers/L{l}``."""

    id: str
    index: Positive
    clusters: list[str]
    complete: bool = False
    outputs: dict[str, str] = {}
    """Agent name → the statement that stands for it in the next layer."""


class Cluster(DocModel):
    """``debates/{d}/clusters/L{l}-C{c}``."""

    id: str
    layer: Positive
    index: Count
    name: str
    """The category for layer 1, ``Cluster{i}`` above."""
    part: Count = 0
    parts: Positive = 1
    """A category larger than ``maxClusterSize`` is ``parts`` clusters; this is number ``part``."""
    members: list[str]
    dynamic: list[str] = []
    head_agent: str = ""
    synthesize: bool = True
    """False for the all-to-all and self-consistency baselines: no head agent."""
    carried: dict[str, str] = {}
    """Layers above the first: member → its statement from the layer below (its opening)."""
    debates: bool | None = None
    reason: str = ""
    complete: bool = False
    outputs: dict[str, str] = {}

    @property
    def label(self) -> str:
        """The name as people read it: ``News (part 2 of 3)`` for a split category."""
        if self.parts == 1:
            return self.name
        return f"{self.name} (part {self.part + 1} of {self.parts})"


class Difference(DocModel):
    """``compare_responses`` of two head agents' statements (``a`` < ``b``)."""

    a: str
    b: str
    difference: float


class Differences(DocModel):
    """``debates/{d}/differences/L{l}``: the seed's dictionary of differences that formed layer
    ``l``'s clusters, written with the layer so a reader sees why the heads were grouped."""

    id: str
    layer: Positive
    agents: list[str]
    count: Positive
    """The cluster count (``ceil(C_prev / (numRounds + 1))``)."""
    pairs: list[Difference]


class Round(DocModel):
    """``debates/{d}/rounds/{clusterId}-R{i}`` (``-H`` for the head's opening statement)."""

    id: str
    cluster_id: str
    layer: Positive
    index: Count
    """0: openings (carried statements above layer 1); 1..numRounds: arguments;
    numRounds + 1: the head agent's opening statement."""
    kind: StatementKind
    agents: list[str]
    complete: bool = False
    blocked: dict[str, str] = {}
    """Agent → why its statement could not be made (a failed model call); a touch retries."""
    created_at: Timestamp | None = None


class Statement(DocModel):
    """``debates/{d}/statements/{roundId}-{agent}``."""

    id: str
    round_id: str
    cluster_id: str
    layer: Positive
    round: Count
    agent: str
    kind: StatementKind
    text: str
    response: dict[str, Any] = {}
    """The user's ``format_agent_response`` of the reply."""
    conclusion: str = ""
    prompt_tokens: Count = 0
    completion_tokens: Count = 0
    source: str = ""
    """A carried statement: the statement it copies."""
    created_at: Timestamp | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
