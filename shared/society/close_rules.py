"""The rule of a day's close, pure: the society-level steps between its shards' phases (a shard's
own phase is ``shared.society.rules``); ``functions.society.close`` runs them on triggers.

Each step reads only what the shards wrote about themselves (a few numbers, tallies and lists
per shard, never a member's state), so it is bounded by the number of shards:

- ``plan`` (after ``act``): each shard's first post, message and proposal number (the shards
  before it made the ones before: the same numbers as one pass in member order); the pool after
  the interventions on it and the work's share; the proposals that close today, decided;
- ``with_budgets`` (after ``need``, with an allocation law): what the pool gives each shard's
  members, the shards in member order, each taking what it lacks while the pool lasts;
- ``finish`` (after ``settle``): the proposals, infrastructure, the next day's context and the
  day's summary.

``resolve`` composes the phases in one process (any shard size: the same outcome).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from shared.models import DocModel
from shared.society import rules
from shared.society.models import (
    RESOURCES,
    ActionRecord,
    DayContext,
    DaySummary,
    DirectMessage,
    Event,
    Flow,
    Intervention,
    LawView,
    Member,
    Post,
    PostView,
    Proposal,
    ProposalView,
    Resources,
    SocietySettings,
    tidy,
)
from shared.society.rules import Delivery, Ids, Outcome, ShardInput, Spend

Phase = Literal["act", "need", "settle", "finish"]


def ranges(agents: int, size: int) -> list[tuple[int, int]]:
    """The shards' member ids, first and last: contiguous, so shard order is member order."""
    size = size or agents or 1
    return [(first, min(first + size - 1, agents)) for first in range(1, agents + 1, size)]


def shard_of(agent: int, size: int) -> int:
    return (agent - 1) // size


class ActDigest(DocModel):
    shard: int
    posts: int = 0
    messages: int = 0
    proposals: int = 0
    pool: Resources = Field(default_factory=Resources)
    tallies: dict[str, dict[str, int]] = {}


class NeedDigest(DocModel):
    shard: int
    lack: Resources = Field(default_factory=Resources)


class SettleDigest(DocModel):
    shard: int
    summary: DaySummary
    totals: Resources = Field(default_factory=Resources)
    members: int = 0
    active: int = 0
    acting: list[int] = []
    """Its members acting the next day (active), humans among them in ``humans``."""
    humans: list[int] = []
    posts: list[PostView] = []
    """Its last posts today (at most the context's), for the next day's context."""
    proposals: list[ProposalView] = []
    """The proposals its members made today."""
    pool_in: Resources = Field(default_factory=Resources)
    pool_out: Resources = Field(default_factory=Resources)
    applied: dict[str, float] = {}


class Plan(DocModel):
    shards: int
    last: int
    """The last member id the shards cover."""
    ids: list[Ids]
    """Each shard's first post, message and proposal number."""
    after: Ids
    """The next ones after today's."""
    pool: Resources
    """After the interventions on it and the work's share, before the safety net."""
    applied: dict[str, float] = {}
    """Interventions on the pool (or on no member), applied."""
    flow: dict[str, float] = {}
    tallies: dict[str, dict[str, int]] = {}
    outcomes: list[Outcome] = []
    """The proposals the day started with that close today."""
    net: bool = False
    """An allocation law is active: a ``need`` phase, then ``budgets``."""
    budgets: list[Resources] = []


