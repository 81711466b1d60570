"""The conductor's step, in the order Diskurs' conductor takes it: can the conversation finalize
(its ``can_finalize`` on the long-term memory, or a ``multistep_predicate`` agent asked once)?
then the dispatch cap (Diskurs: ``fail``); then routing rules and route functions; then the model;
then the chosen agent's turn. A Diskurs project's conductor asks the model with its own
templates and prompt argument (``next_agent`` one of its topics); this project's format asks
with the default conductor prompts and may FINISH with an answer."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from functions import work
from functions.conductor import calling, workflow
from functions.conductor.asking import ask, invalid_message, validator
from functions.conductor.completion import Completion, conversation_path, ended
from functions.conductor.history import finished_steps
from functions.conductor.turns import Context, conductor_step, step_to
from shared.conductor import arguments, diskurs_view, rendering
from shared.conductor.documents import (
    CONDUCTOR,
    FINISH,
    AgentDoc,
    Decision,
    Problem,
    RoutingRule,
    Status,
    step_id,
)
from shared.conductor.prompt_args import PromptValidationError


def conduct(ctx: Context) -> Completion:
    cfg = ctx.wf.conductor
    if ctx.diskurs and ctx.memory_class is not None:
        if cfg.can_finalize_agent in ctx.wf.agents and ctx.step.predicate is None:
            return _route(ctx, Decision(next_agent=cfg.can_finalize_agent, by="can_finalize"))
        if ctx.step.predicate or _can_finalize(ctx):
            return dataclasses.replace(_finalize(ctx), settles=cfg.name)
    if _capped(ctx):
        return _cap(ctx)
    decision = _rule(ctx) or _route_function(ctx)
    if decision is None:
        if ctx.diskurs:
            return _diskurs_model(ctx)
        decision = _ask_conductor(ctx)
    if decision.next_agent == FINISH:
        values = ctx.memory()
        answer = decision.answer or str(values.get(cfg.finish_field) or "")
        output = decision.to_firestore()
        return Completion(
            decision=decision, output=output, status=Status.DONE, answer=answer, outcome="answer"
        )
    return _route(ctx, decision)


def _route(ctx: Context, decision: Decision, output: dict[str, Any] | None = None) -> Completion:
    nxt = step_to(ctx, decision.next_agent, ctx.step.index + 1)
    return Completion(decision=decision, output=output or decision.to_firestore(), next_step=nxt)


# --- user functions of a Diskurs conductor --------------------------------------------------


def _conductor_code(ctx: Context) -> tuple[AgentDoc | None, Any]:
    agent = workflow.conductor_agent(ctx.conv.workflow_id, ctx.wf)
    if agent is None:
        return None, None
    return agent, workflow.agent_module(ctx.conv.workflow_id, agent)


def _function(ctx: Context, name: str) -> tuple[str, Callable[..., Any] | None]:
    agent, module = _conductor_code(ctx)
    found = getattr(module, name, None) if name else None
    where = f"{agent.prompt_location}/{agent.code_filename}" if agent else "conductor"
    return f"{where}:{name}", found if callable(found) else None


def _can_finalize(ctx: Context) -> bool:
    name, found = _function(ctx, ctx.wf.conductor.can_finalize_name)
    return found is not None and bool(work.user_code(name, found, ctx.longterm_memory()))


def _as_result(value: Any) -> dict[str, Any]:
    """What a user's ``finalize`` / ``fail`` returned, as a document's map."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if not isinstance(value, dict):
        value = {"result": value}
    return dict(json.loads(json.dumps(value, default=str)))


def _ending(ctx: Context, key: str) -> dict[str, Any]:
    """Diskurs' ``finalize`` or ``fail`` on the memory: the user's, else Diskurs' defaults."""
    field = ctx.wf.conductor.finalize_name if key == "finalize" else ctx.wf.conductor.fail_name
    name, found = _function(ctx, field)
    ltm = ctx.longterm_memory()
    if found is not None:
        return _as_result(work.user_code(name, found, ltm))
    base = _as_result(ltm) if ltm is not None else {}
    if key == "fail":
        base["error"] = "Failed to finalize conversation"
    return base


