"""The society's documents as pydantic models (camelCase in Firestore, like every document).

Settings are fields of the society document with documented defaults (README, "The agent
society"); a console edit that breaks one is a DocumentError naming the field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from shared.models import DocModel, Timestamp
from shared.models.participant import AgentModelSettings, ApiType

Resource = Literal["food", "energy", "materials"]
RESOURCES: tuple[Resource, ...] = ("food", "energy", "materials")
Personality = Literal["efficiency", "equality", "freedom", "stability", "neutral"]
PERSONALITIES: tuple[Personality, ...] = (
    "efficiency",
    "equality",
    "freedom",
    "stability",
    "neutral",
)
ProposalType = Literal["law", "allocation", "rule", "infrastructure", "other"]
DayStatus = Literal["ready", "open", "closing", "closed"]
Amount = float
"""Resources are real numbers (a trade may move 2.5 food); kept to 6 decimals."""


def _zeros(keys: tuple[str, ...], value: float) -> dict[str, float]:
    return dict.fromkeys(keys, value)


def tidy(value: float) -> float:
    """Round away float noise so sums compare exactly and states hash the same."""
    return round(value + 0.0, 6)


class Resources(DocModel):
    food: Amount = Field(default=0.0, ge=0)
    energy: Amount = Field(default=0.0, ge=0)
    materials: Amount = Field(default=0.0, ge=0)

    def get(self, resource: Resource) -> float:
        return float(getattr(self, resource))

    def plus(self, other: Resources, sign: float = 1.0) -> Resources:
        return Resources(**{r: tidy(self.get(r) + sign * other.get(r)) for r in RESOURCES})


class SocietySettings(DocModel):
    """Every rule the seed leaves open, as a setting (README lists them with their defaults)."""

    agents: int = Field(default=100, ge=1, le=10_000)
    days: int = Field(default=10, ge=1, le=100_000)
    """The society runs until this day has closed (raise it to go on)."""
    actions_per_day: int = Field(default=1, ge=1, le=5)
    seed: int = 0
    """Personalities (seeded shuffle) and the scripted model's play."""
    personality_shares: dict[str, float] = Field(default_factory=lambda: _zeros(PERSONALITIES, 0.2))
    humans: list[int] = []
    """Agent ids played by humans: the backend waits for their action documents."""
    human_players: dict[str, str] = {}
    """Member id -> the Firebase Auth uid of the person who plays it: firestore.rules let that
    person's own client read what the member's prompt would show and write its actions (the
    console and the backend need no entry)."""
    api_type: ApiType = ApiType.SCRIPTED
    model_name: str = ""
    start_resources: Resources = Field(
        default_factory=lambda: Resources(food=10, energy=10, materials=5)
    )
    start_pool: Resources = Field(default_factory=Resources)
    land_per_agent: float = Field(default=1.0, ge=0)
    """Land is a fixed holding; farming yields ``farm_yield`` food per hour per unit of land."""
    farm_yield: float = Field(default=1.0, ge=0)
    generate_yield: float = Field(default=1.0, ge=0)
    """Energy per hour of ``generate``."""
    gather_yield: float = Field(default=0.5, ge=0)
    """Materials per hour of ``gather``."""
    daily_food: float = Field(default=1.0, ge=0)
    daily_energy: float = Field(default=1.0, ge=0)
    pool_share: float = Field(default=0.1, ge=0, le=1)
    """Share of every work yield that goes to the common pool."""
    proposal_days: int = Field(default=3, ge=1, le=365)
    """A proposal made on day d closes at the end of day d + proposal_days - 1."""
    quorum: float = Field(default=0.25, ge=0, le=1)
    """A proposal passes when votes cast >= quorum x active agents and yes > no."""
    infrastructure_cost: float = Field(default=20.0, ge=0)
    """Materials a passed infrastructure proposal takes from the pool to be built."""
    infrastructure_bonus: float = Field(default=1.0, ge=0)
    """Extra units every work action yields per infrastructure built."""
    day_deadline_s: float = Field(default=300.0, gt=0)
    """A day closes when every acting member has acted, or this long after it opened."""
    redrive_s: float = Field(default=30.0, gt=0)
    """From this long after the day opened, the watchdog re-publishes the turns of members with
    no action and no live lease (a lost publish, a dead or failed turn): about one lease, so a
    turn still queued behind a busy day's others is not published twice."""
    context_posts: int = Field(default=20, ge=0, le=100)
    post_chars: int = Field(default=300, ge=20, le=2000)
    """Forum posts are cut to this length in the prompt."""
    recent_events: int = Field(default=10, ge=0, le=50)
    max_retries: int = Field(default=2, ge=0, le=5)
    """Corrective re-prompts for an invalid action before the agent idles that day."""
    max_tokens: int = Field(default=500, ge=1, le=32_000)
    """The seed's ``max_tokens``: the most tokens a member's reply may take."""
    temperature: float = Field(default=0.7, ge=0, le=2)
    """The seed's sampling temperature (OpenAI's range)."""

    @model_validator(mode="after")
    def _check(self) -> SocietySettings:
        unknown = set(self.personality_shares) - set(PERSONALITIES)
        if unknown:
            raise ValueError(f"personalityShares: unknown personality {sorted(unknown)}")
        bad = [h for h in self.humans if not 1 <= h <= self.agents]
        if bad:
            raise ValueError(f"humans: agent ids must be within 1..{self.agents} (got {bad})")
        unplayed = sorted(k for k in self.human_players if k not in {str(h) for h in self.humans})
        if unplayed:
            raise ValueError(f"humanPlayers: members {unplayed} are not in humans {self.humans}")
        return self


