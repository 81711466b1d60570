"""Documents read from Firestore decoded straight from their protobuf, without proto-plus.

The client turns every document it reads into Python through proto-plus (a wrapper object and
a marshal per field access), its own ``decode_value`` per value, a ``DatetimeWithNanoseconds``
per timestamp, and then a deep copy of the whole decoded dict when it builds the snapshot: at a
cohort of 100 participants that was most of the functions' CPU per stage transition.

``install`` replaces the three functions the client builds its snapshots with (a
BatchGetDocuments response: ``DocumentReference.get``, ``Client.get_all``, ``Transaction.get``;
a RunQuery response: ``Query.get``/``stream``, collection groups) by ones that read the raw
(upb) protobuf, decode each ``Value`` by its oneof, and build a ``Snapshot`` (a
``DocumentSnapshot`` whose construction keeps the freshly decoded dict instead of copying it).
Everything else is the client's own: the request, the gapic call (so ``usage`` counts the same
RPCs and documents), transactions, field masks, query retries.

What differs from the client's decoding:

- a timestamp whose nanoseconds are whole microseconds (every timestamp Firestore stores) is a
  plain aware ``datetime`` (UTC), not a ``DatetimeWithNanoseconds``; the two compare and hash
  equal, and one with sub-microsecond nanoseconds is still a ``DatetimeWithNanoseconds``;
- a snapshot's ``read_time``, ``create_time`` and ``update_time`` are decoded when first used
  (still ``DatetimeWithNanoseconds``, so a write conditional on ``update_time`` keeps its
  nanoseconds).

Maps that are a vector or a BSON value (``__type__``, or one key such as ``__oid__``) go to the
client's own ``decode_dict``.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any

from google.cloud.firestore_v1 import _helpers, base_client
from google.cloud.firestore_v1 import query as query_module
from google.cloud.firestore_v1.base_document import DocumentSnapshot
from proto.datetime_helpers import DatetimeWithNanoseconds

_UTC = datetime.UTC
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)
_timedelta = datetime.timedelta
_GeoPoint = _helpers.GeoPoint


_times: dict[tuple[int, int], datetime.datetime] = {}
_TIMES_KEPT = 20_000
"""Timestamps decoded, by (seconds, nanos): datetimes are immutable, and the same documents
(a cohort's members) are read again and again, so most timestamps were decoded before. About
200 bytes an entry (4 MB when full, then emptied): 100 members' 25 timestamps are 2,500."""


def timestamp(stamp: Any) -> datetime.datetime:
    """A Timestamp protobuf as a UTC datetime, shared by every read of the same instant."""
    key = (stamp.seconds, stamp.nanos)
    found = _times.get(key)
    if found is not None:
        return found
    if key[1] % 1000:  # the class the client's decode_value gives (api_core's, not proto's)
        found = _helpers.DatetimeWithNanoseconds.from_timestamp_pb(stamp)
    else:
        found = _EPOCH + _timedelta(seconds=key[0], microseconds=key[1] // 1000)
    if len(_times) >= _TIMES_KEPT:
        _times.clear()
    _times[key] = found
    return found


def decode_value(value: Any, client: Any) -> Any:
    """A Firestore ``Value`` (raw protobuf) as the client's ``decode_value`` gives it."""
    kind = value.WhichOneof("value_type")
    if kind == "string_value":
        return value.string_value
    if kind == "map_value":
        return decode_fields(value.map_value.fields, client)
    if kind == "timestamp_value":
        return timestamp(value.timestamp_value)
    if kind == "boolean_value":
        return value.boolean_value
    if kind == "integer_value":
        return value.integer_value
    if kind == "double_value":
        return value.double_value
    if kind == "null_value":
        return None
    if kind == "array_value":
        return [decode_value(v, client) for v in value.array_value.values]
    if kind == "bytes_value":
        return value.bytes_value
    if kind == "reference_value":
        return _helpers.reference_value_to_document(value.reference_value, client)
    if kind == "geo_point_value":
        point = value.geo_point_value
        return _GeoPoint(point.latitude, point.longitude)
    return _helpers.decode_value(value, client)  # an unknown kind: the client's error


def decode_fields(fields: Any, client: Any) -> Any:
    """A map of ``Value``s (a document's or a map value's fields, raw protobuf)."""
    out = {key: decode_value(fields[key], client) for key in fields}  # items() is slower
    if out and ("__type__" in out or (len(out) == 1 and next(iter(out)).startswith("__"))):
        return _helpers.decode_dict(fields, client)  # a vector or a BSON value
    return out


class Snapshot(DocumentSnapshot):
    """A ``DocumentSnapshot`` that keeps the dict it is given (decoded for it alone, so no one
    else holds it) and decodes its times when first asked. ``to_dict`` and ``get`` still copy."""

    def __init__(
        self, reference: Any, data: Any, exists: bool, read_pb: Any, document_pb: Any
    ) -> None:
        self._reference = reference
        self._data = data
        self._exists = exists
        self._read_pb = read_pb
        self._document_pb = document_pb

    @property
    def read_time(self) -> Any:
        return _time_of(self._read_pb)

    @property
    def create_time(self) -> Any:
        return None if self._document_pb is None else _time_of(self._document_pb.create_time)

    @property
    def update_time(self) -> Any:
        return None if self._document_pb is None else _time_of(self._document_pb.update_time)


def _time_of(stamp: Any) -> Any:
    return DatetimeWithNanoseconds.from_timestamp_pb(stamp) if stamp is not None else None


def parse_batch_get(
    get_doc_response: Any, reference_map: dict[str, Any], client: Any
) -> DocumentSnapshot:
    """``base_client._parse_batch_get`` on the raw protobuf."""
    pb = get_doc_response._pb
    result_type = pb.WhichOneof("result")
    if result_type == "found":
        reference = base_client._get_reference(pb.found.name, reference_map)
        return _found(reference, pb, pb.found, client)
    if result_type == "missing":
        reference = base_client._get_reference(pb.missing, reference_map)
        return Snapshot(reference, None, False, _read(pb), None)
    raise ValueError(
        "`BatchGetDocumentsResponse.result` (a oneof) had a field other "
        "than `found` or `missing` set, or was unset"
    )


def query_response_to_snapshot(
    response_pb: Any, collection: Any, expected_prefix: str
) -> DocumentSnapshot | None:
    """``base_query._query_response_to_snapshot`` on the raw protobuf."""
    pb = response_pb._pb
    if not pb.HasField("document"):
        return None
    reference = collection.document(_helpers.get_doc_id(pb.document, expected_prefix))
    return _found(reference, pb, pb.document, collection._client)


def collection_group_query_response_to_snapshot(
    response_pb: Any, collection: Any
) -> DocumentSnapshot | None:
    """``base_query._collection_group_query_response_to_snapshot`` on the raw protobuf."""
    pb = response_pb._pb
    if not pb.HasField("document"):
        return None
    client = collection._client
    return _found(client.document(pb.document.name), pb, pb.document, client)


def _found(reference: Any, response: Any, document: Any, client: Any) -> Snapshot:
    """The snapshot of a document a response found, its fields decoded here (``response``:
    None for a listed one, whose page has no read time)."""
    read_time = None if response is None else _read(response)
    return Snapshot(reference, decode_fields(document.fields, client), True, read_time, document)


def listed(document: Any, client: Any) -> Snapshot:
    """The snapshot of a document a ListDocuments response holds (raw protobuf)."""
    return _found(client.document(document.name), None, document, client)


def _read(pb: Any) -> Any:
    return pb.read_time if pb.HasField("read_time") else None


_ORIGINALS = {
    (base_client, "_parse_batch_get"): base_client._parse_batch_get,
    (query_module, "_query_response_to_snapshot"): query_module._query_response_to_snapshot,
    (query_module, "_collection_group_query_response_to_snapshot"): (
        query_module._collection_group_query_response_to_snapshot
    ),
}
_FAST = {
    (base_client, "_parse_batch_get"): parse_batch_get,
    (query_module, "_query_response_to_snapshot"): query_response_to_snapshot,
    (query_module, "_collection_group_query_response_to_snapshot"): (
        collection_group_query_response_to_snapshot
    ),
}
_lock = threading.Lock()


def install() -> None:
    """Build the client's snapshots here from now on, in this process (idempotent)."""
    _patch(_FAST)


def uninstall() -> None:
    """Back to the client's own decoding (a test comparing the two)."""
    _patch(_ORIGINALS)


def _patch(functions: dict[tuple[Any, str], Any]) -> None:
    from google.cloud.firestore_v1 import client as client_module

    with _lock:
        for (module, name), function in functions.items():
            setattr(module, name, function)
        # the client module imported the batch-get parser by name
        client_module._parse_batch_get = functions[(base_client, "_parse_batch_get")]
