"""The one place deployed code talks to Firestore below ``google.cloud.firestore.Client``: the
library's public GAPIC client (``firestore_v1.services.firestore.FirestoreClient``) on a
channel built here, for what the client above has no form of.

What that is: a collection listed in one unary call, decoded from its protobuf
(``list_documents``: every turn reads its chat so, twice); and a read-write transaction begun
by its first read. Firestore's BatchGetDocuments
begins one (``new_transaction``) and returns its id with the documents; the client library
first begins it with a BeginTransaction call of its own, one sequential round trip more (5-30
ms on real Firestore) on a threaded reply's critical path (``transactions.begin_by_reading``).
So this module reads with ``new_transaction``, encodes the few write kinds such a transaction
takes (``Writes``) into ``Write`` protobufs, and commits or rolls back by the id.

The channel carries ``usage.interceptors()``: the RPCs made here are metered like the client's.
"""

from __future__ import annotations

import calendar
import dataclasses
import datetime
import functools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import grpc
from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud import firestore
from google.cloud.firestore_v1.field_path import FieldPath
from google.cloud.firestore_v1.services.firestore import FirestoreClient
from google.cloud.firestore_v1.services.firestore.transports import FirestoreGrpcTransport
from google.cloud.firestore_v1.types import firestore as messages
from google.cloud.firestore_v1.types import write

from functions import clients, usage

EMULATOR_ENV = "FIRESTORE_EMULATOR_HOST"
_EMULATOR_AUTH = (("authorization", "Bearer owner"),)
"""What the client library sends the emulator: an owner, whom the security rules let through."""


def transport() -> FirestoreGrpcTransport:
    """A GAPIC transport on a metered channel (``usage.interceptors``): the emulator's when
    ``FIRESTORE_EMULATOR_HOST`` is set, else Firestore's with the default credentials."""
    emulator = os.environ.get(EMULATOR_ENV)
    if emulator:
        channel = grpc.intercept_channel(grpc.insecure_channel(emulator), *usage.interceptors())
        return FirestoreGrpcTransport(channel=channel)

    def metered(host: str, **options: Any) -> grpc.Channel:
        channel = FirestoreGrpcTransport.create_channel(host, **options)
        return grpc.intercept_channel(channel, *usage.interceptors())

    return FirestoreGrpcTransport(channel=metered)


@dataclasses.dataclass(frozen=True)
class Api:
    """The GAPIC client, the database it addresses, and the metadata each call carries."""

    client: FirestoreClient
    database: str
    metadata: tuple[tuple[str, str], ...]

    def name(self, path: str) -> str:
        return f"{self.database}/documents/{path}"


@functools.cache
def api() -> Api:
    """The GAPIC client, once per process (``clients.reset`` forgets it)."""
    metadata = _EMULATOR_AUTH if os.environ.get(EMULATOR_ENV) else ()
    client = FirestoreClient(transport=transport())
    return Api(client, f"projects/{clients.project_id()}/databases/(default)", metadata)


clients.on_reset(api.cache_clear)


# -- reading ------------------------------------------------------------------------------------


def timestamp(stamp: Any) -> datetime.datetime:
    """A Timestamp (raw protobuf) as the client library reads it: with its nanoseconds when
    it has some (``DatetimeWithNanoseconds``), else a plain UTC datetime (they compare equal)."""
    if stamp.nanos % 1000:
        return DatetimeWithNanoseconds.from_timestamp_pb(stamp)
    return stamp.ToDatetime(tzinfo=datetime.UTC)


def decode_value(value: Any) -> Any:
    """A ``Value`` (raw protobuf) as the client library gives it (a reference: its path)."""
    kind = value.WhichOneof("value_type")
    if kind == "map_value":
        return decode_fields(value.map_value.fields)
    if kind == "array_value":
        return [decode_value(v) for v in value.array_value.values]
    if kind == "timestamp_value":
        return timestamp(value.timestamp_value)
    if kind is None or kind == "null_value":
        return None
    if kind == "reference_value":
        return clients.db().document(value.reference_value.split("/documents/", 1)[1])
    if kind == "geo_point_value":
        return firestore.GeoPoint(value.geo_point_value.latitude, value.geo_point_value.longitude)
    return getattr(value, kind)