def society_interventions(
    day: int, context: DayContext, interventions: Sequence[tuple[str, Intervention]], last: int
) -> tuple[Resources, dict[str, float], dict[str, float], list[Event]]:
    """Interventions that no shard applies: on the pool (agent 0) or on no member (beyond
    ``last``, the last member id the shards cover)."""
    mine = [(k, v) for k, v in interventions if not 1 <= v.agent_id <= last]
    pool = {r: context.pool.get(r) for r in RESOURCES}
    applied: dict[str, float] = {}
    flow: dict[str, float] = dict.fromkeys(RESOURCES, 0.0)
    events: list[Event] = []
    for iid, item in sorted(mine, key=lambda pair: pair[0]):
        n = len(events) + 1
        if item.agent_id != 0:
            applied[iid] = 0.0
            text = f"intervention {iid}: no agent #{item.agent_id}"
            events.append(rules.make_event(day, rules.INTERVENTIONS, 0, n, "intervention", text))
            continue
        amount = item.amount if item.amount >= 0 else -min(-item.amount, pool[item.resource])
        pool[item.resource] = tidy(pool[item.resource] + amount)
        flow[item.resource] = tidy(flow[item.resource] + amount)
        applied[iid] = tidy(amount)
        verb = "gave" if amount >= 0 else "took"
        text = f"the researcher {verb} {abs(amount):g} {item.resource} (the common pool)"
        events.append(
            rules.make_event(
                day,
                rules.INTERVENTIONS,
                0,
                n,
                "intervention",
                text,
                amount=amount,
                resource=item.resource,
            )
        )
    return Resources(**pool), applied, flow, events


def plan(
    day: int,
    settings: SocietySettings,
    context: DayContext,
    interventions: Sequence[tuple[str, Intervention]],
    acted: Sequence[ActDigest],
    last: int,
) -> Plan:
    pool, applied, flow, _ = society_interventions(day, context, interventions, last)
    ids, at = [], Ids(post=context.next_post_id, message=1, proposal=context.next_proposal_id)
    tallies = {str(p.id): dict.fromkeys(rules.VOTES, 0) for p in context.proposals}
    for digest in sorted(acted, key=lambda d: d.shard):
        ids.append(at)
        at = Ids(
            post=at.post + digest.posts,
            message=at.message + digest.messages,
            proposal=at.proposal + digest.proposals,
        )
        pool = pool.plus(digest.pool)
        for pid, counts in digest.tallies.items():
            for vote, n in counts.items():
                tallies[pid][vote] += n
    needed = settings.quorum * context.active
    outcomes = []
    for view in context.proposals:
        t = tallies[str(view.id)]
        view = view.model_copy(update=t)
        if rules.closes_today(view, day):
            passed = sum(t.values()) >= needed and t["yes"] > t["no"]
            outcomes.append(Outcome(view=view, passed=passed))
    net = any(law.proposal_type == "allocation" for law in context.laws)
    return Plan(
        shards=len(acted),
        last=last,
        ids=ids,
        after=at,
        pool=pool,
        applied=applied,
        flow=flow,
        tallies=tallies,
        outcomes=outcomes,
        net=net,
    )


def with_budgets(given: Plan, lacks: Sequence[NeedDigest]) -> Plan:
    """Each shard's share of the pool for its members' safety net, in member order."""
    left = {r: given.pool.get(r) for r in RESOURCES}
    budgets = []
    for digest in sorted(lacks, key=lambda d: d.shard):
        take = {r: tidy(min(digest.lack.get(r), left[r])) for r in RESOURCES}
        left = {r: tidy(left[r] - take[r]) for r in RESOURCES}
        budgets.append(Resources(**take))
    return given.model_copy(update={"budgets": budgets})


def budget(given: Plan, shard: int) -> Resources | None:
    return given.budgets[shard] if given.net else None


def digest_settled(shard: int, settings: SocietySettings, settled: rules.Settled) -> SettleDigest:
    members = settled.members
    totals = Resources()
    for m in members.values():
        totals = totals.plus(m.resources)
    acting = sorted(i for i, m in members.items() if m.status == "active")
    keep = settings.context_posts
    posts = settled.posts[-keep:] if keep else []
    return SettleDigest(
        shard=shard,
        summary=settled.summary,
        totals=totals,
        members=len(members),
        active=len(acting),
        acting=acting,
        humans=[i for i in acting if members[i].human],
        posts=[
            PostView(**p.model_dump(exclude={"content"}), content=p.content[: settings.post_chars])
            for p in posts
        ],
        proposals=settled.proposals,
        pool_in=settled.pool_in,
        pool_out=settled.pool_out,
        applied=settled.applied,
    )


