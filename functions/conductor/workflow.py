"""A workflow as the functions use it: its documents from Firestore (edited in the console, read
at each step) and each agent's deployed ``prompt.py`` (argument classes, ``is_valid``,
``is_final``): user code, each call of it through ``work.user_code``.

An agent's code is a module under ``workflows/`` (this project's format) or a file named by path
(a Diskurs project's ``prompt.location``), which must lie under the deployed ``workflows/`` or a
folder of ``DLAB_WORKFLOW_DIRS``: a document edited in the console cannot make the functions run
any other file."""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import typing
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from diskurs.entities import LongtermMemory
from diskurs.llm_compiler.prompts import PlanningPromptArgument
from diskurs.prompt import DefaultConductorPromptArgument
from pydantic import ValidationError

from functions import store, work
from functions.conductor.settings import conductor_settings
from shared import paths
from shared.conductor import arguments, checks, plan
from shared.conductor.arguments import ArgumentClass
from shared.conductor.code_files import load_file
from shared.conductor.documents import (
    AGENT,
    WORKFLOW,
    AgentDoc,
    AgentType,
    WorkflowDoc,
    WorkflowFormat,
)
from shared.conductor.prompt_args import PromptValidationError
from shared.models import DocumentError

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOYED = REPO_ROOT / "workflows"


@dataclasses.dataclass(frozen=True)
class AgentCode:
    """What an agent's ``prompt.py`` gives: the argument classes and the two rules."""

    system: ArgumentClass | None
    user: ArgumentClass
    is_valid: Callable[[Any], Any]
    is_final: Callable[[Any], Any]
    module: ModuleType | None = None
    """The module itself, for what else the agent's type reads from it (a conductor's
    ``can_finalize``, ``fail``; a heuristic agent's sequence)."""


def workflow_path(workflow_id: str) -> str:
    return paths.build(WORKFLOW, workflowId=workflow_id)


def agent_path(workflow_id: str, name: str) -> str:
    return paths.build(AGENT, workflowId=workflow_id, agentName=name)


def read_workflow(workflow_id: str) -> WorkflowDoc:
    """The workflow as the console left it; an unknown key, a rule naming no agent or a
    conductor template that does not compile is a DocumentError (``shared.conductor.checks``)."""
    path = workflow_path(workflow_id)
    return checks.parse_workflow(path, store.snapshot_data(path))


def read_agent(workflow_id: str, name: str) -> AgentDoc:
    path = agent_path(workflow_id, name)
    return checks.parse_agent(path, store.snapshot_data(path))


def check_agents(workflow_id: str, workflow: WorkflowDoc) -> None:
    """Every agent's document, checked at a conversation's first step: a fault in an agent
    the conductor reaches later ends the conversation before any model call."""
    for name in workflow.agents:
        read_agent(workflow_id, name)


def _always(_: Any) -> bool:
    return True


def _class(module: Any, name: str, doc: str, field: str) -> ArgumentClass:
    found = getattr(module, name, None)
    if not arguments.is_argument_class(found):
        reason = f"{module.__name__} has no PromptArgument class named {name!r}"
        raise DocumentError(doc, field, reason)
    return typing.cast(ArgumentClass, found)


def code_name(agent: AgentDoc, function: str) -> str:
    """A user function as error records name it: ``workflows.x.prompt.is_valid``, or the file's
    path and the function (``agents/first/prompt.py:is_valid``)."""
    if agent.module:
        return f"{agent.module}.{function}"
    return f"{agent.prompt_location}/{agent.code_filename}:{function}"


def allowed_roots() -> list[Path]:
    extra = conductor_settings().workflow_dirs.split(":")
    return [DEPLOYED, *(Path(p).resolve() for p in extra if p)]


def code_file(location: str, filename: str, doc: str, field: str) -> Path:
    """The file ``filename`` in the folder ``location`` (relative to the deployed source, or
    absolute), refused unless it lies under an allowed root."""
    folder = Path(location)
    path = ((folder if folder.is_absolute() else REPO_ROOT / folder) / filename).resolve()
    if not any(path.is_relative_to(root) for root in allowed_roots()):
        roots = [str(r) for r in allowed_roots()]
        raise DocumentError(doc, field, f"{path} is not under {roots} (DLAB_WORKFLOW_DIRS)")
    return path


def import_file(path: Path, doc: str, field: str) -> ModuleType:
    """A project's file as a module; a file that raises as it loads ends the step (user code)."""
    try:
        found = work.user_code(f"import {path}", load_file, path, passing=(ImportError,))
    except ImportError as error:
        raise DocumentError(doc, field, f"cannot import {path}: {error}") from None
    return found


def agent_module(workflow_id: str, agent: AgentDoc) -> ModuleType | None:
    """The agent's ``prompt.py`` (None for a Diskurs conductor without one)."""
    doc = agent_path(workflow_id, agent.name)
    if not agent.prompt_location and not agent.module:
        return None  # a conductor or an LLM compiler without a file: Diskurs' own prompt
    if agent.prompt_location:
        path = code_file(agent.prompt_location, agent.code_filename, doc, "promptLocation")
        if agent.type == AgentType.CONDUCTOR and not path.is_file():
            return None
        return import_file(path, doc, "promptLocation")
    try:  # a module that raises anything else as it loads ends the step (work.user_code)
        load = f"import {agent.module}"
        found = work.user_code(load, importlib.import_module, agent.module, passing=(ImportError,))
    except ImportError as error:
        raise DocumentError(doc, "module", f"cannot import {agent.module!r}: {error}") from None
    return found


