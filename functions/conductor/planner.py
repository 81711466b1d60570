"""The LLM-compiler planner (Diskurs' ``llm_compiler`` agent): plan, run the plan's calls in
parallel, then evaluate, replan or answer, as agent steps of one turn.

Its prompt argument is Diskurs' ``PlanningPromptArgument`` and its templates Diskurs' planning
templates, so each of its steps is an ordinary agent step; what the reply means follows from the
arguments it answered (as Diskurs' templates branch on them):

- ``evaluate_replanning``: the model judged the executed plan; next, a new plan (``replan``)
  or the answer;
- no plan yet, or ``replan``: the reply is a plan; it is checked (``shared.conductor.plan``: an
  unknown tool, a dangling dependency or a cycle goes back to the model as a corrective turn)
  and fanned out as one ``call`` branch per planned call under a join step
  (``functions.conductor.parallel``): a call runs once its dependencies are done, so the
  independent ones run in parallel, and the join puts the results into the plan;
- otherwise the reply is the answer: the turn hands back.

A planned call is a tool call recorded on its branch: claimed in a transaction before the tool
runs and its result stored after, so a redelivered or re-driven branch never runs it twice (a
run cut off by a crash is recorded as failed, and the model replans around it).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any

from functions import store, transactions
from functions.conductor import parallel, toolbox, workflow
from functions.conductor.completion import Completion
from functions.conductor.turns import Context, after_step
from shared.conductor import plan
from shared.conductor.branches import Branch, JoinInput, branch_path
from shared.conductor.documents import (
    AgentDoc,
    AgentType,
    Conversation,
    Step,
    StepKind,
    StepStatus,
    step_id,
)
from shared.llm.base import ToolCall
from shared.llm.tools import Tool, run_tool
from shared.models import parse_document

AgentStep = Callable[[Context], Completion]

CALL = "call"
"""The branch kind of a planned call."""
COMPLETED, FAILED = "completed", "failed"
INTERRUPTED = "interrupted: its run was cut off (a crash or a timeout); not run again"


class Phase(StrEnum):
    PLAN = "plan"
    EVALUATE = "evaluate"
    ANSWER = "answer"


def phase(arguments: Mapping[str, Any]) -> Phase:
    """What the step's reply is, from the arguments it answered (Diskurs' templates' order)."""
    if arguments.get("evaluate_replanning"):
        return Phase.EVALUATE
    if not arguments.get("execution_plan") or arguments.get("replan"):
        return Phase.PLAN
    return Phase.ANSWER


def planned(output: Mapping[str, Any]) -> list[plan.PlanStep]:
    return [plan.PlanStep.model_validate(s) for s in output.get("execution_plan") or []]


def check_reply(output: Mapping[str, Any], tools: set[str]) -> None:
    """A plan reply that cannot run raises PlanError (its message is the corrective turn)."""
    plan.check(planned(output), tools)


@dataclasses.dataclass(frozen=True)
class Next:
    """What follows a planner step: a fan-out of calls, the next step's arguments, or the end
    of the turn (``arguments`` handed back)."""

    arguments: dict[str, Any]
    calls: list[plan.PlanStep] = dataclasses.field(default_factory=list)
    ends: bool = False


def after(answered: Mapping[str, Any], output: dict[str, Any]) -> Next:
    """The planner's state machine: ``answered`` the step's arguments, ``output`` its reply."""
    current = phase(answered)
    if current == Phase.EVALUATE:  # a judgement, not a plan: the judged plan stays (a reply
        judged = answered.get("execution_plan") or []  # without one has Diskurs' default [])
        return Next({**output, "execution_plan": judged, "evaluate_replanning": False})
    if current == Phase.ANSWER:
        return Next(output, ends=True)
    calls = planned(output)
    if not calls:  # nothing to run: judge the (empty) plan, as Diskurs' executor does
        return Next({**output, "replan": False, "evaluate_replanning": True})
    return Next({**output, "replan": False}, calls=calls)


def call_branches(join: Step, calls: list[plan.PlanStep]) -> tuple[Branch, ...]:
    """One ``call`` branch per planned call, its dependencies as branch indices."""
    index = {c.step_id: i for i, c in enumerate(calls)}
    return tuple(
        Branch(
            index=i,
            join=join.index,
            agent=join.agent,
            kind=CALL,
            input=c.to_firestore(),
            depends_on=sorted(index[d] for d in c.depends_on),
        )
        for i, c in enumerate(calls)
    )


def executed(arguments: dict[str, Any], branches: list[Branch]) -> dict[str, Any]:
    """The join: the plan with each call's result and status; a failed call asks for a new plan
    (Diskurs: ``replan`` with its explanation), else the model judges the results."""
    steps = [{**_step(b).model_dump(mode="json"), **(b.output or {})} for b in branches]
    if all(s.get("status") == COMPLETED for s in steps):
        return {**arguments, "execution_plan": steps, "evaluate_replanning": True}
    explanation = "Not all steps completed successfully in the plan."
    return {**arguments, "execution_plan": steps, "replan": True, "replan_explanation": explanation}


# --- a planned call ----------------------------------------------------------------------------