@dataclasses.dataclass
class Final:
    context: DayContext
    summary: DaySummary
    proposals: list[Proposal]
    """Every proposal whose document changes today: open ones (tallies) and closed ones."""
    events: list[Event]
    interventions: dict[str, float]
    """Intervention id -> the amount applied (a take is capped by the stock)."""
    acting: list[int]
    humans: list[int]


def finish(
    day: int,
    settings: SocietySettings,
    context: DayContext,
    interventions: Sequence[tuple[str, Intervention]],
    given: Plan,
    settled: Sequence[SettleDigest],
    spend: Spend,
) -> Final:
    settled = sorted(settled, key=lambda d: d.shard)
    _, _, _, events = society_interventions(day, context, interventions, given.last)
    new = [v for d in settled for v in d.proposals]
    closing = _closing(day, given, new)
    laws, projects, closed = _close_proposals(day, context, closing, events)
    pool, built_now = _build(day, settings, _pool_after(given, settled), projects, events)
    still_open = _open_after(context, given, new, closing)
    nxt = _context(day, settings, context, settled, given).model_copy(
        update={
            "proposals": still_open,
            "laws": laws,
            "pool": pool,
            "built": context.built + len(built_now),
            "projects": projects,
        }
    )
    used = Resources(materials=tidy(settings.infrastructure_cost * len(built_now)))
    proposals = [Proposal(**v.model_dump(), status="open") for v in still_open]
    proposals += [
        c.model_copy(update={"built_day": day}) if c.id in built_now else c for c in closed
    ]
    acting, humans = _roster(settled)
    return Final(
        context=nxt,
        summary=_summary(day, settled, given, nxt, closing, used, spend),
        proposals=sorted(proposals, key=lambda p: p.id),
        events=events,
        interventions=_applied(given, settled),
        acting=acting,
        humans=humans,
    )


def _closing(day: int, given: Plan, new: list[ProposalView]) -> list[Outcome]:
    """The proposals that close today: those the day started with (decided by ``plan``), and
    new ones that close the day they were made (no votes yet: they fail)."""
    made_today = [Outcome(view=v, passed=False) for v in new if rules.closes_today(v, day)]
    return [*given.outcomes, *made_today]


def _pool_after(given: Plan, settled: Sequence[SettleDigest]) -> Resources:
    """The pool after the safety net's gifts."""
    pool = given.pool
    for digest in settled:
        pool = pool.plus(digest.pool_out, -1.0)
    return pool


def _open_after(
    context: DayContext, given: Plan, new: list[ProposalView], closing: list[Outcome]
) -> list[ProposalView]:
    closed_ids = {o.view.id for o in closing}
    tallied = [v.model_copy(update=given.tallies[str(v.id)]) for v in context.proposals]
    return sorted((v for v in [*tallied, *new] if v.id not in closed_ids), key=lambda v: v.id)


def _applied(given: Plan, settled: Sequence[SettleDigest]) -> dict[str, float]:
    applied = dict(given.applied)
    for digest in settled:
        applied.update(digest.applied)
    return applied


def _roster(settled: Sequence[SettleDigest]) -> tuple[list[int], list[int]]:
    """Who acts the next day (the active members), and the humans among them."""
    return [i for d in settled for i in d.acting], [i for d in settled for i in d.humans]


def _close_proposals(
    day: int, context: DayContext, closing: list[Outcome], events: list[Event]
) -> tuple[list[LawView], list[int], list[Proposal]]:
    """Today's closing proposals: the laws and the infrastructure waiting to be built after
    them, the proposals' closed documents, and an event each (``events`` grows)."""
    laws, projects = list(context.laws), list(context.projects)
    closed: list[Proposal] = []
    for outcome in closing:
        v = outcome.view
        status: Literal["passed", "failed"] = "passed" if outcome.passed else "failed"
        closed.append(Proposal(**v.model_dump(), status=status, closed_day=day))
        if outcome.passed:
            laws.append(
                LawView(id=v.id, title=v.title, proposal_type=v.proposal_type, passed_day=day)
            )
            if v.proposal_type == "infrastructure":
                projects.append(v.id)
        n = sum(1 for e in events if e.agent_id == v.author_id and e.kind.startswith("proposal_"))
        kind = f"proposal_{status}"
        events.append(
            rules.make_event(
                day, rules.PROPOSALS, v.author_id, n + 1, kind, outcome.text, proposal=v.id
            )
        )
    return laws, projects, closed


