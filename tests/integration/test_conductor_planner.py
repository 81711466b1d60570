"""The LLM-compiler planner on the real emulators (a Diskurs project with one ``llm_compiler``
agent, tests/integration/planning): the model's plan runs as parallel calls under a join step,
each tool once, a call after the calls it depends on with their results; then the model judges
the results and answers. A plan that cannot run goes back to the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conductor_state import Scripted, attempts, conversation, finished, start, steps
from experiment_state import settle
from tool_state import logging_tools

from emulator.chaos import ChaosSettings
from functions.conductor.wire import ConductorBranch, publish_branches
from shared.conductor.documents import Status
from tools.load_workflow import load

pytestmark = pytest.mark.usefixtures("clean")

PROJECT = Path(__file__).with_name("planning")
QUERY = "What is the weather in Bern, and what does ACME cost? Write me a report."
PLAN = [
    {"step_id": "1", "description": "w", "function": "lookup", "parameters": {"city": "Bern"}},
    {"step_id": "2", "description": "s", "function": "stock", "parameters": {"ticker": "ACME"}},
    {
        "step_id": "3",
        "description": "r",
        "function": "report",
        "parameters": {"weather": "$1", "price": "$2"},
        "depends_on": ["1", "2"],
    },
]
ANSWER = "It is sunny in Bern; ACME costs 12.5."


def load_project(db: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = logging_tools(tmp_path, monkeypatch)
    load(db, PROJECT, "planner")
    return log


def the_model(plan: list[dict[str, Any]]) -> Scripted:
    model = Scripted()
    model.reply("create a plan to solve it", {"execution_plan": plan})
    model.reply("Please evaluate if the execution plan", {"replan": False}, times=-1)
    model.reply("Based on all the gathered information", {"answer": ANSWER}, times=-1)
    return model


def test_the_plan_runs_its_independent_calls_in_parallel_then_answers(
    runtime, db, tmp_path, monkeypatch
):
    log = load_project(db, tmp_path, monkeypatch)
    model = the_model(PLAN)
    with runtime.model_wrapper(model.wrap):
        start(db, "l1", QUERY, workflow_id="planner")
        settle(runtime, finished(db, "l1"), rounds=8)
    conv = conversation(db, "l1")
    assert conv.status == Status.DONE, conv.error
    got = steps(db, "l1")
    assert [(s.kind, s.agent_step) for s in got] == [
        ("agent", 1),  # the plan
        ("join", 0),  # its calls
        ("agent", 2),  # the evaluation
        ("agent", 3),  # the answer
    ]
    branches = sorted(
        (d.to_dict() for d in db.collection("conversations/l1/steps/0001/branches").get()),
        key=lambda b: b["index"],
    )
    assert [(b["kind"], b["dependsOn"], b["status"]) for b in branches] == [
        ("call", [], "done"),
        ("call", [], "done"),
        ("call", [0, 1], "done"),
    ]
    ran = log.read_text().splitlines()
    assert sorted(ran[:2]) == ["lookup Bern", "stock ACME"]  # the independent calls first
    assert ran[2:] == ["report sunny in Bern 12.5"]  # then the results of those it depends on
    executed = got[1].output or {}
    assert [(s["step_id"], s["status"]) for s in executed["execution_plan"]] == [
        ("1", "completed"),
        ("2", "completed"),
        ("3", "completed"),
    ]
    assert executed["execution_plan"][2]["result"] == "sunny in Bern; ACME at 12.5"
    assert executed["evaluate_replanning"] is True
    assert (got[3].output or {})["answer"] == ANSWER
    assert conv.outcome == "no topic"  # Diskurs: an agent without topics ends the conversation
    evaluate = next(r for r in model.prompts if "Please evaluate" in r.prompt)
    assert "sunny in Bern; ACME at 12.5" in evaluate.prompt  # the model sees the results


def test_a_plan_with_a_cycle_goes_back_to_the_model(runtime, db, tmp_path, monkeypatch):
    log = load_project(db, tmp_path, monkeypatch)
    cycle = [
        {**PLAN[0], "depends_on": ["3"]},
        PLAN[1],
        PLAN[2],
    ]
    model = the_model(PLAN)
    model.rules.insert(0, ("create a plan to solve it", {"execution_plan": cycle}, 1))
    with runtime.model_wrapper(model.wrap):
        start(db, "l2", QUERY, workflow_id="planner")
        settle(runtime, finished(db, "l2"), rounds=8)
    assert conversation(db, "l2").status == Status.DONE
    tries = attempts(db, "l2", "0000")
    assert [a["response"]["status"] for a in tries] == ["INVALID_RESPONSE", "OK"]
    assert "depend on each other in a cycle" in tries[0]["response"]["errorMessage"]
    assert len(log.read_text().splitlines()) == 3  # the corrected plan's calls, once each


def test_under_chaos_each_planned_call_runs_once(runtime, db, tmp_path, monkeypatch):
    log = load_project(db, tmp_path, monkeypatch)
    model = the_model(PLAN)
    model.rules[0] = ("create a plan to solve it", {"execution_plan": PLAN}, -1)
    ids = [f"m{i}" for i in range(3)]
    settings = ChaosSettings(duplicate_rate=0.6, fault_rate=0.0, seed=21)
    with runtime.chaos(settings) as run, runtime.model_wrapper(model.wrap):
        for cid in ids:
            start(db, cid, QUERY, workflow_id="planner")
        settle(runtime, finished(db, *ids), rounds=30)
    print(run.describe())
    for cid in ids:
        conv = conversation(db, cid)
        assert conv.status == Status.DONE, (cid, conv.error)
        assert [s.kind for s in steps(db, cid)] == ["agent", "join", "agent", "agent"], cid
    ran = sorted(log.read_text().splitlines())
    assert ran == sorted(["lookup Bern", "stock ACME", "report sunny in Bern 12.5"] * len(ids)), (
        ran
    )  # duplicated and redelivered branches never ran a tool twice
    assert run.counts()["duplicated"] > 0


def test_a_call_cut_off_inside_its_tool_is_not_run_again(runtime, db, tmp_path, monkeypatch):
    """A planned call claimed by an invocation that died inside its tool (claimed, no result):
    the next delivery records it as failed (interrupted) without running the tool, and the
    model replans around it."""
    log = load_project(db, tmp_path, monkeypatch)
    arguments = {"user_query": QUERY, "execution_plan": [PLAN[0]], "replan": False}
    join = {
        "index": 1,
        "kind": "join",
        "agent": "compiler",
        "turn": 1,
        "status": "pending",
        "input": {"branches": 1, "arguments": arguments, "agentStep": 1},
    }
    cut = {
        "index": 0,
        "join": 1,
        "agent": "compiler",
        "kind": "call",
        "status": "pending",
        "claimed": True,  # the dead invocation's claim, before its tool ran
        "input": {"stepId": "1", "function": "lookup", "parameters": {"city": "Bern"}},
    }
    db.document("conversations/l4/steps/0000").set(
        {"index": 0, "kind": "agent", "agent": "compiler", "status": "done", "agentStep": 1}
    )
    db.document("conversations/l4/steps/0001").set(join)
    db.document("conversations/l4/steps/0001/branches/00").set(cut)
    model = the_model(PLAN)
    model.reply("I need to revise my approach", {"execution_plan": [PLAN[1]], "replan": False})
    with runtime.model_wrapper(model.wrap):
        db.document("conversations/l4").set(
            {"query": QUERY, "workflowId": "planner", "status": "RUNNING", "currentStep": 1}
        )
        publish_branches(ConductorBranch(conversation_id="l4", index=1, branch=0))
        settle(runtime, finished(db, "l4"), rounds=8)
    assert conversation(db, "l4").status == Status.DONE
    assert log.read_text().splitlines() == ["stock ACME"]  # the cut-off lookup never ran again
    executed = steps(db, "l4")[1].output or {}
    assert executed["execution_plan"][0]["status"] == "failed"
    assert "interrupted" in executed["execution_plan"][0]["result"]
    assert executed["replan"] is True
