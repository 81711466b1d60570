"""A run's spend caps (issue 27, item 5): reaching one pauses the run with one record and no
more model calls than were in flight; raising it resumes, and the totals stay exact."""

from __future__ import annotations

import pytest
from conductor_state import attempts, conversation, finished, load_example, start, steps
from experiment_state import settle

from functions import spend
from functions.agents import model_call
from shared.conductor.documents import Status
from shared.models import (
    AgentModelSettings,
    ApiType,
    DocumentError,
    ParticipantProfile,
    ProfileAgentConfig,
)
from shared.stages import AnswerValidationError

pytestmark = pytest.mark.usefixtures("clean")

QUERY = "Hi, I'm Dana. My firewall drops every packet to port 443; what should I check?"
STALLED_ENV = "DLAB_CONDUCTOR_STALLED_SECONDS"


def _calls(db, cid: str) -> int:
    """Model attempts made for the conversation, as its steps' logs show them."""
    return sum(len(attempts(db, cid, f"{s.index:04d}")) for s in steps(db, cid))


def test_a_call_cap_pauses_the_run_and_raising_it_resumes(runtime, db, monkeypatch):
    """The example workflow makes two model calls; with ``maxCalls: 1`` the model sees one, the
    conversation shows ``budgetReached`` and one record, and stays RUNNING (paused: no failure
    counted, however many ticks re-drive it). Raised, the watchdog's next re-drive finishes it."""
    monkeypatch.setenv(STALLED_ENV, "0")
    monkeypatch.setenv("DLAB_BUDGET_REFRESH_SECONDS", "0")  # the raised cap seen at once
    load_example(db)
    db.document("conversations/c1").set(
        {"query": QUERY, "workflowId": "example", "status": "PENDING", "budget": {"maxCalls": 1}}
    )
    for _ in range(4):  # ticks re-drive the paused step: each meets the cap, none calls
        runtime.wait_until_idle(timeout=60)
        runtime.tick()
    runtime.wait_until_idle(timeout=60)

    run = "conversations/c1"
    data = db.document(run).get().to_dict()
    assert data["status"] == Status.RUNNING.value, data
    assert data["budgetReached"]["cap"] == "maxCalls=1" and data["budgetReached"]["calls"] == 1
    assert _calls(db, "c1") == spend.totals(run).calls == 1
    records = [d.to_dict() for d in db.collection(f"{run}/errors").get()]
    assert [r["field"] for r in records] == ["budget"], records

    db.document(run).update({"budget.maxCalls": 100})
    settle(runtime, finished(db, "c1"), rounds=5)
    done = db.document(run).get().to_dict()
    assert conversation(db, "c1").status == Status.DONE, done
    assert "budgetReached" not in done
    assert _calls(db, "c1") == spend.totals(run).calls == 2


def test_a_run_without_a_budget_is_counted_and_never_paused(runtime, db):
    load_example(db)
    start(db, "c2", QUERY)
    settle(runtime, finished(db, "c2"), rounds=5)
    assert conversation(db, "c2").status == Status.DONE
    totals = spend.totals("conversations/c2")
    assert totals.calls == _calls(db, "c2") == 2 and totals.tokens > 0


def test_a_caller_s_parse_that_refuses_is_a_corrective_turn_counted_in_its_run(db):
    """A caller-supplied ``parse`` (the society's, taking prose as a forum post) that raises
    AnswerValidationError gets the corrective turn with its reason; both attempts are logged
    under the call site's collection and counted in the run that collection belongs to."""
    site = model_call.CallSite(
        "s1",
        ParticipantProfile(
            private_id="member-1",
            agent_config=ProfileAgentConfig(
                model_settings=AgentModelSettings(api_type=ApiType.SCRIPTED)
            ),
        ),
        "day-1",
        "society action",
        log_collection="societies/s1/logs",
    )
    seen: list[str] = []

    def parse(text: str) -> str:
        seen.append(text)
        if len(seen) == 1:
            raise AnswerValidationError("say it again")
        return text

    stats = model_call.CallStats()
    answer = model_call.ask(site, "Say something.", None, lambda t: t, parse=parse, stats=stats)
    assert answer == seen[-1] and stats.calls == 2
    logs = [d.to_dict() for d in db.collection("societies/s1/logs").get()]
    statuses = sorted(log["response"]["status"] for log in logs)
    assert statuses == ["INVALID_RESPONSE", "OK"]
    assert spend.totals("societies/s1").calls == 2
    assert spend.totals("experiments/s1").calls == 0


@pytest.mark.parametrize(
    ("budget", "field", "reason"),
    [
        (0, "budget", "to allow no call, set budget.maxCalls to 0"),
        (False, "budget", "must be a map of caps"),
        ("", "budget", "must be a map of caps"),
        ({"maxCalls": True}, "budget.maxCalls", "a number, not true or false"),
        ({"maxCostUsd": False}, "budget.maxCostUsd", "a number, not true or false"),
        ({"maxTokens": 1.5}, "budget.maxTokens", "integer"),
    ],
)
def test_a_budget_that_is_not_a_map_of_numbers_is_an_error_naming_it(db, budget, field, reason):
    """Never ignored (``budget: 0`` was), never taken as 1 (``maxCalls: true`` was)."""
    run = "conversations/b1"
    db.document(run).set({"status": "RUNNING", "budget": budget})
    with pytest.raises(DocumentError) as raised:
        spend.check(run)
    assert (raised.value.document, raised.value.field) == (run, field)
    assert reason in raised.value.reason


def test_a_cap_of_zero_allows_no_call(db):
    run = "conversations/b2"
    db.document(run).set({"status": "RUNNING", "budget": {"maxCalls": 0}})
    with pytest.raises(spend.BudgetReached) as raised:
        spend.check(run)
    assert raised.value.cap == "maxCalls=0"
