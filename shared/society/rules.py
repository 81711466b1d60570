"""One day of the society, resolved: a pure function of the day's start and its actions.

The close of a day calls ``resolve``: the outcome does not depend on the order in which actions
arrived (they are taken in canonical order: agent id, then slot), and the same inputs give the
same outcome, so a close re-run after a crash writes the same documents again.

Order within a day: interventions, the actions, the common pool's safety net (when an
allocation law is active), daily consumption (dormancy and waking), proposals that close today,
infrastructure built from the pool's materials.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Literal

from shared.society.actions import (
    Action,
    CreateProposalAction,
    DirectMessageAction,
    ForumPostAction,
    ForumReplyAction,
    SetNameAction,
    TradeAction,
    VoteAction,
    WorkAction,
    parse_action,
)
from shared.society.models import (
    RESOURCES,
    ActionRecord,
    DayContext,
    DaySummary,
    DayVotes,
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
    Resource,
    Resources,
    SocietySettings,
    tidy,
)
from shared.stages.base import AnswerValidationError

WORK_RESOURCE: dict[str, Resource] = {"farm": "food", "generate": "energy", "gather": "materials"}
EVENT_CHARS = 240


class Rejected(Exception):
    """An action that cannot be carried out (nothing changes); the reason goes in an event."""


@dataclasses.dataclass(frozen=True)
class Spend:
    """What a day's turns cost: every model attempt (accepted, corrective, rejected, provider
    retries, attempts of turns that failed) and the tokens the provider reported."""

    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclasses.dataclass
class DayInput:
    day: int
    settings: SocietySettings
    members: dict[int, Member]
    context: DayContext
    votes: DayVotes
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
    votes: DayVotes
    posts: list[Post]
    messages: list[DirectMessage]
    proposals: list[Proposal]
    """New proposals and every one whose tally or status changed today."""
    events: list[Event]
    summary: DaySummary
    interventions: dict[str, float]
    """Intervention id -> the amount applied (a take is capped by the stock)."""


class _Day:
    def __init__(self, given: DayInput) -> None:
        self.given = given
        self.s = given.settings
        self.day = given.day
        ctx = given.context
        self.res = {i: {r: m.resources.get(r) for r in RESOURCES} for i, m in given.members.items()}
        self.names = {i: m.display_name for i, m in given.members.items()}
        self.status = {i: m.status for i, m in given.members.items()}
        self.pool = {r: ctx.pool.get(r) for r in RESOURCES}
        self.events: list[Event] = []
        self.recent: dict[int, list[str]] = {
            i: list(m.recent_events) for i, m in given.members.items()
        }
        self.posts: list[Post] = []
        self.known_posts = {p.id: p.author_id for p in ctx.posts}
        self.next_post = ctx.next_post_id
        self.slot = 1  # the action slot being applied: a post's time within its day
        self.messages: list[DirectMessage] = []
        self.open = {p.id: p for p in ctx.proposals}
        self.new_proposals: list[int] = []
        self.next_proposal = ctx.next_proposal_id
        self.votes = {pid: dict(v) for pid, v in given.votes.votes.items()}
        self.laws = list(ctx.laws)
        self.projects = list(ctx.projects)
        self.built = ctx.built
        self.flow = Flow()
        self.summary = DaySummary(day=self.day)
        self.closed: list[Proposal] = []
        self.applied: dict[str, float] = {}

    # --- events -----------------------------------------------------------------------------

    def event(self, kind: str, agent: int, text: str, other: int = 0, **data: Any) -> None:
        seq = len(self.events) + 1
        self.events.append(
            Event(
                id=f"{self.day:05d}-{seq:05d}",
                day=self.day,
                seq=seq,
                kind=kind,
                agent_id=agent,
                other_id=other,
                description=text[:EVENT_CHARS],
                data=data,
            )
        )

    def tell(self, agent: int, text: str) -> None:
        """A recent event for the member's next prompts."""
        if agent in self.recent:
            self.recent[agent].append(f"Day {self.day}: {text}"[:EVENT_CHARS])

    def name(self, agent: int) -> str:
        return self.names.get(agent, f"Agent #{agent}")

    # --- interventions ----------------------------------------------------------------------

    def intervene(self, iid: str, item: Intervention) -> None:
        store = self.pool if item.agent_id == 0 else self.res.get(item.agent_id)
        if store is None:
            self.applied[iid] = 0.0
            self.event("intervention", 0, f"intervention {iid}: no agent #{item.agent_id}")
            return
        amount = item.amount if item.amount >= 0 else -min(-item.amount, store[item.resource])
        store[item.resource] = tidy(store[item.resource] + amount)
        self.flow.interventions[item.resource] = tidy(
            self.flow.interventions[item.resource] + amount
        )
        self.applied[iid] = tidy(amount)
        whom = "the common pool" if item.agent_id == 0 else f"Agent #{item.agent_id}"
        verb = "gave" if amount >= 0 else "took"
        text = f"the researcher {verb} {abs(amount):g} {item.resource} ({whom})"
        self.event("intervention", item.agent_id, text, amount=amount, resource=item.resource)
        self.tell(item.agent_id, text)

    # --- actions ----------------------------------------------------------------------------

    def act(self, record: ActionRecord) -> None:
        agent = record.agent_id
        if agent not in self.given.acting or record.slot > self.s.actions_per_day:
            why = "not acting today" if agent not in self.given.acting else "over actions per day"
            self.reject(agent, record.action.get("action", "?"), why)
            return
        if record.invalid_reason:
            self.invalid(agent, record.invalid_reason)
            return
        try:
            action = parse_action(record.action, self.s.agents)
        except AnswerValidationError as error:
            self.invalid(agent, str(error))
            return
        self.summary.actions[action.action] = self.summary.actions.get(action.action, 0) + 1
        if record.from_text:
            self.event("text_reply", agent, "no JSON in the reply: its text was posted")
        self.slot = record.slot
        try:
            self.apply(agent, action)
        except Rejected as why:
            self.reject(agent, action.action, str(why))

    def invalid(self, agent: int, reason: str) -> None:
        self.summary.invalid.append({"agentId": agent, "reason": reason[:500]})
        self.event("invalid_action", agent, f"action rejected: {reason}", reason=reason[:500])
        self.tell(agent, f"your action was invalid ({reason[:120]}); you idled")

    def reject(self, agent: int, kind: str, reason: str) -> None:
        self.summary.rejected.append({"agentId": agent, "action": kind, "reason": reason})
        self.event("rejected", agent, f"{kind} rejected: {reason}", action=kind, reason=reason)
        self.tell(agent, f"your {kind} was rejected: {reason}")

    def apply(self, agent: int, action: Action) -> None:
        handlers = {
            ForumPostAction: self.post,
            ForumReplyAction: self.post,
            DirectMessageAction: self.message,
            CreateProposalAction: self.propose,
            VoteAction: self.vote,
            WorkAction: self.work,
            TradeAction: self.trade,
            SetNameAction: self.set_name,
        }
        handler = handlers.get(type(action))
        if handler is None:  # idle
            self.event("idle", agent, f"{self.name(agent)} idled")
            return
        handler(agent, action)  # type: ignore[operator]

    def post(self, agent: int, action: ForumPostAction | ForumReplyAction) -> None:
        parent = action.parent_message_id if isinstance(action, ForumReplyAction) else None
        if parent is not None and not 1 <= parent < self.next_post:
            raise Rejected(f"no forum post #{parent}")
        post = Post(
            id=self.next_post,
            day=self.day,
            slot=self.slot,
            author_id=agent,
            author_name=self.name(agent),
            content=action.content,
            parent_id=parent,
        )
        self.next_post += 1
        self.posts.append(post)
        self.known_posts[post.id] = agent
        self.event(action.action, agent, f"{self.name(agent)} posted #{post.id}", post=post.id)
        author = self.known_posts.get(parent or 0)
        if author and author != agent:
            self.tell(author, f"{self.name(agent)} replied to your post #{parent}")

    def message(self, agent: int, action: DirectMessageAction) -> None:
        to = action.recipient_agent_id
        mid = f"{self.day:05d}-{len(self.messages) + 1:05d}"
        self.messages.append(
            DirectMessage(
                id=mid, day=self.day, sender_id=agent, recipient_id=to, content=action.content
            )
        )
        self.event("direct_message", agent, f"{self.name(agent)} messaged #{to}", other=to)
        self.tell(to, f"{self.name(agent)} (#{agent}) told you: {action.content[:100]}")

    def propose(self, agent: int, action: CreateProposalAction) -> None:
        pid = self.next_proposal
        self.next_proposal += 1
        self.open[pid] = ProposalView(
            id=pid,
            title=action.title,
            description=action.description[:1000],
            proposal_type=action.proposal_type,
            author_id=agent,
            created_day=self.day,
            closes_day=self.day + self.s.proposal_days - 1,
        )
        self.new_proposals.append(pid)
        self.summary.proposals_opened.append(pid)
        self.event("create_proposal", agent, f"{self.name(agent)} proposed #{pid}: {action.title}")

    def vote(self, agent: int, action: VoteAction) -> None:
        if action.proposal_id not in self.open:
            raise Rejected(f"proposal #{action.proposal_id} is unknown or closed")
        self.votes.setdefault(str(action.proposal_id), {})[str(agent)] = action.vote
        text = f"{self.name(agent)} voted {action.vote} on #{action.proposal_id}"
        self.event("vote", agent, text, proposal=action.proposal_id, vote=action.vote)

    def work(self, agent: int, action: WorkAction) -> None:
        resource = WORK_RESOURCE[action.work_type]
        rate = {
            "farm": self.s.farm_yield * self.given.members[agent].land,
            "generate": self.s.generate_yield,
            "gather": self.s.gather_yield,
        }[action.work_type]
        made = tidy(action.hours * rate + self.s.infrastructure_bonus * self.built)
        to_pool = tidy(made * self.s.pool_share)
        self.res[agent][resource] = tidy(self.res[agent][resource] + made - to_pool)
        self.pool[resource] = tidy(self.pool[resource] + to_pool)
        self.produce(resource, made)
        what = f"({action.work_type}, {action.hours} h): +{made:g} {resource}"
        text = f"{self.name(agent)} worked {what}"
        self.event("work", agent, text, resource=resource, amount=made, pool=to_pool)

    def produce(self, resource: Resource, amount: float) -> None:
        p = self.flow.production
        self.flow.production = p.model_copy(update={resource: tidy(p.get(resource) + amount)})

    def consume(self, resource: Resource, amount: float) -> None:
        c = self.flow.consumption
        self.flow.consumption = c.model_copy(update={resource: tidy(c.get(resource) + amount)})

    def trade(self, agent: int, action: TradeAction) -> None:
        to, kind, amount = action.recipient_agent_id, action.resource_type, tidy(action.amount)
        if to == agent:
            raise Rejected("cannot trade with yourself")
        if to not in self.res:
            raise Rejected(f"no agent #{to}")
        have = self.res[agent][kind]
        if amount > have:
            raise Rejected(f"has only {have:g} {kind}, cannot give {amount:g}")
        self.res[agent][kind] = tidy(have - amount)
        self.res[to][kind] = tidy(self.res[to][kind] + amount)
        text = f"{self.name(agent)} gave {amount:g} {kind} to #{to}"
        self.event("trade", agent, text, other=to, resource=kind, amount=amount)
        self.tell(to, f"{self.name(agent)} (#{agent}) gave you {amount:g} {kind}")

    def set_name(self, agent: int, action: SetNameAction) -> None:
        name = action.display_name.strip()
        if not name:
            raise Rejected("the name is blank")
        old, self.names[agent] = self.names[agent], name
        self.event("set_name", agent, f"{old} is now called {name}", name=name)

    # --- end of day -------------------------------------------------------------------------

    def safety_net(self) -> None:
        """With an allocation law active, the pool covers what members lack for the day."""
        if not any(law.proposal_type == "allocation" for law in self.laws):
            return
        needs: dict[Resource, float] = {"food": self.s.daily_food, "energy": self.s.daily_energy}
        for agent in sorted(self.res):
            for kind, need in needs.items():
                lack = tidy(need - self.res[agent][kind])
                give = tidy(min(max(lack, 0.0), self.pool[kind]))
                if give <= 0:
                    continue
                self.pool[kind] = tidy(self.pool[kind] - give)
                self.res[agent][kind] = tidy(self.res[agent][kind] + give)
                text = f"the common pool gave {give:g} {kind} to #{agent}"
                self.event("pool_support", agent, text, resource=kind, amount=give)
                self.tell(agent, text)

    def upkeep(self) -> None:
        food, energy = self.s.daily_food, self.s.daily_energy
        for agent in sorted(self.res):
            r = self.res[agent]
            can_pay = r["food"] >= food and r["energy"] >= energy
            if self.status[agent] == "dormant":
                if can_pay:
                    self.status[agent] = "active"
                    self.summary.woke.append(agent)
                    self.event("woke", agent, f"{self.name(agent)} woke up")
                    self.tell(agent, "you have resources again and woke up")
                continue
            if not can_pay:
                self.status[agent] = "dormant"
                self.summary.went_dormant.append(agent)
                self.event("dormant", agent, f"{self.name(agent)} went dormant")
                self.tell(agent, "you could not pay your daily food and energy: dormant")
                continue
            r["food"], r["energy"] = tidy(r["food"] - food), tidy(r["energy"] - energy)
            self.consume("food", food)
            self.consume("energy", energy)

    def close_proposals(self) -> None:
        needed = self.s.quorum * self.given.context.active
        for pid in sorted(self.open):
            view = self.open[pid]
            tally = Counter(self.votes.get(str(pid), {}).values())
            view = view.model_copy(
                update={"yes": tally["yes"], "no": tally["no"], "abstain": tally["abstain"]}
            )
            self.open[pid] = view
            if view.closes_day > self.day:
                continue
            passed = sum(tally.values()) >= needed and tally["yes"] > tally["no"]
            self.finish(view, passed)

    def finish(self, view: ProposalView, passed: bool) -> None:
        del self.open[view.id]
        self.votes.pop(str(view.id), None)
        status: Literal["passed", "failed"] = "passed" if passed else "failed"
        self.closed.append(Proposal(**view.model_dump(), status=status, closed_day=self.day))
        (self.summary.proposals_passed if passed else self.summary.proposals_failed).append(view.id)
        if passed:
            self.laws.append(
                LawView(
                    id=view.id,
                    title=view.title,
                    proposal_type=view.proposal_type,
                    passed_day=self.day,
                )
            )
            if view.proposal_type == "infrastructure":
                self.projects.append(view.id)
        text = f"proposal #{view.id} ({view.title[:60]}) {status}: {view.yes} yes, {view.no} no"
        self.event(f"proposal_{status}", view.author_id, text, proposal=view.id)
        self.tell(view.author_id, f"your {text}")

    def build(self) -> list[int]:
        done: list[int] = []
        cost = self.s.infrastructure_cost
        while self.projects and self.pool["materials"] >= cost:
            pid = self.projects.pop(0)
            self.pool["materials"] = tidy(self.pool["materials"] - cost)
            self.consume("materials", cost)
            self.built += 1
            done.append(pid)
            self.event(
                "built",
                0,
                f"infrastructure #{pid} built: work yields +{self.s.infrastructure_bonus:g}",
            )
        return done


