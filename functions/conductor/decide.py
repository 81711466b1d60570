"""What one step comes to, decided outside any transaction (it may ask the model): the step's
output, and the step that follows it or how the conversation ends. ``commit`` applies it.

A conductor step is ``conducting``'s; an agent's step goes by the agent's type: a heuristic
agent runs its code (``heuristic``), the others ask the model for their arguments (here); what
follows a step of a turn is ``turns``'."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from functions import work
from functions.agents.model_call import AnswerFailed
from functions.conductor import parallel_steps, planner, toolbox, workflow
from functions.conductor.asking import ask, invalid_message, validator
from functions.conductor.completion import (
    Completion,
    conversation_path,
    ended,
    failed,
    step_path,
)
from functions.conductor.conducting import conduct
from functions.conductor.heuristic import heuristic
from functions.conductor.turns import Context, after_step, first_step, go_on
from shared.conductor import arguments, rendering
from shared.conductor.documents import (
    HEURISTICS,
    AgentType,
    Conversation,
    Problem,
    Step,
    StepKind,
)
from shared.llm import ModelError
from shared.llm.base import ProviderFailing
from shared.models import DocumentError
from shared.prompts import PromptTemplateError

__all__ = ["Completion", "conversation_path", "decide", "ended", "failed", "step_path"]

AgentStep = Callable[[Context], Completion]


def decide(conversation_id: str, conversation: Conversation, step: Step) -> Completion:
    """The step's completion; a document, template or model that stops it is a FAILED
    completion naming the document and field. A provider still failing is raised (retried)."""
    try:
        wf = workflow.read_workflow(conversation.workflow_id)
        if step.index == 0:
            workflow.check_agents(conversation.workflow_id, wf)
        ctx = Context.of(conversation_id, conversation, step, wf)
        if step.kind == StepKind.CONDUCTOR:  # as its conductor runs the workflow (nested)
            led = dataclasses.replace(ctx, wf=wf.led_by(step.agent))
            return go_on(led, conduct(led))
        if step.kind == StepKind.JOIN:
            return go_on(ctx, parallel_steps.join(ctx))
        return go_on(ctx, agent_step(ctx))
    except ProviderFailing:
        raise
    except DocumentError as error:
        return failed(Problem(document=error.document, field=error.field, reason=error.reason))
    except PromptTemplateError as error:
        document, _, field = error.template_name.rpartition(".")
        return failed(Problem(document=document, field=field, reason=str(error)))
    except AnswerFailed as error:
        where = step_path(conversation_id, step.index)
        reason = f"no valid reply after {error.attempts} attempt(s): {error.last_error}"
        return failed(Problem(document=where, field="output", reason=reason))
    except ModelError as error:
        where = workflow.workflow_path(conversation.workflow_id)
        field = "modelSettings" if error.status == "CONFIG_ERROR" else "(model)"
        return failed(Problem(document=where, field=field, reason=f"{error.status}: {error}"))


def agent_step(ctx: Context) -> Completion:
    """An agent's step, by its type (recorded on the step when it was created)."""
    if ctx.step.index == 0 and not ctx.step.input:  # a first contact agent: its fresh arguments
        first = first_step(ctx, ctx.step.agent, 0)
        ctx = dataclasses.replace(ctx, step=ctx.step.model_copy(update=_fresh(first)))
    kind = ctx.step.agent_type or AgentType.MULTISTEP
    if kind in HEURISTICS:
        return heuristic(ctx)
    return BY_TYPE.get(AgentType(kind), multistep)(ctx)


def _fresh(first: Step) -> dict[str, object]:
    return {"input": first.input, "agent_type": first.agent_type, "turn": first.turn}


def multistep(ctx: Context) -> Completion:
    """A multi-step agent's step: its prompts with the step's arguments, the model's reply
    validated into new arguments (Diskurs' ``update`` for a Diskurs class), its ``is_final``."""
    wid = ctx.conv.workflow_id
    agent = workflow.read_agent(wid, ctx.step.agent)
    code = workflow.agent_code(wid, agent)
    doc = workflow.agent_path(wid, agent.name)
    current = arguments.load(code.user, ctx.step.input)
    values = arguments.dump(current)
    schema = arguments.reply_schema(code.user, known=values)
    system = values if ctx.diskurs and code.system is None else None
    system_args = system or workflow.system_arguments(agent, code, doc)
    valid_name = workflow.code_name(agent, "is_valid")
    message = invalid_message(code.is_valid, current, valid_name) if ctx.diskurs else None
    prompt = rendering.agent_prompt(
        agent, doc, system_args, values, ctx.conv.query, schema, lenient=ctx.diskurs,
        user_text=message,
    )  # fmt: skip
    validate = validator(code.user, code.is_valid, values, valid_name)
    reply, note = ask(ctx, agent, prompt, schema, validate, toolbox.step_tools(ctx, agent))
    arg = reply if reply is not None else arguments.load(code.user, values)
    final = bool(work.user_code(workflow.code_name(agent, "is_final"), code.is_final, arg))
    return after_step(ctx, agent, code.user, arguments.dump(arg), final=final, note=note)


BY_TYPE: dict[AgentType, AgentStep] = {
    AgentType.LLM_COMPILER: functools.partial(planner.planner_agent, multistep=multistep),
    AgentType.PARALLEL_MULTISTEP: functools.partial(
        parallel_steps.parallel_agent, multistep=multistep
    ),
}
"""Agent types whose steps are not a multi-step agent's (``parallel_multistep``'s fan-out, the
LLM compiler's plan): their modules register here; the others run as ``multistep``."""
