"""The day's rules, as a pure function: conservation, bounds and order independence over many
seeded random days (property style), and the single rules the seed leaves to us."""

from __future__ import annotations

import dataclasses
import random

import pytest

from shared.models import DocumentError
from shared.society import identity
from shared.society.actions import parse_action, reply_schema
from shared.society.close_rules import DayInput, DayOutcome, first_day, resolve
from shared.society.identity import Expected
from shared.society.models import (
    RESOURCES,
    ActionRecord,
    Day,
    Intervention,
    LawView,
    Member,
    ProposalView,
    Resources,
    SocietySettings,
)
from shared.society.prompts import SocietyPrompts, render, variables
from shared.society.replies import ReplyReading
from shared.society.rules import Spend
from shared.stages.base import AnswerValidationError

KINDS = ["forum_post", "forum_reply", "direct_message", "create_proposal", "vote", "work", "trade"]


def _members(n: int, rng: random.Random) -> dict[int, Member]:
    return {
        i: Member(
            agent_id=i,
            day=1,
            display_name=f"Agent #{i}",
            personality="neutral",
            status="active" if rng.random() < 0.8 else "dormant",
            resources=Resources(
                food=rng.choice([0, 0.5, 1, 3, 10]),
                energy=rng.choice([0, 1, 2, 10]),
                materials=rng.choice([0, 5, 30]),
            ),
            land=1,
        )
        for i in range(1, n + 1)
    }


def _action(rng: random.Random, n: int) -> dict:
    kind = rng.choice([*KINDS, "set_name", "idle", "bogus"])
    other = rng.randint(0, n + 2)
    return {
        "forum_post": {"action": kind, "content": "hello"},
        "forum_reply": {"action": kind, "parent_message_id": rng.randint(0, 5), "content": "re"},
        "direct_message": {"action": kind, "recipient_agent_id": other, "content": "hi"},
        "create_proposal": {
            "action": kind,
            "title": "t",
            "description": "d",
            "proposal_type": rng.choice(["law", "allocation", "infrastructure"]),
        },
        "vote": {
            "action": kind,
            "proposal_id": rng.randint(1, 4),
            "vote": rng.choice(["yes", "no"]),
        },
        "work": {
            "action": kind,
            "work_type": rng.choice(["farm", "gather"]),
            "hours": rng.randint(0, 9),
        },
        "trade": {
            "action": kind,
            "recipient_agent_id": other,
            "resource_type": rng.choice(RESOURCES),
            "amount": rng.choice([0.5, 2, 50]),
        },
        "set_name": {"action": kind, "display_name": "Zed"},
        "idle": {"action": kind},
        "bogus": {"action": kind},
    }[kind]


def _random_day(seed: int) -> DayInput:
    rng = random.Random(seed)
    n = rng.randint(2, 12)
    settings = SocietySettings(agents=n, proposal_days=rng.randint(1, 2), infrastructure_cost=5)
    members = _members(n, rng)
    if 3 in members:
        members[3] = members[3].model_copy(update={"votes": {"1": "yes"}})
    law = LawView(id=9, title="share", proposal_type="allocation", passed_day=0)
    context = first_day(settings, members).model_copy(
        update={
            "laws": [law] if rng.random() < 0.5 else [],
            "pool": Resources(food=rng.choice([0, 4]), energy=2, materials=rng.choice([0, 12])),
            "next_post_id": 3,
            "next_proposal_id": 3,
            "proposals": [
                ProposalView(
                    id=1,
                    title="a",
                    proposal_type="allocation",
                    author_id=1,
                    created_day=1,
                    closes_day=1,
                ),
                ProposalView(
                    id=2,
                    title="b",
                    proposal_type="infrastructure",
                    author_id=2,
                    created_day=1,
                    closes_day=2,
                ),
            ],
        }
    )
    acting = sorted(i for i, m in members.items() if m.status == "active")
    actions = [
        ActionRecord(agent_id=a, slot=rng.choice([1, 1, 1, 2]), day=1, action=_action(rng, n))
        for a in rng.sample(range(1, n + 1), k=rng.randint(0, n))
    ]
    interventions = [
        (
            f"i{k}",
            Intervention(
                agent_id=rng.randint(0, n),
                resource=rng.choice(RESOURCES),
                amount=rng.choice([-5, 3]),
            ),
        )
        for k in range(rng.randint(0, 2))
    ]
    return DayInput(
        1,
        settings,
        members,
        context,
        acting,
        actions,
        interventions,
    )


def _wealth(members: dict[int, Member], pool: Resources) -> Resources:
    total = pool
    for m in members.values():
        total = total.plus(m.resources)
    return total


