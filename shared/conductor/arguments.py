"""Prompt argument classes of both formats behind one interface: this project's (a pydantic
``shared.conductor.prompt_args.PromptArgument``) and Diskurs' own (a dataclass subclassing
``diskurs.PromptArgument``, with ``InputField`` / ``OutputField`` / ``LockedField`` marks).

A Diskurs class keeps Diskurs' exact semantics because Diskurs' own code does the work: a reply
is checked by ``diskurs.prompt.validate_dataclass`` and merged with ``PromptArgument.update``
(an omitted or empty field keeps its value; input and locked fields are never taken from a
reply), the memory gives an agent only its ``InputField``s and takes only its ``OutputField``s,
and the reply schema lists the fields Diskurs' JSON formatting prompt lists.
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, get_type_hints

from diskurs.entities import LongtermMemory, PromptField
from diskurs.entities import PromptArgument as DiskursArgument
from diskurs.errors import PromptValidationError as DiskursValidationError
from diskurs.prompt import validate_dataclass
from pydantic import BaseModel, TypeAdapter, ValidationError

from shared.conductor.prompt_args import PromptArgument, PromptValidationError, parse_reply

ArgumentClass = type[PromptArgument] | type[DiskursArgument]
EMPTY: tuple[Any, ...] = (None, "")
"""Values Diskurs treats as "not given" when it merges (a reply, the memory)."""


def is_argument_class(found: Any) -> bool:
    """A prompt argument class of either format."""
    if not isinstance(found, type):
        return False
    if issubclass(found, PromptArgument):
        return True
    return issubclass(found, DiskursArgument) and dataclasses.is_dataclass(found)


def is_memory_class(found: Any) -> bool:
    return isinstance(found, type) and issubclass(found, LongtermMemory)


def is_diskurs(cls: ArgumentClass) -> bool:
    return not issubclass(cls, BaseModel)


def _marks(cls: type) -> dict[str, set[str]]:
    """Each field's access marks (``input``, ``output``, ``locked``, ``per_turn``)."""
    hints = get_type_hints(cls, include_extras=True)
    marks: dict[str, set[str]] = {}
    for f in dataclasses.fields(cls):
        metadata = getattr(hints.get(f.name), "__metadata__", ())
        marks[f.name] = {m.access_mode for m in metadata if isinstance(m, PromptField)}
    return marks


def field_names(cls: ArgumentClass) -> list[str]:
    if is_diskurs(cls):
        return [f.name for f in dataclasses.fields(cls)]
    return list(cls.model_fields)


def reads_memory(cls: ArgumentClass) -> set[str]:
    """The fields an agent's first arguments of a turn take from the memory: Diskurs' input
    fields; every field of this project's classes (the memory by name)."""
    if is_diskurs(cls):
        return {name for name, marks in _marks(cls).items() if "input" in marks}
    return set(field_names(cls))


def writes_memory(cls: ArgumentClass) -> set[str]:
    """The fields the memory takes from an agent's final arguments: Diskurs' output fields."""
    if is_diskurs(cls):
        return {name for name, marks in _marks(cls).items() if "output" in marks}
    return set(field_names(cls))


def reply_fields(cls: ArgumentClass) -> list[str]:
    """What a reply fills: Diskurs' output fields and unmarked ones (its JSON formatting
    prompt's), every field of this project's classes."""
    if not is_diskurs(cls):
        return field_names(cls)
    return [n for n, marks in _marks(cls).items() if not marks or "output" in marks]


def defaults(cls: ArgumentClass) -> dict[str, Any]:
    """A fresh instance's values as JSON (the class must construct without arguments, as
    Diskurs requires too)."""
    return dump(cls())


def load(cls: ArgumentClass, values: Mapping[str, Any]) -> Any:
    """An instance from stored values (JSON), unknown keys ignored."""
    if not is_diskurs(cls):
        return cls.model_validate(dict(values))
    known = {k: v for k, v in values.items() if k in field_names(cls)}
    try:  # not Diskurs' from_dict: it makes the string of a `list[str] | str` field a list
        return TypeAdapter(cls).validate_python(known)  # of its characters
    except ValidationError:  # a value off its annotation, as Diskurs' own parsing lets through
        return cls.from_dict(known)  # type: ignore[union-attr]


def dump(instance: Any) -> dict[str, Any]:
    if isinstance(instance, BaseModel):
        return instance.model_dump(mode="json")
    return dict(instance.to_dict())


def initial(
    cls: ArgumentClass,
    memory: Mapping[str, Any],
    *,
    locked: Mapping[str, Any] | None = None,
    from_memory: bool = True,
) -> dict[str, Any]:
    """An agent's first arguments of a turn: its defaults, the memory's values of the fields it
    reads (not empty), then its locked values (Diskurs' ``_initialize_prompt``)."""
    values = defaults(cls)
    if from_memory:
        for name in reads_memory(cls) & set(values):
            value = memory.get(name)
            if value not in (None, "", [], {}):
                values[name] = copy.deepcopy(value)
    for name, value in (locked or {}).items():
        if name in values:
            values[name] = value
    return values