def _build(
    day: int,
    settings: SocietySettings,
    pool: Resources,
    projects: list[int],
    events: list[Event],
) -> tuple[Resources, list[int]]:
    """Passed infrastructure, in order, while the pool holds its materials (``projects``
    shrinks, ``events`` grows): the pool after, and what was built."""
    built_now: list[int] = []
    materials = pool.get("materials")
    while projects and materials >= settings.infrastructure_cost:
        pid = projects.pop(0)
        materials = tidy(materials - settings.infrastructure_cost)
        built_now.append(pid)
        text = f"infrastructure #{pid} built: work yields +{settings.infrastructure_bonus:g}"
        events.append(rules.make_event(day, rules.BUILD, 0, len(built_now), "built", text))
    return pool.model_copy(update={"materials": materials}), built_now


def _context(
    day: int,
    settings: SocietySettings,
    context: DayContext,
    settled: Sequence[SettleDigest],
    given: Plan,
) -> DayContext:
    """The next day's context from the shards' parts (the caller adds the society's)."""
    totals, active, members = Resources(), 0, 0
    for digest in settled:
        totals = totals.plus(digest.totals)
        active += digest.active
        members += digest.members
    posts = [*context.posts, *(p for d in settled for p in d.posts)]
    keep = settings.context_posts
    return DayContext(
        day=day + 1,
        posts=posts[-keep:] if keep else [],
        totals=totals,
        land=context.land,
        active=active,
        dormant=members - active,
        agents=members,
        next_post_id=given.after.post,
        next_proposal_id=given.after.proposal,
    )


def _summary(
    day: int,
    settled: Sequence[SettleDigest],
    given: Plan,
    context: DayContext,
    closing: list[Outcome],
    built: Resources,
    spend: Spend,
) -> DaySummary:
    """The shards' parts of the summary, in member order, and the society's."""
    out = DaySummary(day=day)
    flow = Flow(interventions=dict(given.flow), consumption=built)
    for digest in settled:
        part = digest.summary
        for kind, n in part.actions.items():
            out.actions[kind] = out.actions.get(kind, 0) + n
        out.invalid += part.invalid
        out.rejected += part.rejected
        out.no_action += part.no_action
        out.went_dormant += part.went_dormant
        out.woke += part.woke
        out.proposals_opened += part.proposals_opened
        flow.production = flow.production.plus(part.flow.production)
        flow.consumption = flow.consumption.plus(part.flow.consumption)
        for r in RESOURCES:
            flow.interventions[r] = tidy(
                flow.interventions.get(r, 0.0) + part.flow.interventions.get(r, 0.0)
            )
    out.proposals_passed = [o.view.id for o in closing if o.passed]
    out.proposals_failed = [o.view.id for o in closing if not o.passed]
    return out.model_copy(
        update={
            "flow": flow,
            "totals": context.totals,
            "pool": context.pool,
            "active": context.active,
            "dormant": context.dormant,
            "built": context.built,
            **dataclasses.asdict(spend),
        }
    )


@dataclasses.dataclass
class DayInput:
    day: int
    settings: SocietySettings
    members: dict[int, Member]
    context: DayContext
    acting: list[int]
    actions: list[ActionRecord]
    interventions: list[tuple[str, Intervention]] = dataclasses.field(default_factory=list)
    spend: Spend | None = None
    """Counted as the turns went (``days/{d}/tally``); None: the actions' own counts."""


@dataclasses.dataclass
class DayOutcome:
    members: dict[int, Member]
    """Every member's state at the start of the next day."""
    context: DayContext
    posts: list[Post]
    messages: list[DirectMessage]
    proposals: list[Proposal]
    events: list[Event]
    summary: DaySummary
    interventions: dict[str, float]