class SocietyFailure(DocModel):
    """Why a society stopped (``status: failed``): the unit of work that ended, as its error
    record under ``societies/{s}/errors`` says."""

    document: str
    field: str = ""
    reason: str
    attempts: int = 0
    day: int = 0
    at: Timestamp | None = None


class Society(DocModel):
    id: str
    name: str = ""
    status: Literal["running", "paused", "failed"] = "running"
    """``failed``: a day's close ended after its attempts (``failure``); nothing is re-driven
    until the researcher sets it ``running`` again."""
    settings: SocietySettings = Field(default_factory=SocietySettings)
    created_at: Timestamp | None = None
    failure: SocietyFailure | None = None


class Member(DocModel):
    """A member's state: ``members/{id}`` now, ``days/{d}/members/{id}`` at the start of day d."""

    agent_id: int
    day: int
    display_name: str
    personality: Personality
    human: bool = False
    status: Literal["active", "dormant"] = "active"
    resources: Resources
    land: float = 0.0
    model_settings: AgentModelSettings = Field(default_factory=AgentModelSettings)
    recent_events: list[str] = []
    """What affected it lately (trades, messages, outcomes), newest last, capped."""
    votes: dict[str, str] = {}
    """Its votes on the open proposals (proposal id -> vote): they live with the voter, so the
    close reads them shard by shard and no document holds every member's vote."""


class PostView(DocModel):
    id: int
    day: int
    slot: int = 1
    """The action slot of its day it was posted in: the time the prompt shows."""
    author_id: int
    author_name: str
    content: str
    parent_id: int | None = None


class ProposalView(DocModel):
    id: int
    title: str
    description: str = ""
    proposal_type: ProposalType
    author_id: int
    created_day: int
    closes_day: int
    yes: int = 0
    no: int = 0
    abstain: int = 0


class LawView(DocModel):
    id: int
    title: str
    proposal_type: ProposalType
    passed_day: int


class DayContext(DocModel):
    """What every agent sees on a day (``days/{d}/state/context``): bounded in size."""

    day: int
    posts: list[PostView] = []
    proposals: list[ProposalView] = []
    laws: list[LawView] = []
    totals: Resources = Field(default_factory=Resources)
    pool: Resources = Field(default_factory=Resources)
    land: float = 0.0
    active: int = 0
    dormant: int = 0
    agents: int = 0
    built: int = 0
    projects: list[int] = []
    """Passed infrastructure proposals waiting for materials, in order."""
    next_post_id: int = 1
    next_proposal_id: int = 1


