"""A heuristic agent's step: code, no model. Its ``heuristic_sequence(conversation, call_tool,
llm_client)`` (a Diskurs project's, async or not) gets the step as Diskurs' own Conversation
(its fresh arguments, the long-term memory) and returns the conversation whose prompt argument
is the turn's result; then its turn ends (one step), as Diskurs' heuristic agent's does."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from functions import work
from functions.conductor import toolbox, workflow
from functions.conductor.completion import Completion
from functions.conductor.turns import Context, after_step
from shared.conductor import arguments, diskurs_view
from shared.models import DocumentError


def _run(sequence: Callable[..., Any], conversation: Any, call_tool: Any) -> Any:
    """The sequence's result, awaited when it is a coroutine (Diskurs' are async)."""
    found = sequence(conversation=conversation, call_tool=call_tool, llm_client=None)
    if inspect.isawaitable(found):
        return asyncio.run(_awaited(found))
    return found


async def _awaited(found: Any) -> Any:
    return await found


def heuristic(ctx: Context) -> Completion:
    wid = ctx.conv.workflow_id
    agent = workflow.read_agent(wid, ctx.step.agent)
    code = workflow.agent_code(wid, agent)
    doc = workflow.agent_path(wid, agent.name)
    sequence = getattr(code.module, agent.heuristic_sequence_name, None)
    if not callable(sequence):
        reason = f"{agent.code_filename} has no function {agent.heuristic_sequence_name!r}"
        raise DocumentError(doc, "heuristicSequenceName", reason)
    view = diskurs_view.conversation(
        conversation_id=ctx.cid,
        query=ctx.conv.query,
        agent=agent.name,
        prompt_argument=arguments.load(code.user, ctx.step.input),
        longterm_memory=ctx.longterm_memory(),
        metadata=ctx.conv.metadata,
    )
    name = workflow.code_name(agent, agent.heuristic_sequence_name)
    tools = toolbox.step_tools(ctx, agent)  # each call recorded: a redelivery runs none again
    call_tool = tools.call_tool if tools is not None else None
    result = work.user_code(name, _run, sequence, view, call_tool)
    found = getattr(result, "prompt_argument", None)
    output = dict(ctx.step.input) if found is None else arguments.dump(found)
    return after_step(ctx, agent, code.user, output, final=True)
