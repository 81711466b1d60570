"""Decoding of CloudEvents into typed, frozen events: the one place that knows wire formats.

Firestore events carry a ``google.events.cloud.firestore.v1.DocumentEventData`` protobuf;
Pub/Sub events carry the ``{"message": {...}, "subscription": ...}`` JSON envelope.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any, TypeVar

from google.events.cloud.firestore import DocumentEventData
from pydantic import BaseModel

from functions import firestore_api
from shared import paths
from shared.models import DocumentError, parse_document

M = TypeVar("M", bound=BaseModel)

_DOCUMENTS_MARKER = "/documents/"


@dataclasses.dataclass(frozen=True)
class FirestoreEvent:
    id: str
    type: str
    document: str
    """Path relative to the database root, e.g. ``experiments/e1/participants/p1``."""
    params: dict[str, str]
    """Values of the path pattern's wildcards."""
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    @property
    def is_phantom(self) -> bool:
        """The emulator emits created/written with no document when a missing one is deleted."""
        return self.before is None and self.after is None

    @property
    def is_noop(self) -> bool:
        """An update that changed nothing (the emulator fires these; production does not)."""
        return self.before is not None and self.before == self.after


@dataclasses.dataclass(frozen=True)
class PubSubEvent:
    id: str
    topic: str
    data: bytes
    attributes: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.data.decode("utf-8"))

    @property
    def path(self) -> str:
        """Where an error record says the message came from."""
        return f"pubsub/{self.topic}/{self.id}"

    def message(self, model: type[M]) -> M:
        """The payload as ``model``; DocumentError names the missing or malformed field."""
        try:
            data = self.json()
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise DocumentError(self.path, "(message)", f"not JSON: {error}") from None
        if not isinstance(data, dict):
            raise DocumentError(self.path, "(message)", "not a JSON object")
        return parse_document(model, self.path, data)


def _value(value: Any) -> Any:
    """A firestore.v1 Value protobuf as a plain Python value."""
    kind = value.WhichOneof("value_type")
    if kind == "string_value":
        return value.string_value
    if kind == "map_value":
        return _map(value.map_value.fields)
    if kind == "timestamp_value":
        return firestore_api.timestamp(value.timestamp_value)
    if kind is None or kind == "null_value":
        return None
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "geo_point_value":
        return {
            "latitude": value.geo_point_value.latitude,
            "longitude": value.geo_point_value.longitude,
        }
    if kind == "reference_value":
        return value.reference_value.split(_DOCUMENTS_MARKER, 1)[-1]
    return getattr(value, kind)


def _map(fields: Any) -> dict[str, Any]:
    return {key: _value(fields[key]) for key in fields}  # a upb map's items() is slower


def _fields(document: Any, present: bool) -> dict[str, Any] | None:
    return _map(document.fields) if present else None


def document_path(resource_name: str) -> str:
    """``projects/p/databases/d/documents/a/b`` or ``documents/a/b`` -> ``a/b``."""
    if _DOCUMENTS_MARKER in resource_name:
        return resource_name.split(_DOCUMENTS_MARKER, 1)[1]
    return resource_name.removeprefix("documents/")


def decode_document_event_data(raw: bytes) -> tuple[dict | None, dict | None, str | None]:
    """(before, after, document path or None) from DocumentEventData protobuf bytes."""
    pb = DocumentEventData.pb(DocumentEventData.deserialize(raw))
    has_after, has_before = pb.HasField("value"), pb.HasField("old_value")
    name = pb.value.name if has_after else pb.old_value.name if has_before else ""
    return (
        _fields(pb.old_value, has_before),
        _fields(pb.value, has_after),
        document_path(name) if name else None,
    )


def firestore_event(cloud_event: Any, pattern: str) -> FirestoreEvent:
    """Decode a Firestore CloudEvent for a function registered on ``pattern``."""
    data = cloud_event.data
    if isinstance(data, str):
        data = data.encode("latin-1")
    before, after, name = decode_document_event_data(data or b"")
    attrs = cloud_event.get_attributes()
    # The payload's name is UTF-8 protobuf; the ``document`` attribute travels as an HTTP header,
    # which reaches us as Latin-1 (``Zoë`` -> ``ZoÃ«``): the attribute is only a fallback.
    document = name or attrs.get("document") or document_path(attrs.get("subject", ""))
    params = paths.match(pattern, document)
    if params is None:
        raise ValueError(f"document {document!r} does not match trigger pattern {pattern!r}")
    return FirestoreEvent(
        id=attrs["id"],
        type=attrs["type"],
        document=document,
        params=params,
        before=before,
        after=after,
    )


def pubsub_event(cloud_event: Any) -> PubSubEvent:
    """Decode a Pub/Sub messagePublished CloudEvent."""
    data = cloud_event.data
    if isinstance(data, bytes | str):
        data = json.loads(data)
    message = data["message"]
    source = cloud_event.get_attributes().get("source", "")
    return PubSubEvent(
        id=message.get("messageId") or message.get("message_id") or cloud_event["id"],
        topic=source.rsplit("/topics/", 1)[-1],
        data=base64.b64decode(message.get("data", "")),
        attributes=dict(message.get("attributes") or {}),
    )
