"""Tools a model may call: their specs built from Python functions, and one call run.

A Diskurs project's tools are functions, decorated with Diskurs' ``@tool`` (which keeps the
name, description and argument metadata it read from the docstring on the function) or plain
(we read the same ``:param x:`` / ``:return:`` docstring ourselves). Arguments whose docstring
says ``[invisible]`` are not shown to the model; they are filled from the conversation's
context, as Diskurs fills them from its metadata.

A tool that raises does not end the step: its error goes back to the model as the call's
result, in Diskurs' words, so the model can correct its input.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from shared.llm.base import Message, ToolCall, ToolResult, ToolSpec

MAX_RESULT_CHARS = 20_000
"""A tool's result as sent to the model and stored; longer ones are cut (and marked)."""
INVISIBLE = "[invisible]"

_PARAM = re.compile(r"^:param\s+(\w+)\s*:\s*(.*)$")
_RETURN = re.compile(r"^:returns?:\s*(.*)$")
_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
}
_DISKURS_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
"""Diskurs' ``@tool`` keeps type names; anything else it shows the model as a string."""


@dataclasses.dataclass(frozen=True)
class Tool:
    """A callable tool: what the model sees, the function, the arguments filled from context."""

    spec: ToolSpec
    function: Callable[..., Any]
    hidden: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class _Docs:
    description: str
    params: dict[str, str]
    hidden: tuple[str, ...]


def _read_docstring(function: Callable[..., Any]) -> _Docs:
    """The description (with its ``Returns:``), each ``:param``'s text (continued lines
    joined), and the params marked ``[invisible]``."""
    lines: list[str] = []
    params: dict[str, str] = {}
    returns = ""
    current: str | None = None
    for line in (inspect.getdoc(function) or "").splitlines():
        line = line.strip()
        if found := _PARAM.match(line):
            current, params[found[1]] = found[1], found[2]
        elif found := _RETURN.match(line):
            current, returns = None, found[1]
        elif current and line:
            params[current] += f" {line}"
        elif line and not current:
            lines.append(line)
    hidden = tuple(name for name, text in params.items() if INVISIBLE in text)
    description = " ".join(lines) + (f"\nReturns: {returns}" if returns else "")
    return _Docs(description, params, hidden)


def _json_type(annotation: Any) -> str:
    """The JSON Schema type of a parameter's annotation (``X | None`` as X); unknown: string."""
    if isinstance(annotation, str):
        return _DISKURS_TYPES.get(annotation, "string")
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        real = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _json_type(real[0]) if len(real) == 1 else "string"
    return _JSON_TYPES.get(typing.get_origin(annotation) or annotation, "string")


def _signature(function: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    try:
        return inspect.signature(function).parameters
    except (TypeError, ValueError):
        return {}


def tool_from_function(function: Callable[..., Any]) -> Tool:
    """The tool for ``function``: Diskurs' ``@tool`` metadata when it has it, else its own
    docstring and signature. Every argument the model sees is in the schema; those without a
    default are required."""
    parameters = _signature(function)
    docs = _read_docstring(function)
    name = str(getattr(function, "name", None) or function.__name__)
    described: dict[str, Any] = getattr(function, "args", None) or {}
    hidden = tuple(getattr(function, "invisible_args", None) or docs.hidden)
    given = getattr(function, "description", None)
    description = given if isinstance(given, str) else docs.description
    shown = [
        name
        for name, p in parameters.items()
        if name not in hidden and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    properties: dict[str, Any] = {}
    for param in shown:
        meta = described.get(param) if isinstance(described, dict) else None
        kind = meta.get("type") if isinstance(meta, dict) else parameters[param].annotation
        text = meta.get("description") if isinstance(meta, dict) else docs.params.get(param, "")
        properties[param] = {"type": _json_type(kind), "description": str(text or "").strip()}
    required = [p for p in shown if parameters[p].default is inspect.Parameter.empty]
    schema = {"type": "object", "properties": properties, "required": required}
    return Tool(ToolSpec(name, description, schema), function, hidden)


def result_text(value: Any) -> str:
    """A tool's return value as the text the model reads: a string as is, else JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS] + "…[truncated]"


def failure_text(name: str, error: BaseException | str) -> str:
    """A failed call as the model reads it: Diskurs' own words, so it corrects its input."""
    return (
        f"ERROR: Tool '{name}' execution failed: {error}. Please correct your input and try again."
    )


def invoke(
    tools: Mapping[str, Tool], call: ToolCall, context: Mapping[str, Any] | None = None
) -> Any:
    """Run one call: the tool's return value; what it raises (and an unknown tool, arguments
    that could not be read) propagates."""
    tool = tools.get(call.name)
    if tool is None:
        raise ValueError(f"Tool '{call.name}' not found.")
    if call.malformed:
        raise ValueError(call.malformed)
    known = context or {}
    arguments = {**call.arguments, **{k: known[k] for k in tool.hidden if k in known}}
    value = tool.function(**arguments)
    return asyncio.run(_awaited(value)) if inspect.isawaitable(value) else value


def run_tool(
    tools: Mapping[str, Tool], call: ToolCall, context: Mapping[str, Any] | None = None
) -> ToolResult:
    """Run one call for the model: its result, or the error it raised as an error result."""
    try:
        value = invoke(tools, call, context)
    except Exception as error:  # the tool's failure is the model's to read
        return ToolResult(call.id, call.name, failure_text(call.name, error)[:2000], True)
    return ToolResult(call.id, call.name, result_text(value))


async def _awaited(value: Any) -> Any:
    return await value


class ToolUse(Protocol):
    """How a model call runs the tools it offers (``model_call.ask``): the durable record is
    the implementer's (a conductor step's tool calls, in the run's journal)."""

    @property
    def specs(self) -> tuple[ToolSpec, ...]: ...

    def answer(self, calls: tuple[ToolCall, ...], text: str, asked: str) -> tuple[Message, ...]:
        """Record the model's turn of ``calls`` (the reply to the request whose journal key is
        ``asked``), run each once, and return that assistant turn and the tool turn with their
        results (a turn recorded before, by an earlier delivery or the run a replay replays,
        with its recorded results)."""
        ...