def resolve(given: DayInput) -> DayOutcome:
    day = _Day(given)
    for iid, item in sorted(given.interventions, key=lambda pair: pair[0]):
        day.intervene(iid, item)
    for record in sorted(given.actions, key=lambda a: (a.agent_id, a.slot)):
        day.act(record)
    day.summary.no_action = sorted(set(given.acting) - {a.agent_id for a in given.actions})
    day.safety_net()
    day.upkeep()
    day.close_proposals()
    built = day.build()
    return _outcome(day, given, built)


def _outcome(day: _Day, given: DayInput, built: list[int]) -> DayOutcome:
    s = given.settings
    members = {
        i: m.model_copy(
            update={
                "day": day.day + 1,
                "display_name": day.names[i],
                "status": day.status[i],
                "resources": Resources(**day.res[i]),
                "recent_events": day.recent[i][-s.recent_events :] if s.recent_events else [],
            }
        )
        for i, m in given.members.items()
    }
    pool = Resources(**day.pool)
    totals = Resources()
    for m in members.values():
        totals = totals.plus(m.resources)
    posts = [
        *given.context.posts,
        *(
            PostView(**p.model_dump(exclude={"content"}), content=p.content[: s.post_chars])
            for p in day.posts
        ),
    ]
    active = sum(1 for m in members.values() if m.status == "active")
    context = DayContext(
        day=day.day + 1,
        posts=posts[-s.context_posts :] if s.context_posts else [],
        proposals=[day.open[p] for p in sorted(day.open)],
        laws=day.laws,
        totals=totals,
        pool=pool,
        land=given.context.land,
        active=active,
        dormant=len(members) - active,
        agents=len(members),
        built=day.built,
        projects=day.projects,
        next_post_id=day.next_post,
        next_proposal_id=day.next_proposal,
    )
    summary = day.summary.model_copy(
        update={
            "flow": day.flow,
            "totals": totals,
            "pool": pool,
            "active": active,
            "dormant": len(members) - active,
            "built": day.built,
            **dataclasses.asdict(given.spend or _actions_spend(given.actions)),
        }
    )
    return DayOutcome(
        members=members,
        context=context,
        votes=DayVotes(votes={str(p): day.votes.get(str(p), {}) for p in sorted(day.open)}),
        posts=day.posts,
        messages=day.messages,
        proposals=_proposals(day, built),
        events=day.events,
        summary=summary,
        interventions=day.applied,
    )


def _actions_spend(actions: list[ActionRecord]) -> Spend:
    return Spend(
        model_calls=sum(a.model_calls for a in actions),
        prompt_tokens=sum(a.prompt_tokens for a in actions),
        completion_tokens=sum(a.completion_tokens for a in actions),
    )


def _proposals(day: _Day, built: list[int]) -> list[Proposal]:
    """Every proposal whose document changes today: open ones (tallies) and closed ones."""
    built_today = set(built)
    out = [Proposal(**view.model_dump(), status="open") for view in day.open.values()]
    out += [
        c.model_copy(update={"built_day": day.day}) if c.id in built_today else c
        for c in day.closed
    ]
    return sorted(out, key=lambda p: p.id)


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