RunCall = Callable[[str, dict[str, Any]], tuple[Any, bool]]
"""Runs the named tool with its arguments: (its result, whether it failed)."""


def _value(text: Any) -> Any:
    """A result as a later call's parameter: the JSON it is, or the text."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def call_reply(cid: str, branch: Branch, run: RunCall) -> parallel.BranchReply:
    """Run one planned call, its ``$id`` parameters resolved from the calls it depends on; a
    call claimed before (a run cut off) is not run again but recorded as failed."""
    step = _step(branch)
    if not _claim(cid, branch):
        return parallel.BranchReply({"status": FAILED, "result": INTERRUPTED}, True)
    siblings = {b.index: b for b in parallel.read_branches(cid, branch.join)}
    results = {
        _step(siblings[d]).step_id: _value((siblings[d].output or {}).get("result"))
        for d in branch.depends_on
    }
    result, failed = run(step.function, plan.resolve(step, results))
    status = FAILED if failed else COMPLETED
    return parallel.BranchReply({"status": status, "result": result}, True)


def _step(branch: Branch) -> plan.PlanStep:
    return plan.PlanStep.model_validate(branch.input)


def _claim(cid: str, branch: Branch) -> bool:
    """Mark the call as started (True), unless a run started it before and never finished."""
    path = branch_path(cid, step_id(branch.join), branch.index)

    def body(transaction: store.Transaction) -> bool:
        now = parse_document(Branch, path, store.snapshot_data(path, transaction))
        if now.status != StepStatus.PENDING or now.claimed:
            return False
        transaction.update(store.ref(path), Branch.fields(claimed=True))
        return True

    return transactions.run(body)


# --- the planner's steps -----------------------------------------------------------------------


def describe(tools: Mapping[str, Tool]) -> list[dict[str, Any]]:
    """The tools as Diskurs' planning template lists them: name, description, arguments."""
    return [
        {
            "name": name,
            "description": tool.spec.description,
            "arguments": dict(tool.spec.parameters.get("properties", {})),
        }
        for name, tool in tools.items()
    ]


def planner_agent(ctx: Context, multistep: AgentStep) -> Completion:
    """A step of the planner's turn: the model's reply (a plan, an evaluation, the answer), then
    the calls fanned out under a join step, the next step of the turn, or the turn's end."""
    wid = ctx.conv.workflow_id
    agent = workflow.read_agent(wid, ctx.step.agent)
    given = {
        **ctx.step.input,
        "tools": describe(toolbox.agent_tools(wid, ctx.wf, agent)),
        "user_query": ctx.step.input.get("user_query") or ctx.conv.query,
    }
    ctx = dataclasses.replace(ctx, step=ctx.step.model_copy(update={"input": given}))
    done = multistep(ctx)
    if done.output is None:
        return done
    nxt = after(given, done.output)
    if nxt.ends or ctx.step.agent_step >= agent.steps_per_turn(ctx.wf):
        return done  # the answer (or the turn's last step): it ends as any agent's turn
    if nxt.calls:
        join = parallel.join_step(ctx.step, len(nxt.calls), nxt.arguments)
        calls = call_branches(join, nxt.calls)
        return Completion(output=done.output, note=done.note, next_step=join, branches=calls)
    again = _next(ctx.step, ctx.step.index + 1, ctx.step.agent_step + 1, nxt.arguments)
    return Completion(output=done.output, note=done.note, next_step=again)


def _next(step: Step, index: int, agent_step: int, arguments: dict[str, Any]) -> Step:
    return Step(
        index=index,
        kind=StepKind.AGENT,
        agent=step.agent,
        agent_type=AgentType.LLM_COMPILER,
        turn=step.turn,
        agent_step=agent_step,
        input=arguments,
    )


def joined(ctx: Context, agent: AgentDoc, user: Any, branches: list[Branch]) -> Completion:
    """The plan's calls are done: the plan with their results; the turn goes on (the model
    evaluates them, or replans around a failed call), or ends if it has no step left."""
    given = JoinInput.model_validate(ctx.step.input)
    arguments = executed(given.arguments, branches)
    if given.agent_step >= agent.steps_per_turn(ctx.wf):
        return after_step(ctx, agent, user, arguments, final=False)
    again = _next(ctx.step, ctx.step.index + 1, given.agent_step + 1, arguments)
    return Completion(output=arguments, next_step=again)


def call_turn(cid: str, conv: Conversation, branch: Branch) -> parallel.BranchReply:
    """A planned call's branch: the agent's tool (``toolbox``) run once, the memory filling its
    invisible arguments; a tool that raises, or one the agent does not have, is a failed call."""
    wf = workflow.read_workflow(conv.workflow_id)
    agent = workflow.read_agent(conv.workflow_id, branch.agent)
    tools = toolbox.agent_tools(conv.workflow_id, wf, agent)

    def run(name: str, arguments: dict[str, Any]) -> tuple[Any, bool]:
        call = ToolCall(id=f"{branch.join:04d}-{branch.index:02d}", name=name, arguments=arguments)
        result = run_tool(tools, call, conv.memory_values())
        return result.content, result.is_error

    return call_reply(cid, branch, run)
