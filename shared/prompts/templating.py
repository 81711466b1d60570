"""Jinja2 for prompt text: TEXT items, persona promptContext and stage texts.

Templates run in a bounded sandbox (size, work and time limits: sandbox.py) with StrictUndefined:
a misspelt variable, a refused operation or a template over a bound stops the prompt with an error
naming the template (and the variable), instead of silently sending the model a blank or hanging.
Text without Jinja syntax is returned unchanged (DL's texts contain no Jinja).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any, NoReturn

from jinja2 import StrictUndefined, Template, TemplateSyntaxError, Undefined, UndefinedError
from jinja2.exceptions import SecurityError

from shared.errors import BadInput
from shared.models import CohortConfig, Experiment, ParticipantProfile
from shared.prompts.sandbox import BoundedEnvironment, TemplateBoundsError, render_bounded

_MARKERS = ("{{", "{%", "{#")
_TEMPLATES_OWN_ERRORS = (
    ArithmeticError,
    LookupError,
    TypeError,
    ValueError,
    RecursionError,
    MemoryError,
)


class PromptError(BadInput, ValueError):
    """A prompt that cannot be built; the message says where and why."""


class PromptTemplateError(PromptError):
    """A template that does not render: undefined variable, syntax error or sandbox refusal."""

    def __init__(self, template_name: str, variable: str | None, message: str) -> None:
        where = f"undefined variable '{variable}'" if variable else "template error"
        super().__init__(f"{template_name}: {where}: {message}")
        self.template_name = template_name
        self.variable = variable
        self.message = message


class _UndefinedVariable(UndefinedError):
    def __init__(self, variable: str, message: str) -> None:
        super().__init__(message)
        self.variable = variable


class _Strict(StrictUndefined):
    """StrictUndefined that remembers which name was missing."""

    def _fail_with_undefined_error(self, *args: Any, **kwargs: Any) -> NoReturn:
        if not issubclass(self._undefined_exception, UndefinedError):  # the sandbox's refusals
            raise self._undefined_exception(self._undefined_message)
        raise _UndefinedVariable(str(self._undefined_name), self._undefined_message)


# Jinja binds the failing dunders (__str__, __add__, ...) to the base method; rebind them.
for _cls in (Undefined, StrictUndefined):
    for _name, _value in vars(_cls).items():
        if _value is Undefined._fail_with_undefined_error and _name != "_fail_with_undefined_error":
            setattr(_Strict, _name, _Strict._fail_with_undefined_error)


_ENV = BoundedEnvironment(
    undefined=_Strict,
    autoescape=False,
    keep_trailing_newline=True,
)


_LENIENT_ENV = BoundedEnvironment(autoescape=False, keep_trailing_newline=True)
"""Jinja2's default Undefined (an undefined variable renders empty, is false), as Diskurs renders
its projects' templates; bounded like the strict one."""


@functools.lru_cache(maxsize=512)
def _compile(source: str) -> Template:
    return _ENV.from_string(source)


@functools.lru_cache(maxsize=512)
def _compile_lenient(source: str) -> Template:
    return _LENIENT_ENV.from_string(source)


def has_template_syntax(text: str) -> bool:
    return any(marker in text for marker in _MARKERS)


def render_template(
    source: str, variables: Mapping[str, Any], template_name: str, *, lenient: bool = False
) -> str:
    """Render ``source``; PromptTemplateError names ``template_name`` and the variable.
    ``lenient``: an undefined variable renders empty (a Diskurs project's templates)."""
    if not has_template_syntax(source):
        return source
    compile_ = _compile_lenient if lenient else _compile
    try:
        return render_bounded(lambda: compile_(source), variables)
    except _UndefinedVariable as exc:
        raise PromptTemplateError(template_name, exc.variable, str(exc.message)) from None
    except TemplateSyntaxError as exc:
        raise PromptTemplateError(
            template_name, None, f"syntax error on line {exc.lineno}: {exc.message}"
        ) from None
    except (UndefinedError, SecurityError) as exc:
        raise PromptTemplateError(template_name, None, str(exc)) from None
    except TemplateBoundsError as exc:
        raise PromptTemplateError(template_name, None, f"over a sandbox limit: {exc}") from None
    except _TEMPLATES_OWN_ERRORS as exc:
        # Python errors of the template's own making (1/0, a macro calling itself): its fault.
        raise PromptTemplateError(template_name, None, f"{type(exc).__name__}: {exc}") from None


def _typed(value: str, schema_type: str | None) -> Any:
    """A variable's stored string as DL's resolveTemplateVariables types it from its schema."""
    try:
        if schema_type == "boolean":
            return value == "true"
        if schema_type == "integer":
            return int(float(value))
        if schema_type == "number":
            return float(value)
        if schema_type in ("object", "array"):
            return json.loads(value)
        if schema_type == "string":
            parsed = json.loads(value)  # DL stores generated values JSON-encoded
            return parsed if isinstance(parsed, str) else value
    except ValueError:
        return value
    return value


def _definition_types(experiment: Experiment) -> dict[str, str | None]:
    """Variable name -> JSON schema type, from the experiment's variableConfigs (DL's
    extractVariablesFromVariableConfigs, including the ``name_1..n`` expansion)."""
    types: dict[str, str | None] = {}
    for config in experiment.variable_configs:
        definition = config.get("definition") or {}
        name, schema = definition.get("name"), definition.get("schema") or {}
        if not isinstance(name, str):
            continue
        items = schema.get("items")
        item = items if isinstance(items, dict) else schema
        kind = config.get("type")
        if kind == "random_permutation" and config.get("expandListToSeparateVariables", True):
            count = config.get("numToSelect") or len(config.get("values") or [])
            for i in range(1, count + 1):
                types[f"{name}_{i}"] = item.get("type")
        elif kind == "balanced_assignment":
            types[name] = item.get("type")
        else:
            types[name] = schema.get("type")
    return types


def experiment_variables(
    experiment: Experiment, cohort: CohortConfig | None, participant: ParticipantProfile | None
) -> dict[str, Any]:
    """DL's variable maps merged (experiment < cohort < participant) and typed by definition."""
    merged = {
        **experiment.variable_map,
        **(cohort.variable_map if cohort else {}),
        **(participant.variable_map if participant else {}),
    }
    types = _definition_types(experiment)
    return {name: _typed(value, types.get(name)) for name, value in merged.items()}
