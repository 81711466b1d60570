"""An agent's turn: its first step (its arguments from the memory), and what follows a step of
it: another step of the same turn, or the turn's end, which hands the final arguments to the
memory and goes where the agent's type and ``topics`` say (the conductor; the next agent, and
after its chain each further topic; the conversation's end for a finalizer, or for an agent
with no topic, as in Diskurs)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from diskurs.entities import LongtermMemory

from functions.conductor import workflow
from functions.conductor.completion import Completion, ended, step_path
from functions.conductor.settings import conductor_settings
from shared.conductor import arguments
from shared.conductor.documents import (
    CONDUCTOR,
    FINALIZERS,
    AgentDoc,
    Conversation,
    Semantics,
    Status,
    Step,
    StepKind,
    WorkflowDoc,
    WorkflowFormat,
)


@dataclasses.dataclass(frozen=True)
class Context:
    """One step's view of its conversation and workflow."""

    cid: str
    conv: Conversation
    step: Step
    wf: WorkflowDoc
    semantics: Semantics
    memory_class: type[LongtermMemory] | None
    fields: tuple[str, ...]
    log: str = ""
    """Where the step's model attempts are logged ('': under the step; a branch's under it)."""

    @classmethod
    def of(cls, cid: str, conv: Conversation, step: Step, wf: WorkflowDoc) -> Context:
        found = workflow.memory_class(conv.workflow_id, wf)
        return cls(
            cid=cid,
            conv=conv,
            step=step,
            wf=wf,
            semantics=conductor_settings().semantics(wf.semantics),
            memory_class=found,
            fields=tuple(workflow.memory_fields(wf, found)),
        )

    @property
    def diskurs(self) -> bool:
        return self.wf.format == WorkflowFormat.DISKURS

    @property
    def step_doc(self) -> str:
        return step_path(self.cid, self.step.index)

    def memory(self, more: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The memory's values (with ``more`` merged over them: a hand-back not yet committed);
        with a ``LongtermMemory`` class, all its fields (``user_query`` the query), as Diskurs
        initializes arguments from the instance."""
        values = {**self.conv.memory_values(), **(more or {})}
        if self.memory_class is None:
            return values
        found = arguments.memory_instance(self.memory_class, values, self.conv.query)
        return dict(found.to_dict())

    def longterm_memory(self, more: Mapping[str, Any] | None = None) -> Any:
        """The memory as the project's ``LongtermMemory`` instance (None without one)."""
        if self.memory_class is None:
            return None
        return arguments.memory_instance(self.memory_class, self.memory(more), self.conv.query)


def conductor_step(
    ctx: Context, index: int, *, predicate: bool | None = None, name: str = ""
) -> Step:
    """A step of the conductor (``name``: one of a Diskurs project's conductors)."""
    return Step(
        index=index,
        kind=StepKind.CONDUCTOR,
        agent=CONDUCTOR if not ctx.diskurs else name or ctx.wf.conductor.name,
        turn=ctx.step.turn,
        predicate=predicate,
    )


def first_step(
    ctx: Context, name: str, index: int, memory: Mapping[str, Any] | None = None
) -> Step:
    """The first step of ``name``'s turn: its arguments fresh, the memory's values of the
    fields it reads, its locked values (``memory``: hand-back values not yet committed)."""
    agent = workflow.read_agent(ctx.conv.workflow_id, name)
    code = workflow.agent_code(ctx.conv.workflow_id, agent)
    values = arguments.initial(
        code.user,
        ctx.memory(memory),
        locked=agent.locked_fields,
        from_memory=agent.init_from_memory,
    )
    return Step(
        index=index,
        kind=StepKind.HUMAN if agent.human else StepKind.AGENT,
        agent=name,
        agent_type=agent.type,
        turn=ctx.conv.dispatches + 1,
        agent_step=1,
        input=values,
    )


def step_to(ctx: Context, name: str, index: int, memory: Mapping[str, Any] | None = None) -> Step:
    """The step that gives the conversation to ``name`` (a conductor, or an agent's turn)."""
    if name in (CONDUCTOR, *ctx.wf.conductor_names()) and name not in ctx.wf.agents:
        return conductor_step(ctx, index, name=name)
    return first_step(ctx, name, index, memory)


def after_step(
    ctx: Context,
    agent: AgentDoc,
    user: arguments.ArgumentClass,
    output: dict[str, Any],
    *,
    final: bool,
    note: str = "",
) -> Completion:
    """Another step of the turn (not final, steps left), or the turn's end."""
    index = ctx.step.index + 1
    if not final and ctx.step.agent_step < agent.steps_per_turn(ctx.wf):
        again = Step(
            index=index,
            kind=StepKind.AGENT,
            agent=agent.name,
            agent_type=agent.type,
            turn=ctx.step.turn,
            agent_step=ctx.step.agent_step + 1,
            input=output,
        )
        return Completion(output=output, next_step=again, note=note)
    hand_back = arguments.outputs_for_memory(user, output, ctx.fields)
    done: dict[str, Any] = {
        "output": output,
        "is_final": final,
        "hand_back": hand_back,
        "memory_fields": tuple(hand_back),
        "note": note,
    }
    if agent.type in FINALIZERS:
        wanted = agent.final_properties
        result = {k: output.get(k) for k in wanted} if wanted is not None else dict(output)
        stored = ctx.memory(hand_back) if ctx.conv.store_id else None
        return ended("finalizer", result, stored=stored, **done)
    asking = ctx.wf.asking(agent.name) if ctx.diskurs else None
    if asking is not None:
        predicate = bool(output.get("can_finalize"))
        step = conductor_step(ctx, index, predicate=predicate, name=asking.name)
        return Completion(next_step=step, **done)
    if agent.topics is None:
        return Completion(next_step=conductor_step(ctx, index), **done)
    if not agent.topics:  # Diskurs publishes to no one: the conversation ends, with no result
        return ended("no topic", None, **done)
    first, *later = agent.topics
    return Completion(next_step=step_to(ctx, first, index, hand_back), queue=tuple(later), **done)


def go_on(ctx: Context, done: Completion) -> Completion:
    """Diskurs publishes a turn to each of its agent's topics in turn, each topic's chain of
    turns to its end before the next: a conversation that would end while topics are queued
    goes on with the last one queued, from the memory it was queued with. What the ended chain
    gave stays: its result (Diskurs' one result holder; a later result replaces it), its
    outcome, its step's record."""
    if done.status != Status.DONE or not ctx.conv.queued:
        return done
    queued = ctx.conv.queued[-1]
    there = dataclasses.replace(ctx, conv=ctx.conv.model_copy(update={"memory": queued.memory}))
    nxt = step_to(there, queued.agent, ctx.step.index + 1)
    return dataclasses.replace(done, status=Status.RUNNING, next_step=nxt, resume=queued)
