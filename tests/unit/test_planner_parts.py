"""The LLM-compiler planner, the parts that need no emulator: a plan's checks and layers, and
the state machine from a plan to its calls, their results, the evaluation and the answer."""

from __future__ import annotations

import pytest

from functions.conductor import parallel, planner
from shared.conductor import plan
from shared.conductor.documents import Step, StepKind


def _steps(*specs: tuple[str, str, list[str], dict]) -> list[plan.PlanStep]:
    return [
        plan.PlanStep(step_id=i, function=f, depends_on=d, parameters=p) for i, f, d, p in specs
    ]


def test_a_plan_runs_in_layers_of_independent_steps():
    steps = _steps(
        ("1", "weather", [], {"city": "Bern"}),
        ("2", "stock", [], {"ticker": "ACME"}),
        ("3", "report", ["1", "2"], {"weather": "$1", "price": "$2"}),
        ("4", "mail", ["3"], {"body": "$3"}),
    )
    plan.check(steps, {"weather", "stock", "report", "mail"})
    assert [sorted(layer) for layer in plan.layers(steps)] == [["1", "2"], ["3"], ["4"]]
    assert plan.resolve(steps[2], {"1": "sunny", "2": 12.5}) == {"weather": "sunny", "price": 12.5}


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (_steps(("1", "nope", [], {})), "'nope' is not one of the tools"),
        (_steps(("1", "a", ["9"], {})), "depends on unknown step(s) ['9']"),
        (_steps(("1", "a", ["2"], {}), ("2", "a", ["1"], {})), "in a cycle"),
        (_steps(("1", "a", [], {}), ("2", "a", [], {"x": "$1"})), "without depending on it"),
        (_steps(("1", "a", [], {}), ("1", "a", [], {})), "used twice"),
    ],
)
def test_a_plan_that_cannot_run_is_refused_with_a_message_for_the_model(steps, message):
    with pytest.raises(plan.PlanError) as refused:
        plan.check(steps, {"a"})
    assert message in str(refused.value)


def test_the_planner_plans_runs_evaluates_then_answers():
    fresh = {"user_query": "q", "execution_plan": [], "evaluate_replanning": False}
    reply = {
        **fresh,
        "execution_plan": [
            {"step_id": "1", "function": "a", "parameters": {}},
            {"step_id": "2", "function": "b", "parameters": {"x": "$1"}, "depends_on": ["1"]},
        ],
    }
    assert planner.phase(fresh) == planner.Phase.PLAN
    step = planner.after(fresh, reply)
    assert [c.step_id for c in step.calls] == ["1", "2"] and not step.ends
    join = Step(index=3, kind=StepKind.JOIN, agent="compiler")
    calls = planner.call_branches(join, step.calls)
    assert [(b.kind, b.depends_on) for b in calls] == [("call", []), ("call", [0])]
    assert [m.branch for m in parallel.branch_messages("c", join, calls)] == [0]  # 1 waits
    done = [
        b.model_copy(update={"output": {"status": "completed", "result": r}})
        for b, r in zip(calls, ["x", "y"], strict=True)
    ]
    judged = planner.executed(step.arguments, done)
    assert judged["evaluate_replanning"] is True
    assert [(s["step_id"], s["result"]) for s in judged["execution_plan"]] == [
        ("1", "x"),
        ("2", "y"),
    ]
    assert planner.phase(judged) == planner.Phase.EVALUATE
    answer_next = planner.after(judged, {**judged, "replan": False})
    assert planner.phase(answer_next.arguments) == planner.Phase.ANSWER
    assert planner.after(answer_next.arguments, {"answer": "42"}).ends
    failed = [done[0], done[1].model_copy(update={"output": {"status": "failed", "result": "E"}})]
    again = planner.executed(step.arguments, failed)
    assert again["replan"] is True and planner.phase(again) == planner.Phase.PLAN