def decode_fields(fields: Any) -> dict[str, Any]:
    return {key: decode_value(fields[key]) for key in fields}


def read_beginning(paths: Sequence[str]) -> tuple[bytes, dict[str, dict[str, Any] | None]]:
    """Read ``paths`` and begin a read-write transaction with the read, in one round trip:
    (the transaction's id, each path's data or None)."""
    gapic = api()
    request = {
        "database": gapic.database,
        "documents": [gapic.name(path) for path in paths],
        "new_transaction": {"read_write": {}},
    }
    transaction = b""
    documents: dict[str, dict[str, Any] | None] = {}
    prefix = gapic.name("")
    for response in gapic.client.batch_get_documents(request=request, metadata=gapic.metadata):
        raw = type(response).pb(response)
        transaction = raw.transaction or transaction
        result = raw.WhichOneof("result")
        if result == "found":
            documents[raw.found.name.removeprefix(prefix)] = decode_fields(raw.found.fields)
        elif result == "missing":
            documents[raw.missing.removeprefix(prefix)] = None
    if not transaction:
        raise RuntimeError(f"Firestore began no transaction reading {list(paths)}")
    return transaction, documents


LIST_PAGE_SIZE = 1000
"""Documents per ListDocuments page (``list_documents``): a chat's whole history in one."""


@dataclasses.dataclass(frozen=True)
class Listed:
    """A document ``list_documents`` returned, read as a snapshot is (``documents.Snapshot``);
    its data was decoded for it alone, so ``to_dict`` hands it out without a copy."""

    path: str
    data: dict[str, Any]
    create_time: datetime.datetime
    exists: bool = True

    @property
    def id(self) -> str:
        return self.path.rsplit("/", 1)[1]

    @property
    def reference(self) -> Any:
        return clients.db().document(self.path)

    def to_dict(self) -> dict[str, Any]:
        return self.data


def list_documents(collection_path: str) -> list[Listed]:
    """Every document of a collection, in one round trip per 1,000, decoded from the raw
    protobuf. Every turn reads its whole chat, twice; the client library's query decodes each
    value through proto-plus and copies the result: for 50 messages 13.5 ms of Python CPU
    against 1.4 ms here, and in the reply benchmark at 10 ms a round trip the plain query made
    a reply 18-28 ms slower (p50). Billed the same: one read per document, one for none."""
    gapic = api()
    parent, _, collection_id = collection_path.rpartition("/")
    request = {
        "parent": gapic.name(parent).rstrip("/"),
        "collection_id": collection_id,
        "page_size": LIST_PAGE_SIZE,
    }
    prefix = gapic.name("")
    pager = gapic.client.list_documents(request=request, metadata=gapic.metadata)
    return [
        Listed(doc.name.removeprefix(prefix), decode_fields(doc.fields), timestamp(doc.create_time))
        for page in pager.pages
        for doc in type(page).pb(page).documents
    ]


# -- writing ------------------------------------------------------------------------------------


def fill_value(pb: Any, value: Any) -> None:
    """Set the raw protobuf ``Value`` ``pb`` to ``value`` as the client library encodes it."""
    if value is None:
        pb.null_value = 0
    elif isinstance(value, str):
        pb.string_value = value
    elif isinstance(value, bool):  # before int: a bool is an int
        pb.boolean_value = value
    elif isinstance(value, int):
        pb.integer_value = value
    elif isinstance(value, float):
        pb.double_value = value
    elif isinstance(value, dict):
        pb.map_value.SetInParent()  # an empty map is still a map
        for key, item in value.items():
            fill_value(pb.map_value.fields[key], item)
    elif isinstance(value, DatetimeWithNanoseconds):
        pb.timestamp_value.CopyFrom(value.timestamp_pb())
    elif isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.UTC)
        pb.timestamp_value.seconds = calendar.timegm(value.timetuple())
        pb.timestamp_value.nanos = value.microsecond * 1000
    elif isinstance(value, (list, tuple)):
        pb.array_value.SetInParent()
        for item in value:
            fill_value(pb.array_value.values.add(), item)
    elif type(value) is bytes:
        pb.bytes_value = value
    else:
        raise TypeError(f"a transaction begun by a read cannot write {type(value).__name__}")