def _inline(node: Any, defs: Mapping[str, Any]) -> Any:
    """``node`` with its ``$ref``s replaced by the definitions, titles dropped."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _inline(defs[str(node["$ref"]).rsplit("/", 1)[-1]], defs)
    return {k: _inline(v, defs) for k, v in node.items() if k not in ("title", "$defs")}


def reply_schema(cls: ArgumentClass, known: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema of a reply: the reply's fields, their types and hints, ``$ref``s inlined;
    a field's class default is not a hint (a default ``0`` is no answer), a value already
    ``known`` is (the model sees what to keep, and the scripted model keeps it). Diskurs asks
    only for the fields without a default."""
    if not is_diskurs(cls):
        return cls.reply_schema(known=dict(known or {}))
    raw = TypeAdapter(cls).json_schema()
    defs = raw.get("$defs", {})
    names = reply_fields(cls)
    properties = {}
    for name in names:
        prop = _inline(raw["properties"][name], defs)
        class_default = prop.pop("default", None)
        value = (known or {}).get(name)
        if value not in (None, "", [], {}) and value != class_default:
            prop["default"] = value
        properties[name] = prop
    required = [n for n in names if n in raw.get("required", [])]
    return {"type": "object", "properties": properties, "required": required}


def parse(cls: ArgumentClass, parsed: Any, current: Mapping[str, Any]) -> Any:
    """Syntactic validation of a reply, into the step's new arguments: this project's classes
    take the whole reply; Diskurs' update the current arguments with it, as Diskurs does. A
    PromptValidationError carries the message (Diskurs' own, verbatim)."""
    if not is_diskurs(cls):
        return parse_reply(cls, parsed)
    if not isinstance(parsed, dict):
        raise PromptValidationError(
            f"the reply must be a JSON object with the fields {reply_fields(cls)}"
        )
    unions = _union_fields(cls, parsed)
    rest = {k: v for k, v in parsed.items() if k not in unions}
    try:
        reply = validate_dataclass(rest, cls)
    except DiskursValidationError as error:
        raise PromptValidationError(str(error)) from None
    except TypeError:  # Diskurs' parser makes a nested dataclass with no arguments: a class
        reply = _validated(cls, rest)  # with required fields (the LLM compiler's PlanStep)
    for name, hint in unions.items():
        try:
            setattr(reply, name, TypeAdapter(hint).validate_python(parsed[name]))
        except ValidationError as error:
            reason = error.errors()[0]["msg"]
            raise PromptValidationError(f"field '{name}': {reason}") from None
    return load(cls, current).update(reply)


def _is_union(hint: Any) -> bool:
    """A union of more than one type besides None (``list[str] | str``), Annotated or not."""
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return False
    return len([a for a in typing.get_args(hint) if a is not type(None)]) > 1


def _union_fields(cls: ArgumentClass, parsed: Mapping[str, Any]) -> dict[str, Any]:
    """The reply's fields of a union type, which pydantic's validation takes as the member
    their value fits: Diskurs' parser converts with a ``typing.Union``'s first member (the
    string ``"www.acme.com"`` of an ``Optional[list[str] | str]`` field became a list of its
    characters) and cannot convert to an ``X | Y`` union at all (every reply refused)."""
    hints = get_type_hints(cls, include_extras=True)
    wanted = set(reply_fields(cls)) & set(parsed)
    return {name: hints[name] for name in wanted if _is_union(hints.get(name))}


def _validated(cls: ArgumentClass, parsed: dict[str, Any]) -> Any:
    """A reply as ``cls`` by pydantic's validation of dataclasses; a bad field is named."""
    known = {k: v for k, v in parsed.items() if k in field_names(cls)}
    try:
        return TypeAdapter(cls).validate_python(known)
    except ValidationError as error:
        problems = "; ".join(
            f"field '{'.'.join(str(p) for p in e['loc'])}': {e['msg']}" for e in error.errors()
        )
        raise PromptValidationError(f"the reply: {problems}") from None


def validation_errors() -> tuple[type[Exception], ...]:
    """What a user's ``is_valid`` raises to send its message back to the model: ours, or
    ``diskurs.PromptValidationError`` (a project's prompt.py imports that one)."""
    return (PromptValidationError, DiskursValidationError)


def memory_instance(cls: type[LongtermMemory], values: Mapping[str, Any], query: str) -> Any:
    """The conversation's memory as the project's ``LongtermMemory`` class (what its
    ``can_finalize``, ``finalize`` and ``fail`` take); ``user_query`` is the query."""
    names = {f.name for f in dataclasses.fields(cls)}
    known = {k: v for k, v in values.items() if k in names and v is not None}
    if "user_query" in names and not known.get("user_query"):
        known["user_query"] = query
    return cls.from_dict(known, reset_per_turn=False)


def memory_fields(cls: type[LongtermMemory]) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def outputs_for_memory(
    cls: ArgumentClass, values: Mapping[str, Any], fields: Iterable[str]
) -> dict[str, Any]:
    """The final arguments' values the memory takes: fields it knows that the class writes
    and that are not empty (Diskurs' ``LongtermMemory.update``)."""
    wanted = set(fields) & writes_memory(cls)
    empty = EMPTY if is_diskurs(cls) else (None, "", [], {})
    return {k: v for k, v in values.items() if k in wanted and v not in empty}
