"""User functions, registered by name and deployed with the functions; a debate document names
them in ``userFunctions``. The seed's util class and prompts class:

- ``format_agent_response(reply) -> dict``: the agent's reply (parsed JSON with a response
  schema, else the text) as a dict; raise ``AnswerValidationError`` for a reply that is not a
  valid statement (it goes back to the model as a corrective turn).
- ``draw_final_conclusion(formatted) -> str``: the agent's final standpoint (e.g. ``Buy``).
- ``compare_responses(a, b) -> float``: how different two formatted responses are, 0 to 1.
- a ``PromptSet``: the prompt builders and the response schema.

Register your own with the decorators below in a module that is imported at start: put it in
``shared/debate/`` and list it in ``DLAB_DEBATE_USER_MODULES`` (comma separated module names),
or import it from this package.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any, TypeVar

from shared.debate.models import UserFunctions
from shared.debate.settings import KitSettings
from shared.models import DocumentError

BUILTIN_MODULES = ("shared.debate.generic", "shared.debate.stock_trading")

Formatter = Callable[[Any], dict[str, Any]]
Conclusion = Callable[[dict[str, Any]], str]
Comparison = Callable[[dict[str, Any], dict[str, Any]], float]

F = TypeVar("F")

FORMATTERS: dict[str, Formatter] = {}
CONCLUSIONS: dict[str, Conclusion] = {}
COMPARISONS: dict[str, Comparison] = {}
PROMPTS: dict[str, Any] = {}
"""name → PromptSet (``shared.debate.prompts``)."""


def _register(table: dict[str, Any], name: str) -> Callable[[F], F]:
    def add(fn: F) -> F:
        table[name] = fn
        return fn

    return add


def format_agent_response(name: str) -> Callable[[F], F]:
    return _register(FORMATTERS, name)


def draw_final_conclusion(name: str) -> Callable[[F], F]:
    return _register(CONCLUSIONS, name)


def compare_responses(name: str) -> Callable[[F], F]:
    return _register(COMPARISONS, name)


def prompts(name: str) -> Callable[[F], F]:
    """Register a PromptSet class (instantiated once)."""

    def add(cls: F) -> F:
        PROMPTS[name] = cls() if isinstance(cls, type) else cls
        return cls

    return add


def load_user_modules() -> None:
    for module in (*BUILTIN_MODULES, *KitSettings().user_modules):
        importlib.import_module(module)


@dataclasses.dataclass(frozen=True)
class Kit:
    """The user functions a debate names, resolved."""

    format_agent_response: Formatter
    draw_final_conclusion: Conclusion
    compare_responses: Comparison
    prompts: Any


def resolve(names: UserFunctions, document: str) -> Kit:
    """The named functions; a name nobody registered is a DocumentError naming the field."""
    load_user_modules()
    tables: list[tuple[str, str, dict[str, Any]]] = [
        ("formatAgentResponse", names.format_agent_response, FORMATTERS),
        ("drawFinalConclusion", names.draw_final_conclusion, CONCLUSIONS),
        ("compareResponses", names.compare_responses, COMPARISONS),
        ("prompts", names.prompts, PROMPTS),
    ]
    found = []
    for field, name, table in tables:
        if name not in table:
            known = ", ".join(sorted(table)) or "none"
            raise DocumentError(
                document, f"userFunctions.{field}", f"no user function {name!r} (known: {known})"
            )
        found.append(table[name])
    return Kit(*found)