def _same(a: DayOutcome, b: DayOutcome) -> bool:
    return (
        {i: m.model_dump() for i, m in a.members.items()}
        == {i: m.model_dump() for i, m in b.members.items()}
        and a.context == b.context
        and [e.model_dump() for e in a.events] == [e.model_dump() for e in b.events]
    )


@pytest.mark.parametrize("seed", range(300))
def test_a_random_day_conserves_resources_and_keeps_its_bounds(seed: int) -> None:
    given = _random_day(seed)
    out = resolve(given)
    start, end = _wealth(given.members, given.context.pool), _wealth(out.members, out.context.pool)
    flow = out.summary.flow
    for r in RESOURCES:
        expected = flow.production.get(r) - flow.consumption.get(r) + flow.interventions[r]
        assert end.get(r) - start.get(r) == pytest.approx(expected, abs=1e-6), r
    for m in out.members.values():
        assert min(m.resources.get(r) for r in RESOURCES) >= 0
    resolved = sum(out.summary.actions.values()) + len(out.summary.invalid)
    assert resolved <= len(given.acting) * given.settings.actions_per_day
    shuffled = DayInput(
        **{
            **given.__dict__,
            "actions": random.Random(seed).sample(given.actions, len(given.actions)),
        }
    )
    assert _same(resolve(shuffled), out), "the outcome depends on the order actions arrived in"


def _member(i: int, **resources: float) -> Member:
    return Member(
        agent_id=i,
        day=1,
        display_name=f"Agent #{i}",
        personality="neutral",
        resources=Resources(**resources),
        land=1,
    )


def _day(members: dict[int, Member], actions: list[dict], **settings) -> DayOutcome:
    s = SocietySettings(agents=len(members), **settings)
    records = [ActionRecord(agent_id=i, day=1, action=a) for i, a in enumerate(actions, start=1)]
    return resolve(DayInput(1, s, members, first_day(s, members), sorted(members), records))


def test_a_trade_beyond_stock_is_rejected_with_an_event_and_changes_nothing() -> None:
    members = {1: _member(1, food=3, energy=3), 2: _member(2, food=3, energy=3)}
    out = _day(
        members,
        [{"action": "trade", "recipient_agent_id": 2, "resource_type": "food", "amount": 5}],
    )
    assert out.summary.rejected[0]["reason"] == "has only 3 food, cannot give 5"
    assert out.members[1].resources.food == 2 and out.members[2].resources.food == 2  # upkeep only


def test_a_member_who_cannot_pay_goes_dormant_and_wakes_when_given_resources() -> None:
    members = {1: _member(1, food=0.5, energy=3), 2: _member(2, food=5, energy=5)}
    out = _day(members, [{"action": "idle"}, {"action": "idle"}])
    assert out.members[1].status == "dormant" and out.summary.went_dormant == [1]
    gift = {"action": "trade", "recipient_agent_id": 1, "resource_type": "food", "amount": 1}
    s = SocietySettings(agents=2)
    day2 = DayInput(
        2,
        s,
        out.members,
        out.context,
        [2],
        [ActionRecord(agent_id=2, day=2, action=gift)],
    )
    after = resolve(day2)
    assert after.members[1].status == "active" and after.summary.woke == [1]
    assert after.members[1].resources.food == 1.5  # woke without paying that day


def _vote(agent: int, day: int, vote: str) -> ActionRecord:
    action = {"action": "vote", "proposal_id": 1, "vote": vote}
    return ActionRecord(agent_id=agent, day=day, action=action)


def test_a_later_vote_replaces_an_earlier_one_and_a_proposal_closes_once() -> None:
    members = {i: _member(i, food=9, energy=9) for i in (1, 2, 3)}
    proposal = {
        "action": "create_proposal",
        "title": "Mill",
        "description": "",
        "proposal_type": "infrastructure",
    }
    vote = {"action": "vote", "proposal_id": 1, "vote": "yes"}
    out = _day(members, [proposal, vote], proposal_days=3)
    # members act on the day's start: a proposal made today is voted on from tomorrow
    assert out.summary.rejected[0]["reason"] == "proposal #1 is unknown or closed"
    s = SocietySettings(agents=3, proposal_days=3)
    votes = [_vote(2, 2, "no"), _vote(3, 2, "yes")]
    day2 = resolve(DayInput(2, s, out.members, out.context, [1, 2, 3], votes))
    assert (day2.context.proposals[0].yes, day2.context.proposals[0].no) == (1, 1)
    day3 = resolve(DayInput(3, s, day2.members, day2.context, [1, 2, 3], [_vote(2, 3, "yes")]))
    assert day3.summary.proposals_passed == [1] and day3.context.proposals == []
    assert [p.yes for p in day3.proposals] == [2]
    assert [law.id for law in day3.context.laws] == [1] and day3.context.projects == [1]
    assert all(m.votes == {} for m in day3.members.values())  # closed: its votes are gone
    day4 = resolve(DayInput(4, s, day3.members, day3.context, [1, 2, 3], [_vote(3, 4, "no")]))
    assert day4.summary.rejected[0]["reason"] == "proposal #1 is unknown or closed"


