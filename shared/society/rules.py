"""One day of one shard of the society (a contiguous range of members), resolved: a pure
function of the day's start, the shard's actions and what the society-level steps decided.

The members act simultaneously on the day's start: a member's actions are taken in slot order
against its own state (what it had, interventions on it, its own earlier actions); whatever it
does to another member (goods traded, a message, a reply to its post) is a ``Delivery`` that
arrives after every action, in (sender, slot) order. A reply names a post, a vote a proposal,
that the day started with (what the members saw). So no shard waits for another while acting,
and the outcome does not depend on how the members were cut into shards (``resolve`` with any
shard size gives the same outcome; tested).

Phases of a shard (``shared.society.close_rules`` joins them): ``act`` (the actions: counts, the
pool's share, vote tallies, deliveries out), ``need`` (with an allocation law: what the members
still lack after the deliveries), ``settle`` (everything again, now with the ids, the pool's
budget and the proposals' outcomes: the members' next state, posts, messages, events).
Order within a shard's day: interventions, the actions, deliveries, the common pool's safety
net, upkeep (dormancy and waking), the outcomes of proposals its members made.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from shared.models import DocModel
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
    DirectMessage,
    Event,
    Flow,
    Intervention,
    Member,
    Post,
    ProposalView,
    Resource,
    Resources,
    SocietySettings,
    tidy,
)
from shared.stages.base import AnswerValidationError

WORK_RESOURCE: dict[str, Resource] = {"farm": "food", "generate": "energy", "gather": "materials"}
EVENT_CHARS = 240
VOTES = ("yes", "no", "abstain")
INTERVENTIONS, ACTIONS, SUPPORT, UPKEEP, PROPOSALS, BUILD = 1, 2, 3, 4, 5, 6
"""Event stages: an event's id is ``{day}-{stage}-{agent}-{n}``, so ids do not depend on the
shard that made them and sort in the day's order."""


class Rejected(Exception):
    """An action that cannot be carried out (nothing changes); the reason goes in an event."""


@dataclasses.dataclass(frozen=True)
class Spend:
    """What a day's turns cost: every model attempt (accepted, corrective, rejected, provider
    retries, attempts of turns that failed) and the tokens the provider reported."""

    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Delivery(DocModel):
    """What a member's action does to another member: goods (a trade) and a line for its
    recent events."""

    to: int
    sender: int
    slot: int
    n: int
    resource: Resource | None = None
    amount: float = 0.0
    text: str


class Ids(DocModel):
    """The first post, message and proposal number of a shard: the shards before it made the
    ones before (``close_rules.plan``)."""

    post: int = 1
    message: int = 1
    proposal: int = 1


class Outcome(DocModel):
    """A proposal that closed today, for its author's recent events."""

    view: ProposalView
    passed: bool

    @property
    def text(self) -> str:
        status = "passed" if self.passed else "failed"
        v = self.view
        return f"proposal #{v.id} ({v.title[:60]}) {status}: {v.yes} yes, {v.no} no"


@dataclasses.dataclass
class ShardInput:
    day: int
    settings: SocietySettings
    context: DayContext
    members: dict[int, Member]
    """The shard's members at the start of the day."""
    acting: list[int]
    """The shard's members with actions expected today."""
    actions: list[ActionRecord]
    interventions: list[tuple[str, Intervention]] = dataclasses.field(default_factory=list)
    """Interventions on the shard's members."""


def event_id(day: int, stage: int, agent: int, n: int) -> str:
    return f"{day:05d}-{stage}-{agent:06d}-{n:04d}"


def make_event(
    day: int, stage: int, agent: int, n: int, kind: str, text: str, other: int = 0, **data: Any
) -> Event:
    return Event(
        id=event_id(day, stage, agent, n),
        day=day,
        seq=(stage * 10**7 + agent) * 10**4 + n,
        kind=kind,
        agent_id=agent,
        other_id=other,
        description=text[:EVENT_CHARS],
        data=data,
    )


