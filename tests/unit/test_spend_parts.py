"""The pure parts of the spend module: which run a call counts against, when a cap is reached,
a budget that cannot be read, and how a rate limit is split over its shards."""

from __future__ import annotations

import pytest

from functions import rate_limit, spend
from functions.agents.model_call import CallSite
from functions.settings import RateLimit
from shared.llm.base import Message, ModelRequest
from shared.models import ParticipantProfile


def _site(**fields: str) -> CallSite:
    return CallSite("e1", ParticipantProfile(private_id="p"), "s", "d", **fields)


@pytest.mark.parametrize(
    ("fields", "run"),
    [
        ({}, "experiments/e1"),
        ({"log_collection": "societies/s1/logs"}, "societies/s1"),
        ({"log_collection": "debates/d1/logs"}, "debates/d1"),
        ({"log_collection": "conversations/c1/steps/0001/attempts"}, "conversations/c1"),
        ({"run": "experiments/other"}, "experiments/other"),
    ],
)
def test_a_call_counts_against_its_run(fields: dict[str, str], run: str) -> None:
    assert _site(**fields).run_path == run


def test_the_first_cap_reached_is_named() -> None:
    used = spend.Totals(calls=10, prompt_tokens=400, completion_tokens=100, cost_usd=0.5)
    assert used.reached(spend.Budget()) is None
    assert used.reached(spend.Budget(maxCalls=11, maxTokens=501)) is None
    assert used.reached(spend.Budget(maxCalls=10)) == "maxCalls=10"
    assert used.reached(spend.Budget(maxCalls=99, maxTokens=500)) == "maxTokens=500"
    assert used.reached(spend.Budget(maxCostUsd=0.5)) == "maxCostUsd=0.5"


def test_a_budget_with_an_unknown_field_is_refused() -> None:
    with pytest.raises(ValueError):
        spend.Budget.model_validate({"maxCals": 3})


def test_a_window_s_quota_is_split_over_at_most_its_requests() -> None:
    assert rate_limit._parts(10, 4) == [3, 3, 2, 2]
    limit = RateLimit(requestsPerMinute=3)
    per_window = rate_limit._per_window(limit, 60)
    assert per_window == (3, 0) and rate_limit._shard_count(limit, per_window, 10) == 3
    assert rate_limit._per_window(RateLimit(requestsPerMinute=1000), 6) == (100, 0)


def test_a_request_s_tokens_are_counted_before_it_is_sent() -> None:
    request = ModelRequest(
        prompt="x" * 40,
        response_schema=None,
        model_name="m",
        seed="s",
        history=(Message("assistant", "y" * 8),),
        generation_config={"maxTokens": 100},
    )
    assert rate_limit.request_tokens(request) == 10 + 2 + 100