@pytest.mark.parametrize("seed", range(120))
def test_the_outcome_does_not_depend_on_the_shard_size(seed: int) -> None:
    """The sharded close (any number of members per invocation) writes what one pass would."""
    given = _random_day(seed)
    whole = resolve(given)
    for size in (1, 2, 3, 5):
        cut = resolve(given, shard_size=size)
        assert _same(cut, whole), f"shard size {size}"
        assert cut.summary == whole.summary and cut.proposals == whole.proposals
        assert (cut.posts, cut.messages) == (whole.posts, whole.messages)
        assert cut.interventions == whole.interventions


def test_an_out_of_bounds_reply_names_the_field_and_the_bound() -> None:
    with pytest.raises(AnswerValidationError, match=r"field 'hours'.*less than or equal to 8"):
        parse_action({"action": "work", "work_type": "farm", "hours": 12}, agents=10)
    with pytest.raises(AnswerValidationError, match=r"recipient_agent_id.*from 1 to 10"):
        parse_action(
            {"action": "trade", "recipient_agent_id": 11, "resource_type": "food", "amount": 1},
            agents=10,
        )
    with pytest.raises(AnswerValidationError, match="'action' must be one of"):
        parse_action({"action": "fly"}, agents=10)
    assert reply_schema(10)["properties"]["recipient_agent_id"]["maximum"] == 10


def test_a_reply_is_read_by_the_seeds_rule() -> None:
    """No JSON: the text is a forum post (cut to 2,000 characters); broken JSON and an empty
    reply are the model's mistakes, sent back with the reason."""
    reading = ReplyReading()
    prose = "Let us farm together. " * 200
    post = reading.parse(prose)
    assert reading.prose and post == {"action": "forum_post", "content": prose.strip()[:2000]}
    assert parse_action(post, agents=2).action == "forum_post"
    assert reading.parse('Sure: {"action": "idle"}') == {"action": "idle"} and not reading.prose
    with pytest.raises(AnswerValidationError, match="not valid JSON"):
        reading.parse('{"action": "work", "hours": }')
    with pytest.raises(AnswerValidationError, match="empty"):
        reading.parse("  \n")


def test_a_text_reply_and_the_days_spend_are_in_the_outcome() -> None:
    members = {1: _member(1, food=3, energy=3)}
    s = SocietySettings(agents=1)
    text = ActionRecord(
        agent_id=1, day=1, action={"action": "forum_post", "content": "hi"}, from_text=True
    )
    given = DayInput(1, s, members, first_day(s, members), [1], [text])
    assert resolve(given).events[0].kind == "text_reply"
    spent = dataclasses.replace(given, spend=Spend(model_calls=7, prompt_tokens=3))
    summary = resolve(spent).summary
    assert (summary.model_calls, summary.prompt_tokens, summary.completion_tokens) == (7, 3, 0)


ACTIONS = "societies/s/days/00001/actions"
TODAY = Expected(day=1, acting=frozenset({3, 8}), per_day=1)
FARM = {"action": "work", "work_type": "farm", "hours": 8}


def _refused(doc_id: str, data: dict, expected: Expected = TODAY) -> tuple[str, str]:
    with pytest.raises(DocumentError) as error:
        identity.read(f"{ACTIONS}/{doc_id}", data, expected)
    assert error.value.document == f"{ACTIONS}/{doc_id}"
    return error.value.field, error.value.reason


def test_an_actions_identity_is_its_document_id_and_a_body_that_disagrees_is_no_action() -> None:
    assert _refused("8-1", {"agentId": 3, "action": FARM}) == (
        "agentId",
        "says 3, but the document id is '8-1'",
    )
    assert _refused("8-1", {"agentId": 8, "slot": 2, "action": FARM})[0] == "slot"
    assert _refused("8-1", {"agentId": 8, "day": 2, "action": FARM})[0] == "day"
    assert _refused("8-2", {"agentId": 8, "action": FARM}) == (
        "(document id)",
        "slot 2 is beyond actionsPerDay (1)",
    )
    assert _refused("99-1", {"action": FARM}) == (
        "(document id)",
        "member 99 is not acting on day 1",
    )
    for doc_id in ("x", "8", "8-0", "08-1", "8-1-1", "-8-1", "8-1 "):
        assert _refused(doc_id, {"agentId": 8, "action": FARM})[0] == "(document id)", doc_id
    assert _refused("8-1", {"action": "farm"})[0] == "action"  # the body's own shape
    bare = identity.read(f"{ACTIONS}/8-1", {"action": FARM}, TODAY)  # the id fills the rest
    assert (bare.agent_id, bare.slot, bare.day) == (8, 1, 1)
    two = Expected(day=1, acting=frozenset({8}), per_day=2)
    assert identity.read(f"{ACTIONS}/8-2", {"agentId": 8, "action": FARM}, two).slot == 2