def _finalize(ctx: Context) -> Completion:
    """The conversation can finalize: to the supervisor, to the finalizer, or ``finalize``. A
    supervisor or finalizer that is no agent of the project ends it with no result (Diskurs
    publishes to a topic nobody reads)."""
    cfg = ctx.wf.conductor
    target = cfg.supervisor or cfg.finalizer_name
    if target:
        decision = Decision(next_agent=target, by="finalize")
        if target in ctx.wf.agents or target in ctx.wf.conductor_names():
            return _route(ctx, decision)
        warning = f"{target!r} is not an agent of this workflow: ended without a final result"
        return ended(
            f"{target} missing", None, decision=decision, note=warning, warnings=(warning,)
        )
    return ended("finalize", _ending(ctx, "finalize"), decision=Decision(next_agent=FINISH))


def _capped(ctx: Context) -> bool:
    """Diskurs counts each conductor's visits (this one included) against its
    ``maxDispatches``; this project's format, the dispatches made. (A conversation started
    before visits were counted: its dispatches and this visit.)"""
    cap = ctx.wf.conductor.max_dispatches
    if not ctx.diskurs:
        return ctx.conv.dispatches >= cap
    if not ctx.conv.visits:
        return ctx.conv.dispatches + 1 >= cap
    return ctx.conv.visits.get(ctx.step.agent, 0) >= cap


def _cap(ctx: Context) -> Completion:
    cfg = ctx.wf.conductor
    reason = (
        f"dispatch cap reached: {ctx.conv.dispatches} dispatches without an answer "
        f"(workflows/{ctx.conv.workflow_id} conductor.maxDispatches = {cfg.max_dispatches})"
    )
    decision = Decision(next_agent=FINISH, by="cap", reason=reason)
    if ctx.diskurs:
        fail = _ending(ctx, "fail")
        return ended("fail", fail, decision=decision, note=reason, settles=cfg.name)
    problem = Problem(document=conversation_path(ctx.cid), field="dispatches", reason=reason)
    return Completion(decision=decision, status=Status.FAILED, problem=problem)


# --- routing before the model ------------------------------------------------------------------


def _rule(ctx: Context) -> Decision | None:
    values = ctx.memory()
    rule = next((r for r in ctx.wf.conductor.rules if r.matches(values)), None)
    if rule is None:
        return None
    return Decision(next_agent=rule.then, by="rule", reason=_describe(rule))


def _describe(rule: RoutingRule) -> str:
    parts = [
        f"missing {rule.when_missing}" if rule.when_missing else "",
        f"present {rule.when_present}" if rule.when_present else "",
    ]
    return " and ".join(p for p in parts if p) or "always"


def _route_function(ctx: Context) -> Decision | None:
    """The first route function whose ``condition(conversation)`` holds (Diskurs' ``rules``)."""
    routes = ctx.wf.conductor.route_functions
    if not routes:
        return None
    doc = workflow.workflow_path(ctx.conv.workflow_id)
    view = diskurs_view.conversation(
        conversation_id=ctx.cid,
        query=ctx.conv.query,
        agent=ctx.wf.conductor.name,
        prompt_argument=_conductor_argument(ctx),
        longterm_memory=ctx.longterm_memory(),
        metadata=ctx.conv.metadata,
    )
    for i, route in enumerate(routes):
        field = f"conductor.routeFunctions[{i}].location"
        path = workflow.code_file(route.location, "rules.py", doc, field)
        condition = getattr(workflow.import_file(path, doc, field), route.condition_name, None)
        if not callable(condition):
            raise workflow.DocumentError(doc, field, f"no {route.condition_name} in {path}")
        if work.user_code(f"{path}:{route.condition_name}", condition, view):
            return Decision(next_agent=route.target_agent, by="rule", reason=route.name)
    return None


def _conductor_argument(ctx: Context) -> Any:
    agent, _ = _conductor_code(ctx)
    if agent is None:
        return None
    code = workflow.agent_code(ctx.conv.workflow_id, agent, topics=ctx.wf.routable())
    return arguments.load(code.user, _initial(ctx, agent, code.user))


def _initial(ctx: Context, agent: AgentDoc, user: arguments.ArgumentClass) -> dict[str, Any]:
    """The conductor's arguments: fresh (or its previous reasoning step's), the memory's input
    fields, its locked fields and the agents' descriptions (Diskurs' ``agent_descriptions``)."""
    if ctx.step.input:
        return dict(ctx.step.input)
    wid = ctx.conv.workflow_id
    descriptions = {n: workflow.read_agent(wid, n).description for n in ctx.wf.routable()}
    locked = {**agent.locked_fields, "agent_descriptions": descriptions}
    return arguments.initial(user, ctx.memory(), locked=locked, from_memory=agent.init_from_memory)


