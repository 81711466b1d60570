"""What one step comes to, decided outside any transaction (it may ask the model): the step's
output, and the step that follows it or how the conversation ends. ``commit`` applies it."""

from __future__ import annotations

import dataclasses
from typing import Any

from functions import work
from functions.agents.model_call import AnswerFailed
from functions.conductor import calling, workflow
from functions.conductor.history import finished_steps
from shared import paths
from shared.conductor import memory, rendering
from shared.conductor.documents import (
    CONDUCTOR,
    CONVERSATION,
    FINISH,
    STEP,
    Conversation,
    Decision,
    Problem,
    Status,
    Step,
    StepKind,
    WorkflowDoc,
    step_id,
)
from shared.conductor.prompt_args import PromptArgument, PromptValidationError, parse_reply
from shared.llm import ModelError
from shared.llm.base import ProviderFailing
from shared.models import DocumentError
from shared.prompts import PromptTemplateError


@dataclasses.dataclass(frozen=True)
class Completion:
    """Step n done (or failed), and what follows: step n+1, or the conversation's end."""

    output: dict[str, Any] | None = None
    is_final: bool = False
    decision: Decision | None = None
    next_step: Step | None = None
    hand_back: dict[str, Any] | None = None
    """The agent's final arguments, merged into the memory by field name at commit."""
    memory_fields: tuple[str, ...] = ()
    status: Status = Status.RUNNING
    answer: str = ""
    problem: Problem | None = None


def conversation_path(conversation_id: str) -> str:
    return paths.build(CONVERSATION, conversationId=conversation_id)


def step_path(conversation_id: str, index: int) -> str:
    return paths.build(STEP, conversationId=conversation_id, stepId=step_id(index))


def decide(conversation_id: str, conversation: Conversation, step: Step) -> Completion:
    """The step's completion; a document, template or model that stops it is a FAILED
    completion naming the document and field. A provider still failing is raised (retried)."""
    try:
        wf = workflow.read_workflow(conversation.workflow_id)
        if step.index == 0:
            workflow.check_agents(conversation.workflow_id, wf)
        if step.kind == StepKind.CONDUCTOR:
            return _conductor(conversation_id, conversation, step, wf)
        return _agent(conversation_id, conversation, step, wf)
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


def failed(problem: Problem) -> Completion:
    return Completion(status=Status.FAILED, problem=problem)


# --- the conductor -----------------------------------------------------------------------------


def _conductor(cid: str, conv: Conversation, step: Step, wf: WorkflowDoc) -> Completion:
    cfg = wf.conductor
    if conv.dispatches >= cfg.max_dispatches:
        reason = (
            f"dispatch cap reached: {conv.dispatches} dispatches without an answer "
            f"(workflows/{conv.workflow_id} conductor.maxDispatches = {cfg.max_dispatches})"
        )
        problem = Problem(document=conversation_path(cid), field="dispatches", reason=reason)
        decision = Decision(next_agent=FINISH, by="cap", reason=reason)
        return Completion(decision=decision, status=Status.FAILED, problem=problem)
    values = conv.memory_values()
    rule = next((r for r in cfg.rules if r.matches(values)), None)
    if rule is not None:
        decision = Decision(next_agent=rule.then, by="rule", reason=_describe(rule))
    else:
        decision = _ask_conductor(cid, conv, step, wf)
    if decision.next_agent == FINISH:
        answer = decision.answer or str(values.get(cfg.finish_field) or "")
        return Completion(
            decision=decision, output=decision.to_firestore(), status=Status.DONE, answer=answer
        )
    return Completion(
        decision=decision,
        output=decision.to_firestore(),
        next_step=_first_agent_step(conv, step, wf, decision.next_agent),
    )


def _describe(rule: Any) -> str:
    parts = [
        f"missing {rule.when_missing}" if rule.when_missing else "",
        f"present {rule.when_present}" if rule.when_present else "",
    ]
    return " and ".join(p for p in parts if p) or "always"