def closes_today(view: ProposalView, day: int) -> bool:
    return view.closes_day <= day


class ShardDay:
    def __init__(self, given: ShardInput, ids: Ids | None = None) -> None:
        self.given = given
        self.s = given.settings
        self.day = given.day
        ctx = given.context
        self.ids = ids or Ids(post=ctx.next_post_id, message=1, proposal=ctx.next_proposal_id)
        self.res = {i: {r: m.resources.get(r) for r in RESOURCES} for i, m in given.members.items()}
        self.names = {i: m.display_name for i, m in given.members.items()}
        self.status = {i: m.status for i, m in given.members.items()}
        self.votes = {i: dict(m.votes) for i, m in given.members.items()}
        self.recent = {i: list(m.recent_events) for i, m in given.members.items()}
        self.events: list[Event] = []
        self.seen: Counter[tuple[int, int]] = Counter()
        self.outbox: list[Delivery] = []
        self.posts: list[Post] = []
        self.authors = {p.id: p.author_id for p in ctx.posts}
        self.messages: list[DirectMessage] = []
        self.proposals: list[ProposalView] = []
        self.open = {p.id for p in ctx.proposals}
        self.pool_in = dict.fromkeys(RESOURCES, 0.0)
        self.given_out = dict.fromkeys(RESOURCES, 0.0)
        self.flow = Flow()
        self.summary = DaySummary(day=self.day)
        self.applied: dict[str, float] = {}
        self.current, self.slot = 0, 1  # the member and slot being applied: a post's time

    # --- events -----------------------------------------------------------------------------

    def event(
        self, stage: int, kind: str, agent: int, text: str, other: int = 0, **data: Any
    ) -> None:
        self.seen[(stage, agent)] += 1
        n = self.seen[(stage, agent)]
        self.events.append(make_event(self.day, stage, agent, n, kind, text, other, **data))

    def tell(self, agent: int, text: str) -> None:
        """A recent event for the member's next prompts."""
        if agent in self.recent:
            self.recent[agent].append(f"Day {self.day}: {text}"[:EVENT_CHARS])

    def deliver(
        self, to: int, text: str, resource: Resource | None = None, amount: float = 0.0
    ) -> None:
        sender = self.current
        n = sum(1 for d in self.outbox if d.sender == sender and d.slot == self.slot) + 1
        self.outbox.append(
            Delivery(
                to=to,
                sender=sender,
                slot=self.slot,
                n=n,
                resource=resource,
                amount=amount,
                text=text,
            )
        )

    def name(self, agent: int) -> str:
        return self.names.get(agent, f"Agent #{agent}")

    # --- interventions ----------------------------------------------------------------------

    def intervene(self, iid: str, item: Intervention) -> None:
        store = self.res.get(item.agent_id)
        if store is None:  # a member whose snapshot is missing: nothing to give to
            self.applied[iid] = 0.0
            self.event(
                INTERVENTIONS, "intervention", 0, f"intervention {iid}: no agent #{item.agent_id}"
            )
            return
        amount = item.amount if item.amount >= 0 else -min(-item.amount, store[item.resource])
        store[item.resource] = tidy(store[item.resource] + amount)
        self.flow.interventions[item.resource] = tidy(
            self.flow.interventions[item.resource] + amount
        )
        self.applied[iid] = tidy(amount)
        verb = "gave" if amount >= 0 else "took"
        text = f"the researcher {verb} {abs(amount):g} {item.resource} (Agent #{item.agent_id})"
        self.event(
            INTERVENTIONS,
            "intervention",
            item.agent_id,
            text,
            amount=amount,
            resource=item.resource,
        )
        self.tell(item.agent_id, text)

    # --- actions ----------------------------------------------------------------------------

    def act(self, record: ActionRecord) -> None:
        agent = record.agent_id
        self.current, self.slot = agent, record.slot
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
            self.event(ACTIONS, "text_reply", agent, "no JSON in the reply: its text was posted")
        try:
            self.apply(agent, action)
        except Rejected as why:
            self.reject(agent, action.action, str(why))

    def invalid(self, agent: int, reason: str) -> None:
        self.summary.invalid.append({"agentId": agent, "reason": reason[:500]})
        self.event(
            ACTIONS, "invalid_action", agent, f"action rejected: {reason}", reason=reason[:500]
        )
        self.tell(agent, f"your action was invalid ({reason[:120]}); you idled")

    def reject(self, agent: int, kind: str, reason: str) -> None:
        self.summary.rejected.append({"agentId": agent, "action": kind, "reason": reason})
        self.event(
            ACTIONS, "rejected", agent, f"{kind} rejected: {reason}", action=kind, reason=reason
        )
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
            self.event(ACTIONS, "idle", agent, f"{self.name(agent)} idled")
            return
        handler(agent, action)  # type: ignore[operator]

    def post(self, agent: int, action: ForumPostAction | ForumReplyAction) -> None:
        parent = action.parent_message_id if isinstance(action, ForumReplyAction) else None
        if parent is not None and not 1 <= parent < self.given.context.next_post_id:
            raise Rejected(f"no forum post #{parent}")
        post = Post(
            id=self.ids.post + len(self.posts),
            day=self.day,
            slot=self.slot,
            author_id=agent,
            author_name=self.name(agent),
            content=action.content,
            parent_id=parent,
        )
        self.posts.append(post)
        self.event(
            ACTIONS, action.action, agent, f"{self.name(agent)} posted #{post.id}", post=post.id
        )
        author = self.authors.get(parent or 0)
        if author and author != agent:
            self.deliver(author, f"{self.name(agent)} replied to your post #{parent}")

    def message(self, agent: int, action: DirectMessageAction) -> None:
        to = action.recipient_agent_id
        mid = f"{self.day:05d}-{self.ids.message + len(self.messages):05d}"
        self.messages.append(
            DirectMessage(
                id=mid, day=self.day, sender_id=agent, recipient_id=to, content=action.content
            )
        )
        self.event(ACTIONS, "direct_message", agent, f"{self.name(agent)} messaged #{to}", other=to)
        self.deliver(to, f"{self.name(agent)} (#{agent}) told you: {action.content[:100]}")

    def propose(self, agent: int, action: CreateProposalAction) -> None:
        pid = self.ids.proposal + len(self.proposals)
        self.proposals.append(
            ProposalView(
                id=pid,
                title=action.title,
                description=action.description[:1000],
                proposal_type=action.proposal_type,
                author_id=agent,
                created_day=self.day,
                closes_day=self.day + self.s.proposal_days - 1,
            )
        )
        self.summary.proposals_opened.append(pid)
        text = f"{self.name(agent)} proposed #{pid}: {action.title}"
        self.event(ACTIONS, "create_proposal", agent, text)

    def vote(self, agent: int, action: VoteAction) -> None:
        if action.proposal_id not in self.open:
            raise Rejected(f"proposal #{action.proposal_id} is unknown or closed")
        self.votes[agent][str(action.proposal_id)] = action.vote
        text = f"{self.name(agent)} voted {action.vote} on #{action.proposal_id}"
        self.event(ACTIONS, "vote", agent, text, proposal=action.proposal_id, vote=action.vote)

    def work(self, agent: int, action: WorkAction) -> None:
        resource = WORK_RESOURCE[action.work_type]
        rate = {
            "farm": self.s.farm_yield * self.given.members[agent].land,
            "generate": self.s.generate_yield,
            "gather": self.s.gather_yield,
        }[action.work_type]
        made = tidy(action.hours * rate + self.s.infrastructure_bonus * self.given.context.built)
        to_pool = tidy(made * self.s.pool_share)
        self.res[agent][resource] = tidy(self.res[agent][resource] + made - to_pool)
        self.pool_in[resource] = tidy(self.pool_in[resource] + to_pool)
        self.produce(resource, made)
        what = f"({action.work_type}, {action.hours} h): +{made:g} {resource}"
        text = f"{self.name(agent)} worked {what}"
        self.event(ACTIONS, "work", agent, text, resource=resource, amount=made, pool=to_pool)

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
        if not 1 <= to <= self.given.context.agents:
            raise Rejected(f"no agent #{to}")
        have = self.res[agent][kind]
        if amount > have:
            raise Rejected(f"has only {have:g} {kind}, cannot give {amount:g}")
        self.res[agent][kind] = tidy(have - amount)
        text = f"{self.name(agent)} gave {amount:g} {kind} to #{to}"
        self.event(ACTIONS, "trade", agent, text, other=to, resource=kind, amount=amount)
        self.deliver(to, f"{self.name(agent)} (#{agent}) gave you {amount:g} {kind}", kind, amount)

    def set_name(self, agent: int, action: SetNameAction) -> None:
        name = action.display_name.strip()
        if not name:
            raise Rejected("the name is blank")
        old, self.names[agent] = self.names[agent], name
        self.event(ACTIONS, "set_name", agent, f"{old} is now called {name}", name=name)

    # --- after the actions ------------------------------------------------------------------

    def receive(self, deliveries: list[Delivery]) -> None:
        """What other members' actions did to this shard's members, in (sender, slot) order."""
        for d in sorted(deliveries, key=lambda d: (d.sender, d.slot, d.n)):
            if d.to not in self.res:
                continue  # a member whose snapshot is missing
            if d.resource is not None:
                self.res[d.to][d.resource] = tidy(self.res[d.to][d.resource] + d.amount)
            self.tell(d.to, d.text)

    def needs(self) -> dict[Resource, float]:
        return {"food": self.s.daily_food, "energy": self.s.daily_energy}

    def lack(self) -> Resources:
        """What the members lack for today's upkeep: the safety net's claim on the pool."""
        total = dict.fromkeys(RESOURCES, 0.0)
        for agent in sorted(self.res):
            for kind, need in self.needs().items():
                total[kind] = tidy(total[kind] + max(tidy(need - self.res[agent][kind]), 0.0))
        return Resources(**total)

    def safety_net(self, budget: Resources) -> None:
        """The pool covers what members lack, by id, within what it holds for this shard (all
        it holds less what the shards before took: the same as one pass over every member)."""
        left = {r: budget.get(r) for r in RESOURCES}
        for agent in sorted(self.res):
            for kind, need in self.needs().items():
                lack = tidy(need - self.res[agent][kind])
                give = tidy(min(max(lack, 0.0), left[kind]))
                if give <= 0:
                    continue
                left[kind] = tidy(left[kind] - give)
                self.given_out[kind] = tidy(self.given_out[kind] + give)
                self.res[agent][kind] = tidy(self.res[agent][kind] + give)
                text = f"the common pool gave {give:g} {kind} to #{agent}"
                self.event(SUPPORT, "pool_support", agent, text, resource=kind, amount=give)
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
                    self.event(UPKEEP, "woke", agent, f"{self.name(agent)} woke up")
                    self.tell(agent, "you have resources again and woke up")
                continue
            if not can_pay:
                self.status[agent] = "dormant"
                self.summary.went_dormant.append(agent)
                self.event(UPKEEP, "dormant", agent, f"{self.name(agent)} went dormant")
                self.tell(agent, "you could not pay your daily food and energy: dormant")
                continue
            r["food"], r["energy"] = tidy(r["food"] - food), tidy(r["energy"] - energy)
            self.consume("food", food)
            self.consume("energy", energy)

    def hear(self, outcomes: list[Outcome]) -> None:
        """The authors (those in this shard) learn how their proposals ended; the votes on
        closed proposals go."""
        for outcome in sorted(outcomes, key=lambda o: o.view.id):
            self.tell(outcome.view.author_id, f"your {outcome.text}")
            for votes in self.votes.values():
                votes.pop(str(outcome.view.id), None)

    def tallies(self) -> dict[str, dict[str, int]]:
        """Votes cast on each proposal the day started with, by this shard's members."""
        counts = {str(p): dict.fromkeys(VOTES, 0) for p in sorted(self.open)}
        for votes in self.votes.values():
            for pid, vote in votes.items():
                if pid in counts and vote in VOTES:
                    counts[pid][vote] += 1
        return counts

    def members(self) -> dict[int, Member]:
        """Every member's state at the start of the next day."""
        keep = self.s.recent_events
        return {
            i: m.model_copy(
                update={
                    "day": self.day + 1,
                    "display_name": self.names[i],
                    "status": self.status[i],
                    "resources": Resources(**self.res[i]),
                    "recent_events": self.recent[i][-keep:] if keep else [],
                    "votes": self.votes[i],
                }
            )
            for i, m in self.given.members.items()
        }


