"""An agent's tools, made from the workflow's ``tools`` as Diskurs makes them (its
``load_tools``), and the step's durable tool calls (``tool_calls.StepTools``).

A tool entry names a function in a project file (``modulePath``: the loader resolves
Diskurs' ``moduleName`` through ``customModules`` to it). With ``configs`` or
``dependencies`` the file's ``create_<functionName>`` makes the function: called with the
configs (when given) and each named dependency as a keyword argument, as Diskurs calls it. An
agent's ``tools`` name entries by the entry's ``name`` or, as Diskurs matches them, the
function's name. A made function is kept per process (its file loaded once, again when it
changed), so a factory's setup (a client, a connection) is not redone at every step.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from functions import work
from functions.conductor import workflow
from functions.conductor.completion import step_path
from functions.conductor.tool_calls import StepTools
from functions.conductor.turns import Context
from shared.conductor.documents import AgentDoc, ToolEntry, WorkflowDoc
from shared.llm.tools import Tool, tool_from_function
from shared.models import DocumentError

_LOCK = threading.Lock()
_MADE: dict[tuple[Any, ...], Callable[..., Any]] = {}


def step_tools(
    ctx: Context, agent: AgentDoc, extra: dict[str, Tool] | None = None
) -> StepTools | None:
    """The step's tool use (None when the agent has no tools): its calls under the step, or
    under the parallel branch the step is one of (whose attempts ``ctx.log`` keeps). The
    tools' invisible arguments come from the conversation's ``metadata`` (as Diskurs fills them),
    else from its memory. ``extra``: tools of the backend's own (a heuristic's model client)."""
    tools = {**agent_tools(ctx.conv.workflow_id, ctx.wf, agent), **(extra or {})}
    if not tools:
        return None
    if ctx.log:  # a branch's agent step: under the branch, one prefix per agent step
        owner, prefix = ctx.log.removesuffix("/attempts"), f"{ctx.step.agent_step:02d}."
    else:
        owner, prefix = step_path(ctx.cid, ctx.step.index), ""
    return StepTools(owner, agent.name, tools, {**ctx.memory(), **ctx.conv.metadata}, prefix)


def agent_tools(workflow_id: str, wf: WorkflowDoc, agent: AgentDoc) -> dict[str, Tool]:
    """The agent's tools by the name the model calls them; a name no entry has is an error
    naming the agent's ``tools``."""
    found: dict[str, Tool] = {}
    for name in agent.tools:
        index = next((i for i, e in enumerate(wf.tools) if name in (e.name, e.function_name)), None)
        if index is None:
            known = [e.name for e in wf.tools]
            reason = f"no tool {name!r} among the workflow's tools {known}"
            raise DocumentError(workflow.agent_path(workflow_id, agent.name), "tools", reason)
        made = tool_from_function(_function(workflow_id, wf, index))
        found[made.spec.name] = made
    return found


def _function(workflow_id: str, wf: WorkflowDoc, index: int) -> Callable[..., Any]:
    entry = wf.tools[index]
    doc, field = workflow.workflow_path(workflow_id), f"tools[{index}].modulePath"
    if not entry.module_path:
        reason = "needs modulePath (the loader resolves a moduleName through customModules)"
        raise DocumentError(doc, field, reason)
    where = Path(entry.module_path)
    path = workflow.code_file(str(where.parent), where.name, doc, field)
    module = workflow.import_file(path, doc, field)
    key = (id(module), entry.function_name, json.dumps(entry.to_firestore(), sort_keys=True))
    with _LOCK:
        if key in _MADE:
            return _MADE[key]
    made = _make(module, entry, wf, doc, index)
    with _LOCK:
        return _MADE.setdefault(key, made)


def _make(
    module: Any, entry: ToolEntry, wf: WorkflowDoc, doc: str, index: int
) -> Callable[..., Any]:
    """The function itself, or what its ``create_`` factory makes of the configs and
    dependencies (user code: a factory that raises ends the step)."""
    name, factory_name = entry.function_name, f"create_{entry.function_name}"
    plain = getattr(module, name, None)
    factory = getattr(module, factory_name, None)
    field = f"tools[{index}].functionName"
    if entry.configs is None and not entry.dependencies and callable(plain):
        return plain
    if not callable(factory):
        wanted = factory_name if entry.configs is not None or entry.dependencies else name
        raise DocumentError(doc, field, f"{module.__name__} has no function {wanted!r}")
    dependencies = {d: _dependency(wf, d, doc, index) for d in entry.dependencies or []}
    configs = () if entry.configs is None else (entry.configs,)
    made = work.user_code(
        f"{module.__name__}.{factory_name}", functools.partial(factory, *configs, **dependencies)
    )
    if not callable(made):
        raise DocumentError(
            doc, field, f"{factory_name} returned {type(made).__name__}, not a function"
        )
    return made


def _dependency(wf: WorkflowDoc, name: str, doc: str, index: int) -> Any:
    """A dependency as the workflow's ``toolDependencies`` gives it: an object made by its
    class's ``create(name=..., **parameters)`` when the entry names a class in a file (as
    Diskurs makes it), else the entry's value as written."""
    if name not in wf.tool_dependencies:
        reason = f"no toolDependencies entry {name!r} (known: {sorted(wf.tool_dependencies)})"
        raise DocumentError(doc, f"tools[{index}].dependencies", reason)
    spec = wf.tool_dependencies[name]
    if not isinstance(spec, dict):
        return spec
    class_name = spec.get("className") or spec.get("class_name")
    location = spec.get("modulePath") or spec.get("module_path")
    if not (class_name and location):
        return spec
    field = f"toolDependencies.{name}"
    where = Path(str(location))
    module = workflow.import_file(
        workflow.code_file(str(where.parent), where.name, doc, field), doc, field
    )
    cls = getattr(module, str(class_name), None)
    if cls is None or not callable(getattr(cls, "create", None)):
        raise DocumentError(
            doc, field, f"{module.__name__} has no class {class_name!r} with create()"
        )
    parameters = spec.get("parameters") or {}
    return work.user_code(
        f"{class_name}.create", functools.partial(cls.create, name=name, **parameters)
    )