class Day(DocModel):
    day: int
    status: DayStatus = "ready"
    acting: list[int] = []
    """Members with actions expected today (active ones, humans included)."""
    humans: list[int] = []
    settings: SocietySettings | None = None
    """The society's settings as the day opened."""
    opened_at: Timestamp | None = None
    deadline: Timestamp | None = None
    action_ids: list[str] = []
    """Before sharded closes: the actions the close resolved (now each shard's ``fix`` record)."""
    intervention_ids: list[str] = []
    phase: str = ""
    """While ``closing``: the close's step (``act``, ``need``, ``settle``, ``finish``)."""
    shard_size: int = 0
    """Members per shard of this day's close (fixed when it starts)."""
    closing_at: Timestamp | None = None
    """When its close started."""
    phase_at: Timestamp | None = None
    """When the close's current phase started: the watchdog re-publishes its shards from
    ``redriveS`` after (a shard merely queued behind a large day's other messages is not
    published again every tick)."""
    shards: int = 0
    """Shards of this day's close: ids 1..size, size+1..2 size, ... up to the day's members."""
    closed_at: Timestamp | None = None

    @property
    def expected(self) -> int:
        per_day = self.settings.actions_per_day if self.settings else 1
        return len(self.acting) * per_day


class ActionRecord(DocModel):
    """``days/{d}/actions/{agent}-{slot}``: one action, as the model (or a human) chose it."""

    agent_id: int
    slot: int = 1
    day: int
    action: dict[str, Any] = {}
    source: Literal["model", "human", "fallback"] = "human"
    invalid_reason: str = ""
    """Set when the model gave no valid action after its re-prompts, or the turn ended without
    one (its attempts spent): the agent idles, with this reason in an ``invalid_action`` event."""
    from_text: bool = False
    """The reply had no JSON in it: its text is the member's forum post (seed 003's rule),
    recorded as a ``text_reply`` event."""
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    created_at: Timestamp | None = None


class Intervention(DocModel):
    """Give (amount > 0) or take (< 0) resources: to an agent, or to the pool (agentId 0)."""

    agent_id: int = Field(ge=0)
    resource: Resource
    amount: float
    note: str = ""
    created_at: Timestamp | None = None
    applied_day: int | None = None
    applied_amount: float | None = None


class Post(PostView):
    """``posts/{id}``: a forum post; a day's context shows it as its ``PostView`` (the same
    fields, the content cut to ``postChars``)."""


class DirectMessage(DocModel):
    id: str
    day: int
    sender_id: int
    recipient_id: int
    content: str


class Proposal(DocModel):
    id: int
    title: str
    description: str
    proposal_type: ProposalType
    author_id: int
    created_day: int
    closes_day: int
    status: Literal["open", "passed", "failed"] = "open"
    yes: int = 0
    no: int = 0
    abstain: int = 0
    closed_day: int | None = None
    built_day: int | None = None


class Event(DocModel):
    id: str
    day: int
    seq: int
    kind: str
    agent_id: int = 0
    """The member it affects (0: the society as a whole)."""
    other_id: int = 0
    description: str
    data: dict[str, Any] = {}


class Flow(DocModel):
    production: Resources = Field(default_factory=Resources)
    consumption: Resources = Field(default_factory=Resources)
    interventions: dict[str, float] = Field(default_factory=lambda: _zeros(RESOURCES, 0.0))
    """Net given (+) or taken (-) by interventions, per resource."""


class DaySummary(DocModel):
    """``summaries/{d}``: what happened on a day, for the researcher and the export."""

    day: int
    actions: dict[str, int] = {}
    invalid: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    no_action: list[int] = []
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    flow: Flow = Field(default_factory=Flow)
    totals: Resources = Field(default_factory=Resources)
    pool: Resources = Field(default_factory=Resources)
    active: int = 0
    dormant: int = 0
    went_dormant: list[int] = []
    woke: list[int] = []
    proposals_opened: list[int] = []
    proposals_passed: list[int] = []
    proposals_failed: list[int] = []
    built: int = 0
    closed_at: datetime | None = None