def _acted(given: ShardInput, ids: Ids | None = None) -> ShardDay:
    day = ShardDay(given, ids)
    for iid, item in sorted(given.interventions, key=lambda pair: pair[0]):
        day.intervene(iid, item)
    for record in sorted(given.actions, key=lambda a: (a.agent_id, a.slot)):
        day.act(record)
    day.summary.no_action = sorted(set(given.acting) - {a.agent_id for a in given.actions})
    return day


def _received(given: ShardInput, ids: Ids | None, inbox: list[Delivery]) -> ShardDay:
    day = _acted(given, ids)
    day.receive(inbox)
    return day


@dataclasses.dataclass
class Acted:
    """The ``act`` phase's result: what the society-level step needs, and the deliveries."""

    posts: int
    messages: int
    proposals: int
    pool: Resources
    tallies: dict[str, dict[str, int]]
    outbox: list[Delivery]


def act(given: ShardInput) -> Acted:
    day = _acted(given)
    return Acted(
        posts=len(day.posts),
        messages=len(day.messages),
        proposals=len(day.proposals),
        pool=Resources(**day.pool_in),
        tallies=day.tallies(),
        outbox=day.outbox,
    )


def need(given: ShardInput, ids: Ids, inbox: list[Delivery]) -> Resources:
    """The ``need`` phase (an allocation law is active): what the shard's members lack."""
    return _received(given, ids, inbox).lack()