def _first_agent_step(conv: Conversation, step: Step, wf: WorkflowDoc, name: str) -> Step:
    agent = workflow.read_agent(conv.workflow_id, name)
    code = workflow.agent_code(conv.workflow_id, agent)
    defaults = code.user().model_dump(mode="json")
    return Step(
        index=step.index + 1,
        kind=StepKind.HUMAN if agent.human else StepKind.AGENT,
        agent=name,
        turn=conv.dispatches + 1,
        agent_step=1,
        input=memory.initial_arguments(defaults, conv.memory),
    )


def _ask_conductor(cid: str, conv: Conversation, step: Step, wf: WorkflowDoc) -> Decision:
    cfg = wf.conductor
    agents = [workflow.read_agent(conv.workflow_id, n) for n in wf.agents]
    schema = rendering.conductor_schema(wf.agents)
    variables = {
        "agents": [{"name": a.name, "description": a.description} for a in agents],
        "query": conv.query,
        "memory": conv.memory_values(),
        "history": rendering.history_lines(finished_steps(cid, step.index)),
    }
    base = workflow.workflow_path(conv.workflow_id) + ".conductor"
    prompt = rendering.conductor_prompt(cfg.system_prompt, cfg.user_prompt, variables, base, schema)
    finish_value = conv.memory_values().get(cfg.finish_field)

    def validate(parsed: Any) -> Decision:
        if not isinstance(parsed, dict) or parsed.get("next_agent") not in [*wf.agents, FINISH]:
            raise PromptValidationError(f"next_agent must be one of {[*wf.agents, FINISH]}")
        answer = str(parsed.get("answer") or "")
        if parsed["next_agent"] == FINISH and not (answer or finish_value):
            raise PromptValidationError("to FINISH, give the final answer in the answer field")
        return Decision(next_agent=parsed["next_agent"], by="model", answer=answer)

    settings = cfg.model_settings or wf.model_settings
    return calling.ask_step(
        cid, step_id(step.index), CONDUCTOR, settings, prompt, schema, validate, cfg.max_attempts
    )


# --- a multi-step agent ------------------------------------------------------------------------


def _agent(cid: str, conv: Conversation, step: Step, wf: WorkflowDoc) -> Completion:
    agent = workflow.read_agent(conv.workflow_id, step.agent)
    code = workflow.agent_code(conv.workflow_id, agent)
    doc = workflow.agent_path(conv.workflow_id, agent.name)
    user_args = code.user.model_validate(step.input).model_dump(mode="json")
    schema = code.user.reply_schema(known=user_args)
    prompt = rendering.agent_prompt(
        agent, doc, workflow.system_arguments(agent, code, doc), user_args, conv.query, schema
    )

    def validate(parsed: Any) -> PromptArgument:
        arg = parse_reply(code.user, parsed)  # syntactic
        # semantic: a PromptValidationError goes back to the model; anything else the user's
        # is_valid raises ends the step at once (asking the model again would not fix it)
        is_valid = f"{agent.module}.is_valid"
        work.user_code(is_valid, code.is_valid, arg, passing=(PromptValidationError,))
        return arg

    settings = agent.model_settings or wf.model_settings
    reply = calling.ask_step(
        cid, step_id(step.index), agent.name, settings, prompt, schema, validate, agent.max_attempts
    )
    output = reply.model_dump(mode="json")
    final = bool(work.user_code(f"{agent.module}.is_final", code.is_final, reply))
    if final or step.agent_step >= wf.max_agent_steps:
        conductor = Step(
            index=step.index + 1, kind=StepKind.CONDUCTOR, agent=CONDUCTOR, turn=step.turn
        )
        return Completion(
            output=output,
            is_final=final,
            next_step=conductor,
            hand_back=output,
            memory_fields=tuple(wf.conductor.memory_fields),
        )
    again = Step(
        index=step.index + 1,
        kind=StepKind.AGENT,
        agent=agent.name,
        turn=step.turn,
        agent_step=step.agent_step + 1,
        input=output,
    )
    return Completion(output=output, next_step=again)
