"""A parallel multi-step agent's steps as the conductor decides them: its turn's end fans out,
a branch's agent step, and the join (the durable mechanism is ``functions.conductor.parallel``;
the planner's join is ``functions.conductor.planner``'s).

Each is a multi-step agent's step (``decide.multistep``, passed in: the prompts, the model's
reply validated into the arguments, ``is_final``) whose completion is read, not re-implemented:
a step that continues the turn goes on as it is; one that ends the turn becomes the fan-out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from functions.conductor import parallel, planner, workflow
from functions.conductor.completion import Completion
from functions.conductor.turns import Context, after_step
from shared.conductor.branches import Branch, attempts_collection
from shared.conductor.documents import AgentType, Conversation, Step, StepKind, step_id

AgentStep = Callable[[Context], Completion]


def _continues(ctx: Context, done: Completion) -> bool:
    """The step's completion is the same turn's next step (not the turn's end)."""
    nxt = done.next_step
    return (
        nxt is not None
        and nxt.kind == StepKind.AGENT
        and nxt.agent == ctx.step.agent
        and nxt.turn == ctx.step.turn
        and nxt.agent_step == ctx.step.agent_step + 1
    )


def parallel_agent(ctx: Context, multistep: AgentStep) -> Completion:
    """A step of the parallel agent's own turn: when the turn ends, its branch function splits
    the final arguments and the commit creates the join step with one branch each. After the
    join (``invokeOnFinal``) its turn ends as any agent's."""
    done = multistep(ctx)
    if _continues(ctx, done):
        if ctx.step.after_join and done.next_step is not None:
            nxt = done.next_step.model_copy(update={"after_join": True})
            return dataclasses.replace(done, next_step=nxt)
        return done
    if ctx.step.after_join or done.output is None:
        return done
    wid = ctx.conv.workflow_id
    agent = workflow.read_agent(wid, ctx.step.agent)
    code = workflow.agent_code(wid, agent)
    functions = parallel.agent_parallel_code(wid, agent)
    arguments = parallel.branch_arguments(functions, code.user, done.output, agent.name, ctx.cid)
    join = parallel.join_step(ctx.step, len(arguments))
    return Completion(
        output=done.output,
        is_final=done.is_final,
        note=done.note,
        next_step=join,
        branches=parallel.new_branches(join, arguments),
    )


def branch_reply(
    multistep: AgentStep, cid: str, conv: Conversation, branch: Branch
) -> parallel.BranchReply:
    """One agent step of a branch: the agent's step on the branch's arguments, its attempts
    logged under the branch. Its turn goes on, or ends (``is_final``, or the step cap)."""
    wf = workflow.read_workflow(conv.workflow_id)
    agent = workflow.read_agent(conv.workflow_id, branch.agent)
    join = branch.join
    step = Step(
        index=join,
        kind=StepKind.AGENT,
        agent=agent.name,
        agent_type=agent.type,
        turn=0,
        agent_step=branch.agent_step,
        input=branch.input,
    )
    ctx = dataclasses.replace(
        Context.of(cid, conv, step, wf),
        log=attempts_collection(cid, step_id(join), branch.index),
    )
    done = multistep(ctx)
    output = done.output or {}
    return parallel.BranchReply(output, done.is_final, last=not _continues(ctx, done))


def join(ctx: Context) -> Completion:
    """Every branch is done: the join function makes one prompt argument of their outputs;
    the agent's turn goes on from it (``invokeOnFinal``, Diskurs' default), or ends with it."""
    wid = ctx.conv.workflow_id
    agent = workflow.read_agent(wid, ctx.step.agent)
    code = workflow.agent_code(wid, agent)
    branches = parallel.read_branches(ctx.cid, ctx.step.index)
    if agent.type == AgentType.LLM_COMPILER:
        return planner.joined(ctx, agent, code.user, branches)
    outputs = parallel.outputs(branches)
    functions = parallel.agent_parallel_code(wid, agent)
    joined = parallel.joined_argument(functions, code.user, outputs, agent.name, ctx.cid)
    if not agent.invoke_on_final:
        return after_step(ctx, agent, code.user, joined, final=True)
    again = Step(
        index=ctx.step.index + 1,
        kind=StepKind.AGENT,
        agent=agent.name,
        agent_type=agent.type,
        turn=ctx.step.turn,
        agent_step=1,
        input=joined,
        after_join=True,
    )
    return Completion(output=joined, next_step=again)
