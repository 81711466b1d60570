"""A workflow as the functions use it: its documents from Firestore (edited in the console, read
at each step) and each agent's deployed ``prompt.py`` (argument classes, ``is_valid``,
``is_final``): user code, each call of it through ``work.user_code``."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from functions import store, work
from shared import paths
from shared.conductor import checks
from shared.conductor.documents import AGENT, WORKFLOW, AgentDoc, WorkflowDoc
from shared.conductor.prompt_args import PromptArgument
from shared.models import DocumentError


@dataclasses.dataclass(frozen=True)
class AgentCode:
    """What an agent's ``prompt.py`` gives: the argument classes and the two rules."""

    system: type[PromptArgument] | None
    user: type[PromptArgument]
    is_valid: Callable[[Any], Any]
    is_final: Callable[[Any], Any]


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


def _class(module: Any, name: str, doc: str, field: str) -> type[PromptArgument]:
    found = getattr(module, name, None)
    if not (isinstance(found, type) and issubclass(found, PromptArgument)):
        reason = f"{module.__name__} has no PromptArgument class named {name!r}"
        raise DocumentError(doc, field, reason)
    return found


def agent_code(workflow_id: str, agent: AgentDoc) -> AgentCode:
    """Import the agent's module; a missing module or class is a DocumentError naming the field."""
    doc = agent_path(workflow_id, agent.name)
    try:  # a module that raises anything else as it loads ends the step (work.user_code)
        load = f"import {agent.module}"
        module = work.user_code(load, importlib.import_module, agent.module, passing=(ImportError,))
    except ImportError as error:
        raise DocumentError(doc, "module", f"cannot import {agent.module!r}: {error}") from None
    system = None
    if agent.system_prompt and hasattr(module, agent.system_prompt_argument):
        system = _class(module, agent.system_prompt_argument, doc, "systemPromptArgument")
    return AgentCode(
        system=system,
        user=_class(module, agent.user_prompt_argument, doc, "userPromptArgument"),
        is_valid=getattr(module, "is_valid", _always),
        is_final=getattr(module, "is_final", _always),
    )


def system_arguments(agent: AgentDoc, code: AgentCode, doc: str) -> dict[str, Any]:
    """The system prompt arguments: the class defaults, overridden by the config's values."""
    if code.system is None:
        return dict(agent.system_arguments)
    try:
        return code.system.model_validate(agent.system_arguments).model_dump(mode="json")
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(["systemArguments", *(str(p) for p in first["loc"])])
        raise DocumentError(doc, field, first["msg"]) from None