def split(given: DayInput, size: int) -> list[ShardInput]:
    """The day's input cut into shards of ``size`` members."""
    out = []
    for first, last in ranges(_last_id(given), size):

        def mine(agent: int, first: int = first, last: int = last) -> bool:
            return first <= agent <= last

        out.append(
            ShardInput(
                day=given.day,
                settings=given.settings,
                context=given.context,
                members={i: m for i, m in given.members.items() if mine(i)},
                acting=[i for i in given.acting if mine(i)],
                actions=[a for a in given.actions if mine(a.agent_id)],
                interventions=[(k, v) for k, v in given.interventions if mine(v.agent_id)],
            )
        )
    return out


def _last_id(given: DayInput) -> int:
    return max([given.context.agents, *given.members])


def act_digest(shard: int, acted: rules.Acted) -> ActDigest:
    return ActDigest(
        shard=shard,
        posts=acted.posts,
        messages=acted.messages,
        proposals=acted.proposals,
        pool=acted.pool,
        tallies=acted.tallies,
    )


def route(outbox: list[Delivery], size: int) -> dict[int, list[Delivery]]:
    """Deliveries by the shard of the member they are for."""
    by_shard: dict[int, list[Delivery]] = {}
    for d in outbox:
        by_shard.setdefault(shard_of(d.to, size), []).append(d)
    return by_shard


def resolve(given: DayInput, shard_size: int = 0) -> DayOutcome:
    """The day in one process, its shards one after the other: what the sharded close writes."""
    size = shard_size or _last_id(given)
    parts = split(given, size)
    acted = [rules.act(part) for part in parts]
    digests = [act_digest(k, a) for k, a in enumerate(acted)]
    the_plan = plan(
        given.day, given.settings, given.context, given.interventions, digests, _last_id(given)
    )
    routed = route([d for a in acted for d in a.outbox], size)
    inboxes = [routed.get(k, []) for k in range(len(parts))]
    if the_plan.net:
        the_plan = with_budgets(the_plan, _needs(parts, the_plan, inboxes))
    settled = [
        rules.settle(part, the_plan.ids[k], inboxes[k], budget(the_plan, k), the_plan.outcomes)
        for k, part in enumerate(parts)
    ]
    final = finish(
        given.day,
        given.settings,
        given.context,
        given.interventions,
        the_plan,
        [digest_settled(k, given.settings, s) for k, s in enumerate(settled)],
        given.spend or _spend(given.actions),
    )
    return _outcome(settled, final)


def _needs(parts: list[ShardInput], given: Plan, inboxes: list[list[Delivery]]) -> list[NeedDigest]:
    return [
        NeedDigest(shard=k, lack=rules.need(part, given.ids[k], inboxes[k]))
        for k, part in enumerate(parts)
    ]


def _outcome(settled: list[rules.Settled], final: Final) -> DayOutcome:
    events = [*final.events, *(e for s in settled for e in s.events)]
    return DayOutcome(
        members={i: m for s in settled for i, m in s.members.items()},
        context=final.context,
        posts=[p for s in settled for p in s.posts],
        messages=[m for s in settled for m in s.messages],
        proposals=final.proposals,
        events=sorted(events, key=lambda e: e.id),
        summary=final.summary,
        interventions=final.interventions,
    )


def _spend(actions: list[ActionRecord]) -> Spend:
    return Spend(
        model_calls=sum(a.model_calls for a in actions),
        prompt_tokens=sum(a.prompt_tokens for a in actions),
        completion_tokens=sum(a.completion_tokens for a in actions),
    )


def first_day(settings: SocietySettings, members: dict[int, Member]) -> DayContext:
    """The context of day 1."""
    totals = Resources()
    for m in members.values():
        totals = totals.plus(m.resources)
    return DayContext(
        day=1,
        totals=totals,
        pool=settings.start_pool,
        land=tidy(sum(m.land for m in members.values())),
        active=len(members),
        agents=len(members),
    )
