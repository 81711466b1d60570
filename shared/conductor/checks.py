"""What makes a workflow unusable though its documents parse, found before any step runs: a key
the models do not know, a template that does not compile, a routing rule naming no agent.

A misspelt key dropped in silence changes what the conductor does (``memory_field`` for
``memory_fields`` left the memory empty, and the rules looped to the dispatch cap), so the
workflow's models forbid unknown keys and say which key was probably meant. The loader, the
console and the functions all check through here, so each fault gets the same message: a
``DocumentError`` naming the document (or file), the field and the reason.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from jinja2 import TemplateSyntaxError
from pydantic import BaseModel, ValidationError

from shared.conductor.documents import FINISH, AgentDoc, WorkflowDoc
from shared.models import DocumentError, parse_document
from shared.prompts.sandbox import BoundedEnvironment

M = TypeVar("M", bound=BaseModel)

_SYNTAX = BoundedEnvironment()
"""Compiles only (``parse``): the syntax is the renderer's, nothing is run."""


def field_path(loc: tuple[int | str, ...]) -> str:
    """``("conductor", "rules", 0, "then")`` as ``conductor.rules[0].then``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).removeprefix(".")


def _inner(annotation: Any) -> Any:
    """The model inside ``X | None``, ``list[X]`` or ``dict[str, X]``, else the annotation."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (list, dict) and args:
        return args[-1]
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _inner(args[0])
    return annotation


def _model_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model that validated the map at ``loc`` (keys as written: names or aliases)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue  # an item of the list (or map) the previous key named
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        by_key = {info.alias or name: info for name, info in current.model_fields.items()}
        info = current.model_fields.get(part) or by_key.get(part)
        if info is None:
            return None
        current = _inner(info.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _keys(model: type[BaseModel]) -> list[str]:
    """A model's keys as a file or a document may spell them: names and aliases."""
    names = [*model.model_fields, *(i.alias for i in model.model_fields.values() if i.alias)]
    return sorted(set(names))


def suggestion(word: str, known: list[str]) -> str:
    """`` (did you mean 'x'?)`` when ``word`` is close to one of ``known``, else ''."""
    close = difflib.get_close_matches(word, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_key(model: type[BaseModel], error: ValidationError) -> DocumentError | None:
    """The first key ``model`` does not know, with the key it probably meant (``document``
    left empty for the caller to fill)."""
    for item in error.errors():
        if item["type"] != "extra_forbidden":
            continue
        loc = tuple(item["loc"])
        owner = _model_at(model, loc[:-1])
        known = _keys(owner) if owner is not None else []
        key = str(loc[-1])
        return DocumentError("", field_path(loc), f"unknown key {key!r}{suggestion(key, known)}")
    return None


def parse(model: type[M], document: str, data: Mapping[str, Any] | None) -> M:
    """``parse_document``, with an unknown key named first (and what was probably meant)."""
    try:
        return parse_document(model, document, dict(data) if data is not None else None)
    except DocumentError as error:
        cause = error.__cause__
        found = unknown_key(model, cause) if isinstance(cause, ValidationError) else None
        if found is None:
            raise
        raise DocumentError(document, found.field, found.reason) from cause


def syntax_error(source: str) -> str | None:
    """Why a Jinja2 template does not compile (``line n: ...``), or None."""
    try:
        _SYNTAX.parse(source)
    except TemplateSyntaxError as error:
        return f"line {error.lineno}: {error.message}"
    return None


def _naming(field: str, name: str, targets: list[str]) -> Iterator[tuple[str, str]]:
    if name not in targets:
        yield field, f"{name!r} is not one of {targets}{suggestion(name, targets)}"


def rule_faults(workflow: WorkflowDoc) -> Iterator[tuple[str, str]]:
    """(field, reason) of each routing rule, route function, conductor topic or first contact
    that names no agent of the workflow."""
    every = [*workflow.agents, *workflow.conductor_names()]
    targets = [*workflow.agents, FINISH]
    for i, rule in enumerate(workflow.conductor.rules):
        yield from _naming(f"conductor.rules[{i}].then", rule.then, targets)
    keyed = [("conductor", workflow.conductor)]
    keyed += [(f"conductors[{i}]", c) for i, c in enumerate(workflow.conductors)]
    for key, conductor in keyed:
        for i, route in enumerate(conductor.route_functions):
            field = f"{key}.routeFunctions[{i}].targetAgent"
            yield from _naming(field, route.target_agent, every)
        for i, topic in enumerate(conductor.topics or []):
            yield from _naming(f"{key}.topics[{i}]", topic, every)
    if workflow.first_contact:
        yield from _naming("firstContact", workflow.first_contact, every)


def template_faults(templates: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """(field, reason) of each template (field → source) that does not compile."""
    for field, source in templates.items():
        problem = syntax_error(source)
        if problem is not None:
            yield field, f"template syntax error on {problem}"


def conductor_templates(workflow: WorkflowDoc) -> dict[str, str]:
    return {
        "conductor.systemPrompt": workflow.conductor.system_prompt,
        "conductor.userPrompt": workflow.conductor.user_prompt,
    }


def agent_templates(agent: AgentDoc) -> dict[str, str]:
    return {"systemPrompt": agent.system_prompt, "userPrompt": agent.user_prompt}


def parse_workflow(document: str, data: Mapping[str, Any] | None) -> WorkflowDoc:
    """The workflow document, refused (DocumentError) for an unknown key, a rule naming no
    agent or a conductor template that does not compile."""
    workflow = parse(WorkflowDoc, document, data)
    faults = [*rule_faults(workflow), *template_faults(conductor_templates(workflow))]
    if faults:
        raise DocumentError(document, *faults[0])
    return workflow


def parse_agent(document: str, data: Mapping[str, Any] | None) -> AgentDoc:
    """An agent's document, refused for an unknown key or a template that does not compile."""
    agent = parse(AgentDoc, document, data)
    for field, reason in template_faults(agent_templates(agent)):
        raise DocumentError(document, field, reason)
    return agent
