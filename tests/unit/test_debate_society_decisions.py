"""The debate's and the society's pure decisions: where their documents and leases are, their
messages' ids, what a completed round leads to, who acts on a day, the members a society
starts with, the day's spend fields."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from google.cloud import firestore
from google.cloud.firestore import Increment

from functions import leases
from functions.debate import asking, failing, layers, progress, redrive, start
from functions.debate import docs as debate_docs
from functions.debate.messages import DebateTurn
from functions.debate.settings import DebateSettings
from functions.debate.user import GuardedPrompts
from functions.society import days, scene, setup, turn
from functions.society.wire import CloseShard, SocietyTurn
from shared.debate.kits import Kit
from shared.debate.models import (
    Cluster,
    Debate,
    DebateMode,
    Round,
    Statement,
    StatementKind,
)
from shared.errors import UserCodeError
from shared.society import paths as sp
from shared.society.models import PERSONALITIES, Member, Resources, Society, SocietySettings
from shared.society.rules import Spend

# --- the debate ---------------------------------------------------------------------------


def test_debate_paths() -> None:
    assert debate_docs.debate("d1") == "debates/d1"
    assert debate_docs.agent("d1", "a") == "debates/d1/agents/a"
    assert debate_docs.layer("d1", "L1") == "debates/d1/layers/L1"
    assert debate_docs.cluster("d1", "L1-C0") == "debates/d1/clusters/L1-C0"
    assert debate_docs.round_("d1", "L1-C0-R0") == "debates/d1/rounds/L1-C0-R0"
    assert debate_docs.statement("d1", "x") == "debates/d1/statements/x"
    assert debate_docs.lease("d1", "u") == "debates/d1/leases/u"
    assert debate_docs.differences("d1", "L2") == "debates/d1/differences/L2"


def test_debate_turn_names_its_statement_and_travels_in_camel_case() -> None:
    message = DebateTurn(debate_id="d1", round_id="L1-C0-R2", agent="bull")
    assert message.statement_id == "L1-C0-R2-bull"
    assert message.to_json() == {"debateId": "d1", "roundId": "L1-C0-R2", "agent": "bull"}
    assert DebateTurn.model_validate(message.to_json()) == message


def test_stranded_age() -> None:
    settings = DebateSettings.of({"DLAB_DEBATE_STALE_SECONDS": "60"})
    now = datetime.now(UTC)
    assert redrive._old(None, settings)  # never stamped: nothing to wait for
    assert redrive._old(now - timedelta(seconds=61), settings)
    assert not redrive._old(now - timedelta(seconds=30), settings)
    assert not redrive._old(now + timedelta(seconds=5), settings)


def test_guarded_prompts_call_user_code_and_pass_attributes() -> None:
    class Prompts:
        title = "stocks"

        def opening(self, x: int) -> str:
            return f"open {x}"

        def broken(self) -> str:
            raise KeyError("missing")

    guarded: Any = GuardedPrompts("prompts 'stock'", Prompts())
    assert guarded.title == "stocks"
    assert guarded.opening(3) == "open 3"
    with pytest.raises(UserCodeError) as raised:
        guarded.broken()
    assert raised.value.function == "prompts 'stock'.broken"


DEBATE = Debate(name="t", data=[{"x": 1}], num_rounds=2, mode=DebateMode.ALL_TO_ALL)
"""A baseline debate: its cluster does not synthesize, so no head agent and no kit is read."""
NO_KIT = cast(Kit, None)


def _cluster(**more: Any) -> Cluster:
    return Cluster(
        id="L1-C0", layer=1, index=0, name="all", members=["a", "b"], synthesize=False, **more
    )


def _round(index: int, kind: StatementKind = StatementKind.ARGUMENT) -> Round:
    return Round(
        id=f"L1-C0-R{index}", cluster_id="L1-C0", layer=1, index=index, kind=kind, agents=["a", "b"]
    )


def _statements(rnd: Round) -> dict[str, Statement]:
    return {
        a: Statement(
            id=f"{rnd.id}-{a}",
            round_id=rnd.id,
            cluster_id=rnd.cluster_id,
            layer=1,
            round=rnd.index,
            agent=a,
            kind=rnd.kind,
            text="t",
        )
        for a in rnd.agents
    }


def _next(debate: Debate, rnd: Round) -> progress.Next:
    return progress._next("d1", debate, NO_KIT, _cluster(), rnd, _statements(rnd))


def test_baseline_openings_lead_to_the_first_argument_round() -> None:
    step = _next(DEBATE, _round(0, StatementKind.OPENING))
    assert step.round is not None and step.head is None
    assert (step.round.id, step.round.index, step.round.kind) == (
        "L1-C0-R1",
        1,
        StatementKind.ARGUMENT,
    )
    assert step.round.agents == ["a", "b"]
    assert step.cluster_update == {"debates": True, "reason": "baseline: every agent debates"}
    assert not step.cluster_complete


def test_a_middle_round_leads_to_the_next() -> None:
    step = _next(DEBATE, _round(1))
    assert step.round is not None and step.round.id == "L1-C0-R2"
    assert step.cluster_update == {}


def test_the_last_baseline_round_completes_the_cluster_with_every_members_statement() -> None:
    step = _next(DEBATE, _round(2))
    assert step.round is None
    assert step.cluster_complete
    assert step.cluster_update["outputs"] == {"a": "L1-C0-R2-a", "b": "L1-C0-R2-b"}


def test_no_rounds_openings_complete_the_cluster_at_once() -> None:
    debate = DEBATE.model_copy(update={"num_rounds": 0})
    step = _next(debate, _round(0, StatementKind.OPENING))
    assert step.round is None and step.cluster_complete
    assert step.cluster_update["debates"] is True
    assert step.cluster_update["outputs"] == {"a": "L1-C0-R0-a", "b": "L1-C0-R0-b"}


def test_self_consistency_samples_do_not_debate() -> None:
    debate = DEBATE.model_copy(update={"mode": DebateMode.SELF_CONSISTENCY})
    step = _next(debate, _round(0, StatementKind.OPENING))
    assert step.round is None and step.cluster_complete
    assert step.cluster_update["debates"] is False
    assert step.cluster_update["reason"] == "self-consistency: samples only"


def test_a_head_opening_is_the_clusters_output() -> None:
    rnd = Round(
        id="L1-C0-H",
        cluster_id="L1-C0",
        layer=1,
        index=3,
        kind=StatementKind.HEAD_OPENING,
        agents=["head"],
    )
    step = _next(DEBATE, rnd)
    assert step.round is None
    assert step.cluster_update == {"complete": True, "outputs": {"head": "L1-C0-H-head"}}


# --- the society --------------------------------------------------------------------------


def test_society_paths_and_leases() -> None:
    assert sp.society("s1") == "societies/s1"
    assert sp.day_path("s1", 3) == "societies/s1/days/00003"
    assert sp.snapshot_path("s1", 3, 7) == "societies/s1/days/00003/members/7"
    assert sp.action_path("s1", 3, "7-1") == "societies/s1/days/00003/actions/7-1"
    assert sp.state_path("s1", 3, "market") == "societies/s1/days/00003/state/market"
    assert sp.tally_path("s1", 3, 15) == "societies/s1/days/00003/tally/15"
    assert sp.close_lease("s1", 3) == "societies/s1/closeLeases/00003"
    assert sp.shard_lease("s1", 3, "act", 2) == "societies/s1/closeLeases/00003-act-00002"
    assert sp.result_id("need", 12) == "need-00012"
    assert sp.close_part("s1", 3, "need-00012") == "societies/s1/days/00003/close/need-00012"
    one = SocietyTurn(society_id="s1", day=3, agent_id=7, slot=2)
    assert turn.lease(one) == "societies/s1/turnLeases/3-7-2"


def test_day_ids_list_in_day_order() -> None:
    paths = [sp.day_path("s", d) for d in (10, 9, 100, 1)]
    assert sorted(paths) == [sp.day_path("s", d) for d in (1, 9, 10, 100)]


def test_society_messages() -> None:
    one = SocietyTurn(society_id="s1", day=2, agent_id=7)
    assert one.action_id == "7-1"
    assert SocietyTurn(society_id="s1", day=2, agent_id=7, slot=3).action_id == "7-3"
    assert one.to_json() == {"societyId": "s1", "day": 2, "agentId": 7, "slot": 1}
    message = CloseShard(society_id="s1", day=2, phase="settle", shard=4)
    assert CloseShard.model_validate(message.to_json()) == message


def _member(i: int, **more: Any) -> Member:
    return Member(
        agent_id=i,
        day=1,
        display_name=f"A{i}",
        personality="neutral",
        resources=Resources(),
        **more,
    )


def test_roster_the_active_members_and_the_humans_among_them() -> None:
    roster = days.Roster.of(
        {
            5: _member(5, human=True),
            2: _member(2),
            9: _member(9, status="dormant", human=True),
            1: _member(1, human=True),
        }
    )
    assert roster.acting == [1, 2, 5]
    assert roster.humans == [1, 5]  # the dormant human does not act


def test_personalities_follow_the_shares_by_largest_remainder() -> None:
    even = SocietySettings(agents=7)  # 0.2 each: 1.4 each, the two left go to the first two
    counts = Counter(setup.personalities(even))
    assert counts == {"efficiency": 2, "equality": 2, "freedom": 1, "stability": 1, "neutral": 1}
    shares = dict.fromkeys(map(str, PERSONALITIES), 0.0) | {"freedom": 3.0, "neutral": 1.0}
    skewed = SocietySettings(agents=10, personality_shares=shares)
    assert Counter(setup.personalities(skewed)) == {"freedom": 8, "neutral": 2}  # 7.5, 2.5


def test_personalities_shuffled_by_the_seed() -> None:
    one = setup.personalities(SocietySettings(agents=50, seed=1))
    assert one == setup.personalities(SocietySettings(agents=50, seed=1))
    other = setup.personalities(SocietySettings(agents=50, seed=2))
    assert other != one and sorted(other) == sorted(one)


def test_members_of_a_new_society() -> None:
    settings = SocietySettings(agents=3, humans=[2], land_per_agent=2.5)
    people = setup.members(Society(id="s1", settings=settings))
    assert sorted(people) == [1, 2, 3]
    assert [m.human for m in people.values()] == [False, True, False]
    assert all(m.day == 1 and m.land == 2.5 for m in people.values())
    assert people[3].display_name == "Agent #3"
    assert [m.personality for m in people.values()] == setup.personalities(settings)


def test_spend_fields_count_only_what_was_spent() -> None:
    fields = scene.spend_fields(Spend(model_calls=2, prompt_tokens=0, completion_tokens=9))
    assert fields == {"calls": Increment(2), "completionTokens": Increment(9)}
    assert scene.spend_fields(Spend()) == {}


# --- a debate's layers, its units, its calls ----------------------------------------------


def test_the_next_layer_carries_each_groups_outputs() -> None:
    groups = [["a", "b"], ["c"]]
    outputs = {"a": "L1-C0-H-a", "b": "L1-C1-H-b", "c": "L1-C2-H-c"}
    writes = layers._next_layer("d1", DEBATE, 2, groups, outputs)
    by_path = {path: (data, create) for path, data, create in writes}
    assert all(create for _, create in by_path.values())  # created once: a rerun fails, not doubles
    layer, _ = by_path["debates/d1/layers/L2"]
    assert (layer["index"], layer["clusters"]) == (2, ["L2-C0", "L2-C1"])
    cluster, _ = by_path["debates/d1/clusters/L2-C0"]
    assert cluster["members"] == ["a", "b"] and cluster["dynamic"] == ["a", "b"]
    assert cluster["carried"] == {"a": "L1-C0-H-a", "b": "L1-C1-H-b"}
    opening, _ = by_path["debates/d1/rounds/L2-C1-R0"]
    assert (opening["kind"], opening["agents"], opening["layer"]) == ("carried", ["c"], 2)
    assert len(writes) == 1 + 2 * len(groups)


def test_differences_record_and_the_final_write() -> None:
    path, data, create = layers._differences("d1", 2, ["a", "b"], 2, {("a", "b"): 0.25})
    assert (path, create) == ("debates/d1/differences/L2", True)
    assert data["pairs"] == [{"a": "a", "b": "b", "difference": 0.25}]
    ((final_path, update, created),) = layers._final("d1", {"answer": "buy"})
    assert (final_path, created) == ("debates/d1", False)
    assert (update["status"], update["decision"]) == ("done", {"answer": "buy"})
    assert update["finishedAt"] is firestore.SERVER_TIMESTAMP


def test_attempt_of_the_running_unit() -> None:
    assert failing.attempt() == 1  # outside a unit
    token = leases.holding.set(leases.Held("debates/d1/leases/u", "t", attempt=3))
    try:
        assert failing.attempt() == 3
    finally:
        leases.holding.reset(token)


def test_a_debate_agents_calls_are_filed_under_its_name_and_the_debates_model() -> None:
    debate = Debate.model_validate(
        {"name": "t", "data": [{}], "model": {"apiType": "OPENAI", "modelName": "m1"}}
    )
    caller = asking._caller(debate, "bull", "L1-C0")
    assert (caller.private_id, caller.public_id, caller.current_cohort_id) == (
        "bull",
        "bull",
        "L1-C0",
    )
    assert caller.agent_config is not None and caller.agent_config.agent_id == "debate"
    assert caller.agent_config.model_settings.model_name == "m1"
    assert caller.agent_config.model_settings.api_type == "OPENAI"


def test_categorize_entries_that_have_categories_without_a_model_call() -> None:
    debate = Debate(
        name="t",
        data=[{"x": 1, "category": "Company News"}, {"x": 2, "category": "company-news "}],
    )
    # no prompts and no model: a call would fail
    entries = start.categorize("d1", debate, prompts=None)
    assert entries == [
        {"x": 1, "category": "Company News"},
        {"x": 2, "category": "Company News"},  # one category, spelled as first seen
    ]
