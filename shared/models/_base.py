"""Base model for Firestore documents: snake_case in Python, camelCase in Firestore."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from shared.errors import BadInput


def _coerce_timestamp(value: Any) -> Any:
    """Accept Deliberate Lab's JSON form of a Timestamp ({seconds, nanoseconds}) as well."""
    if isinstance(value, dict) and "seconds" in value:
        seconds = value["seconds"] + value.get("nanoseconds", 0) / 1e9
        return datetime.fromtimestamp(seconds, tz=UTC)
    return value


Timestamp = Annotated[datetime, BeforeValidator(_coerce_timestamp)]

Count = Annotated[int, Field(ge=0)]
"""A number of things (participants, messages, characters, retries): never negative."""
Positive = Annotated[int, Field(ge=1)]
"""A count that must be at least one (a step, a maximum number of turns)."""


def now() -> datetime:
    return datetime.now(UTC)


class DocModel(BaseModel):
    """A Firestore document or nested map. Unknown fields are kept: a round trip loses nothing."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        use_enum_values=True,
        validate_default=True,
    )

    def to_firestore(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="python")

    @classmethod
    def fields(cls, **values: Any) -> dict[str, Any]:
        """Some of the document's fields under their Firestore names, for a partial update
        (``ref.update``): a name the model lacks raises at once instead of writing a stray
        field."""
        return {cls.model_fields[name].alias or name: value for name, value in values.items()}


class DocumentError(BadInput):
    """A document that cannot be used, with where and why, for the experiment's error records."""

    def __init__(
        self, document: str, field: str, reason: str, blocked_on: str | None = None
    ) -> None:
        super().__init__(f"{document}: field '{field}': {reason}")
        self.document = document
        self.field = field
        self.reason = reason
        self.blocked_on = blocked_on or document
        """The document whose creation or fix may resolve this (e.g. a missing cohort)."""


M = TypeVar("M", bound=BaseModel)


def _step(item: int | str, data: Any) -> tuple[str | None, Any]:
    """One error-location item as a path part (None: not a field) and the data below it."""
    if isinstance(item, int):
        if isinstance(data, list) and item < len(data):
            return f"[{item}]", data[item]
        return None, data
    if isinstance(data, dict) and item in data:
        return "." + item, data[item]
    if isinstance(data, dict) and data.get("kind") == item:
        return None, data  # discriminated-union tag
    if item.startswith(("function-", "tagged-union")):
        return None, data  # a validator's name
    return "." + item, None  # a missing field


def _field_of(loc: tuple[int | str, ...], data: Any) -> str:
    """The document field a pydantic error location points at, walking the data to drop
    union tags (e.g. a question's ``kind``) and validator names that are not fields."""
    parts: list[str] = []
    for item in loc:
        part, data = _step(item, data)
        if part is not None:
            parts.append(part)
    return "".join(parts).removeprefix(".") or "(document)"


def parse_document(model: type[M], path: str, data: dict[str, Any] | None) -> M:
    """Validate ``data`` as ``model``; raise DocumentError naming the path, field and reason."""
    if data is None:
        raise DocumentError(path, "(document)", "document does not exist")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        reason = first["msg"]
        if first["type"] != "missing":
            got = first.get("input")
            reason += f" (got {type(got).__name__ if isinstance(got, dict | list) else repr(got)})"
        raise DocumentError(path, _field_of(first["loc"], data), reason) from exc