def _leaves(data: dict[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in data.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, (*prefix, key))
        else:
            yield (*prefix, key)


def _split(data: dict[str, Any]) -> tuple[dict[str, Any], dict[tuple[str, ...], Any]]:
    """The plain values, and the increments by field path (nested ones included)."""
    plain: dict[str, Any] = {}
    increments: dict[tuple[str, ...], Any] = {}
    for key, value in data.items():
        if isinstance(value, firestore.Increment):
            increments[(key,)] = value.value
        elif isinstance(value, dict):
            inner, deeper = _split(value)
            if inner or not deeper:
                plain[key] = inner
            increments.update({(key, *path): v for path, v in deeper.items()})
        elif value is firestore.SERVER_TIMESTAMP or value is firestore.DELETE_FIELD:
            raise TypeError("a transaction begun by a read writes no server-side sentinel")
        else:
            plain[key] = value
    return plain, increments


def _write(name: str, data: dict[str, Any]) -> Any:
    """A ``Write`` (raw) of ``data`` to the document ``name``, its increments as transforms."""
    plain, increments = _split(data)
    raw = write.Write.pb()()
    raw.update.name = name
    for key, value in plain.items():
        fill_value(raw.update.fields[key], value)
    for path, amount in increments.items():
        transform = raw.update_transforms.add()
        transform.field_path = FieldPath(*path).to_api_repr()
        fill_value(transform.increment, amount)
    return raw, plain


def _nest(updates: dict[str, Any]) -> dict[str, Any]:
    """``update``'s dotted field paths as nested maps."""
    nested: dict[str, Any] = {}
    for dotted, value in updates.items():
        *parents, last = FieldPath.from_string(dotted).parts
        target = nested
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value
    return nested


class Writes:
    """The writes of a transaction begun by a read, in the client library's ``Transaction``
    forms that transactions here use: ``create``, ``set`` (``merge=True`` too) and ``update``
    of plain values and ``firestore.Increment``s."""

    def __init__(self) -> None:
        self.pbs: list[Any] = []

    def create(self, reference: firestore.DocumentReference, data: dict[str, Any]) -> None:
        raw, _ = _write(api().name(reference.path), data)
        raw.current_document.exists = False
        self.pbs.append(raw)

    def set(
        self, reference: firestore.DocumentReference, data: dict[str, Any], merge: bool = False
    ) -> None:
        raw, plain = _write(api().name(reference.path), data)
        if merge:
            mask = [FieldPath(*path).to_api_repr() for path in _leaves(plain)]
            raw.update_mask.field_paths.extend(mask)
            raw.update_mask.SetInParent()
        self.pbs.append(raw)

    def update(self, reference: firestore.DocumentReference, updates: dict[str, Any]) -> None:
        raw, plain = _write(api().name(reference.path), _nest(updates))
        mask = [FieldPath(*path).to_api_repr() for path in _leaves(plain)]
        raw.update_mask.field_paths.extend(mask)
        raw.update_mask.SetInParent()
        raw.current_document.exists = True
        self.pbs.append(raw)


def commit(transaction: bytes, writes: Writes) -> None:
    """Commit ``writes`` in ``transaction``; ``google.api_core.exceptions.Aborted`` on
    contention, ``AlreadyExists`` for a ``create`` of a document that exists."""
    gapic = api()
    request = messages.CommitRequest(
        database=gapic.database,
        transaction=transaction,
        writes=[write.Write.wrap(pb) for pb in writes.pbs],
    )
    gapic.client.commit(request=request, metadata=gapic.metadata)


def rollback(transaction: bytes) -> None:
    gapic = api()
    request = {"database": gapic.database, "transaction": transaction}
    gapic.client.rollback(request=request, metadata=gapic.metadata)