@dataclasses.dataclass
class Settled:
    """The ``settle`` phase's result: the shard's documents, and its part of the summary."""

    members: dict[int, Member]
    posts: list[Post]
    messages: list[DirectMessage]
    proposals: list[ProposalView]
    events: list[Event]
    summary: DaySummary
    pool_in: Resources
    pool_out: Resources
    applied: dict[str, float]


def settle(
    given: ShardInput,
    ids: Ids,
    inbox: list[Delivery],
    budget: Resources | None,
    outcomes: list[Outcome],
) -> Settled:
    """The shard's whole day: ``budget`` is what the pool holds for its members' safety net
    (None: no allocation law), ``outcomes`` the proposals closed today (the day started with
    them; the shard's own new ones that close today, with no votes, fail here)."""
    day = _received(given, ids, inbox)
    if budget is not None:
        day.safety_net(budget)
    day.upkeep()
    new_ones = [Outcome(view=v, passed=False) for v in day.proposals if closes_today(v, day.day)]
    day.hear([*outcomes, *new_ones])
    summary = day.summary.model_copy(update={"flow": day.flow})
    return Settled(
        members=day.members(),
        posts=day.posts,
        messages=day.messages,
        proposals=day.proposals,
        events=day.events,
        summary=summary,
        pool_in=Resources(**day.pool_in),
        pool_out=Resources(**day.given_out),
        applied=day.applied,
    )