def test_stray_documents_are_errors_and_a_member_acts_once_per_slot() -> None:
    documents = [
        (f"{ACTIONS}/3-1", {"agentId": 3, "day": 1, "action": FARM}),
        (f"{ACTIONS}/8-1", {"agentId": 3, "day": 1, "action": FARM}),
        (f"{ACTIONS}/8-2", {"agentId": 8, "day": 1, "action": FARM}),
        (f"{ACTIONS}/99-1", {"agentId": 99, "day": 1, "action": FARM}),
    ]
    found = identity.sort(documents, TODAY)
    assert list(found.actions) == ["3-1"]
    assert [(e.document.rsplit("/", 1)[1], e.field) for e in found.errors] == [
        ("8-1", "agentId"),
        ("8-2", "(document id)"),
        ("99-1", "(document id)"),
    ]
    members = {3: _member(3, food=10, energy=10), 8: _member(8, food=10, energy=10)}
    s = SocietySettings(agents=8)
    given = DayInput(1, s, members, first_day(s, members), [3, 8], [])
    out = resolve(dataclasses.replace(given, actions=list(found.actions.values())))
    assert out.members[3].resources.food == 16.2  # farmed once: +8, 10% to the pool, 1 eaten
    assert out.summary.no_action == [8] and out.summary.rejected == []


def test_check_names_every_resolved_action_that_was_not_one() -> None:
    day = Day(
        day=1,
        status="closed",
        acting=[3, 8],
        settings=SocietySettings(agents=8),
        action_ids=["3-1", "8-1", "8-2", "x"],
    )
    bodies = {
        "3-1": {"agentId": 3, "day": 1, "action": FARM},
        "8-1": {"agentId": 3, "day": 1, "action": FARM},
        "8-2": {"agentId": 8, "day": 1, "action": FARM},
        "x": {"agentId": 8, "day": 1, "action": FARM},
    }
    problems = identity.audit(day, bodies, ACTIONS)
    assert [p.split(":")[1].strip() for p in problems] == [
        "resolved '8-1'",
        "resolved '8-2'",
        "resolved 'x'",
    ]
    assert "agentId: says 3" in problems[0] and "beyond actionsPerDay" in problems[1]
    assert identity.audit(day.model_copy(update={"action_ids": ["3-1"]}), bodies, ACTIONS) == []


def test_the_prompt_is_the_seeds_system_and_user_messages_with_timed_posts() -> None:
    """Issue 31 item 4: the base prompt (and the personality) is the system message, the day's
    context the user message; a post shows its day and its time (the action slot)."""
    members = {1: _member(1, food=3, energy=3), 2: _member(2, food=3, energy=3)}
    members[2] = members[2].model_copy(update={"personality": "equality"})
    s = SocietySettings(agents=2, actions_per_day=2)
    post = ActionRecord(agent_id=1, day=1, slot=2, action={"action": "forum_post", "content": "hi"})
    given = DayInput(1, s, members, first_day(s, members), [1, 2], [post])
    out = resolve(given)
    assert [p.slot for p in out.posts] == [2]
    values = variables(out.members[2], out.context, s, 1)
    system, user = render(SocietyPrompts(), values, "societies/s/prompts/default")
    assert system.startswith("You are Agent #2") and "You value fairness" in system
    assert "CURRENT STATE" not in system
    assert user.startswith("CURRENT STATE (Day 2)") and "RESPONSE FORMAT" not in user
    assert "- [#1] day 1, action 2 of 2, Agent #1 (#1): hi" in user


def test_the_seeds_generation_settings_are_society_settings() -> None:
    s = SocietySettings()
    assert (s.max_tokens, s.temperature) == (500, 0.7)
    assert SocietySettings.model_validate({"maxTokens": 64, "temperature": 0}).max_tokens == 64
    for bad in ({"maxTokens": 0}, {"temperature": 2.5}, {"temperature": -0.1}):
        with pytest.raises(ValueError):
            SocietySettings.model_validate(bad)