def _conductor_rules(topics: list[str]) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """Diskurs' default ``is_valid`` and ``is_final`` of a conductor: the next agent must be
    one of its topics (empty: valid, not final)."""

    def is_valid(arg: Any) -> bool:
        if not arg.next_agent or arg.next_agent in topics:
            return True
        raise PromptValidationError(
            f"{arg.next_agent} cannot be routed to from this agent. Valid agents are: {topics}"
        )

    def is_final(arg: Any) -> bool:
        return bool(arg.next_agent) and arg.next_agent in topics

    return is_valid, is_final


def agent_code(workflow_id: str, agent: AgentDoc, topics: list[str] | None = None) -> AgentCode:
    """Import the agent's code; a missing module, file or class is a DocumentError naming the
    field. ``topics``: a Diskurs conductor's, for its default rules."""
    doc = agent_path(workflow_id, agent.name)
    module = agent_module(workflow_id, agent)
    valid_default: Callable[[Any], Any] = _always
    final_default: Callable[[Any], Any] = _always
    if agent.type == AgentType.CONDUCTOR:
        valid_default, final_default = _conductor_rules(topics or [])
    if agent.type == AgentType.LLM_COMPILER:
        valid_default = plan.is_valid_plan  # a plan that cannot run goes back to the model
    if agent.type == AgentType.LLM_COMPILER and (module is None or not agent.user_prompt_argument):
        user: ArgumentClass = PlanningPromptArgument
    elif module is None or not agent.user_prompt_argument:
        user = DefaultConductorPromptArgument
    else:
        user = _class(module, agent.user_prompt_argument, doc, "userPromptArgument")
    system = None
    named = agent.system_prompt_argument
    if module is not None and agent.system_prompt and named and hasattr(module, named):
        system = _class(module, named, doc, "systemPromptArgument")
    return AgentCode(
        system=system,
        user=user,
        is_valid=getattr(module, agent.is_valid_name, valid_default),
        is_final=getattr(module, agent.is_final_name, final_default),
        module=module,
    )


def system_arguments(agent: AgentDoc, code: AgentCode, doc: str) -> dict[str, Any]:
    """The system prompt arguments: the class defaults, overridden by the config's values."""
    if code.system is None:
        return dict(agent.system_arguments)
    try:
        defaults = arguments.defaults(code.system)
        return arguments.dump(arguments.load(code.system, {**defaults, **agent.system_arguments}))
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(["systemArguments", *(str(p) for p in first["loc"])])
        raise DocumentError(doc, field, first["msg"]) from None


def conductor_agent(workflow_id: str, workflow: WorkflowDoc) -> AgentDoc | None:
    """A Diskurs project's conductor agent (its templates, prompt class, functions); None for
    this project's format, whose conductor is the workflow's ``conductor`` map alone, and for a
    project without a conductor."""
    if workflow.format != WorkflowFormat.DISKURS:
        return None
    path = agent_path(workflow_id, workflow.conductor.name)
    data = store.snapshot_data(path)
    return None if data is None else checks.parse_agent(path, data)


def memory_class(workflow_id: str, workflow: WorkflowDoc) -> type[LongtermMemory] | None:
    """A Diskurs project's ``LongtermMemory`` class: in ``longtermMemoryLocation``, else the
    one of that name the project's files define (the conductor's first), else Diskurs' own
    base class, as Diskurs looks it up; None when the project has no memory."""
    name = workflow.conductor.longterm_memory_class
    if workflow.format != WorkflowFormat.DISKURS or not name:
        return None
    doc = workflow_path(workflow_id)
    location = workflow.conductor.longterm_memory_location
    if location:
        where = Path(location)
        path = code_file(str(where.parent), where.name, doc, "conductor.longtermMemoryLocation")
        found = getattr(import_file(path, doc, "conductor.longtermMemoryLocation"), name, None)
        if not arguments.is_memory_class(found):
            reason = f"{location} defines no LongtermMemory class {name!r}"
            raise DocumentError(doc, "conductor.longtermMemoryClass", reason)
        return typing.cast(type[LongtermMemory], found)
    conductor = conductor_agent(workflow_id, workflow)
    agents = itertools.chain(
        [conductor] if conductor else [], (read_agent(workflow_id, a) for a in workflow.agents)
    )
    for agent in agents:  # read one by one: the conductor's file usually has it
        found = getattr(agent_module(workflow_id, agent), name, None)
        if arguments.is_memory_class(found):
            return typing.cast(type[LongtermMemory], found)
    return LongtermMemory


def memory_fields(workflow: WorkflowDoc, cls: type[LongtermMemory] | None) -> list[str]:
    """The fields the memory keeps: the memory class's, or this project's ``memoryFields``."""
    if workflow.format == WorkflowFormat.DISKURS:
        return arguments.memory_fields(cls) if cls is not None else []
    return list(workflow.conductor.memory_fields)