# --- the model ---------------------------------------------------------------------------------


def _diskurs_model(ctx: Context) -> Completion:
    """A Diskurs conductor's model turn: its templates and argument; the reply's
    ``next_agent`` must be one of its topics. Not final (no agent named): another reasoning
    step, ``maxTrials`` at most, then ``fail``, as Diskurs does."""
    cfg = ctx.wf.conductor
    agent, _ = _conductor_code(ctx)
    if agent is None or not cfg.fallback_to_llm:
        reason = "no rule matched and no model to ask (fallbackToLlm: false)"
        if agent is None:
            reason = f"no rule matched and no conductor agent {cfg.name!r} to ask"
        return ended("fail", _ending(ctx, "fail"), note=reason)
    wid = ctx.conv.workflow_id
    code = workflow.agent_code(wid, agent, topics=ctx.wf.routable())
    values = _initial(ctx, agent, code.user)
    schema = arguments.reply_schema(code.user, known=values)
    if "next_agent" in schema["properties"]:
        schema["properties"]["next_agent"]["enum"] = ctx.wf.routable()
    doc = workflow.agent_path(wid, agent.name)
    valid_name = workflow.code_name(agent, "is_valid")
    message = invalid_message(code.is_valid, arguments.load(code.user, values), valid_name)
    prompt = rendering.agent_prompt(
        agent, doc, values, values, ctx.conv.query, schema, lenient=True, user_text=message
    )
    validate = validator(code.user, code.is_valid, values, valid_name)
    reply, note = ask(ctx, agent, prompt, schema, validate)
    output = arguments.dump(reply) if reply is not None else values
    final = reply is not None and bool(
        work.user_code(workflow.code_name(agent, "is_final"), code.is_final, reply)
    )
    hand_back = arguments.outputs_for_memory(code.user, output, ctx.fields)
    memory: dict[str, Any] = {
        "hand_back": hand_back,
        "memory_fields": tuple(hand_back),
        "note": note,
    }
    nxt = str(output.get("next_agent") or "")
    if final and nxt:
        decision = Decision(next_agent=nxt, by="model")
        step = step_to(ctx, nxt, ctx.step.index + 1, hand_back)
        return Completion(decision=decision, output=output, next_step=step, **memory)
    if ctx.step.agent_step + 1 < agent.max_attempts:
        again = conductor_step(ctx, ctx.step.index + 1).model_copy(
            update={"input": output, "agent_step": ctx.step.agent_step + 1}
        )
        return Completion(output=output, next_step=again, **memory)
    reason = "no next agent specified for routing"
    return ended("fail", _ending(ctx, "fail"), output=output, **{**memory, "note": reason})


def _ask_conductor(ctx: Context) -> Decision:
    """This project's conductor: the default (or configured) prompts; the reply names an agent
    or FINISH (with an answer: the reply's, or the memory's ``finishField``)."""
    cfg = ctx.wf.conductor
    wid = ctx.conv.workflow_id
    agents = [workflow.read_agent(wid, n) for n in ctx.wf.agents]
    schema = rendering.conductor_schema(ctx.wf.agents)
    variables = {
        "agents": [{"name": a.name, "description": a.description} for a in agents],
        "query": ctx.conv.query,
        "memory": ctx.memory(),
        "history": rendering.history_lines(finished_steps(ctx.cid, ctx.step.index)),
    }
    base = workflow.workflow_path(wid) + ".conductor"
    prompt = rendering.conductor_prompt(cfg.system_prompt, cfg.user_prompt, variables, base, schema)
    finish_value = ctx.memory().get(cfg.finish_field)
    targets = [*ctx.wf.agents, FINISH]

    def validate(parsed: Any) -> Decision:
        if not isinstance(parsed, dict) or parsed.get("next_agent") not in targets:
            raise PromptValidationError(f"next_agent must be one of {targets}")
        answer = str(parsed.get("answer") or "")
        if parsed["next_agent"] == FINISH and not (answer or finish_value):
            raise PromptValidationError("to FINISH, give the final answer in the answer field")
        return Decision(next_agent=parsed["next_agent"], by="model", answer=answer)

    settings = cfg.model_settings or ctx.wf.model_settings
    decision: Decision = calling.ask_step(
        ctx.cid, step_id(ctx.step.index), CONDUCTOR, settings, prompt, schema, validate,
        cfg.max_attempts, ctx.semantics.validation_message or calling.ValidationMessage.WRAPPED,
    )  # fmt: skip
    return decision
