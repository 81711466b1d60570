"""Documents written to Firestore encoded straight into their protobuf, without proto-plus.

The client encodes every document it writes through proto-plus: a wrapper object per value,
built through a marshal, then copied into its parent. An agent's answer at a
survey-per-participant stage of 100 participants is thousands of values, and at 100 agents
encoding the writes was a sixth of the functions' CPU (cProfile of ``bench.transitions``:
``get_update_pb`` 17%, 62 ms per answer written).

``install`` replaces ``DocumentExtractor.get_update_pb``, which builds the ``Write`` of every
create, set, merge and update (batches and transactions alike), by one that fills a raw (upb)
``Write`` in place and hands the client its proto-plus wrapper (``Write.wrap``: no copy). A
create or a plain set of a document without sentinels (``SERVER_TIMESTAMP``, ``DELETE_FIELD``,
array and numeric transforms) is written from the data as given: the client's extractor walks
every leaf to find those, building a field path and setting the leaf again for each (most of
the rest of the time). Merges, updates, transforms, the request and the commit are still the
client's own. A value of a kind this module does not know (a vector, a BSON value, a GeoPoint,
a document reference, a set) is encoded by the client's ``encode_value``, so errors are the
client's too.
"""

from __future__ import annotations

import calendar
import datetime
import threading
from typing import Any

from google.cloud.firestore_v1 import _helpers, transforms
from google.cloud.firestore_v1.types import common, write

_Value = _helpers.document.Value
_NULL = 0  # google.protobuf.NullValue.NULL_VALUE
_WithNanoseconds = _helpers.DatetimeWithNanoseconds  # api_core's: the client keeps its nanos


def fill_value(pb: Any, value: Any) -> None:
    """Set the raw protobuf ``Value`` ``pb`` to ``value`` as the client's ``encode_value``
    would encode it."""
    if value is None:
        pb.null_value = _NULL
    elif isinstance(value, str):
        pb.string_value = value
    elif isinstance(value, bool):  # before int: a bool is an int
        pb.boolean_value = value
    elif isinstance(value, int):
        pb.integer_value = value
    elif isinstance(value, float):
        pb.double_value = value
    elif isinstance(value, dict):
        fields = pb.map_value.fields
        pb.map_value.SetInParent()  # an empty map is still a map
        for key, item in value.items():
            fill_value(fields[key], item)
    elif isinstance(value, datetime.datetime):
        if isinstance(value, _WithNanoseconds):
            pb.timestamp_value.CopyFrom(value.timestamp_pb())
        else:
            _fill_timestamp(pb.timestamp_value, value)
    elif isinstance(value, (list, tuple)):
        values = pb.array_value.values
        pb.array_value.SetInParent()  # an empty array is still an array
        for item in value:
            fill_value(values.add(), item)
    elif type(value) is bytes:  # a BSON binary is a bytes subclass with a subtype
        pb.bytes_value = value
    else:  # the client's own, and its TypeError for what Firestore cannot store
        pb.CopyFrom(_Value.pb(_helpers.encode_value(value)))


def _fill_timestamp(stamp: Any, value: datetime.datetime) -> None:
    """``_datetime_to_pb_timestamp``: a naive datetime is UTC."""
    if value.tzinfo is not None:
        value = value.astimezone(datetime.UTC)
    stamp.seconds = calendar.timegm(value.timetuple())
    stamp.nanos = value.microsecond * 1000


_SENTINELS = (transforms.Sentinel, transforms._ValueList, transforms._NumericValue)


def _has_sentinel(data: dict[str, Any]) -> bool:
    """Where the client's extractor looks for them: a map's values, nested maps included."""
    for value in data.values():
        if isinstance(value, dict):
            if _has_sentinel(value):
                return True
        elif isinstance(value, _SENTINELS):
            return True
    return False


def _document_write(document_path: str, data: dict[str, Any], exists: bool | None) -> write.Write:
    raw = write.Write.pb()()
    document = raw.update
    document.name = document_path
    fields = document.fields
    for key, value in data.items():
        fill_value(fields[key], value)
    if exists is not None:
        raw.current_document.exists = exists
    return write.Write.wrap(raw)


def pbs_for_create(document_path: str, document_data: dict[str, Any]) -> list[write.Write]:
    """``_helpers.pbs_for_create``; with a sentinel in the data, the client's own."""
    if _has_sentinel(document_data):
        return _ORIGINALS["pbs_for_create"](document_path, document_data)
    return [_document_write(document_path, document_data, exists=False)]


def pbs_for_set_no_merge(document_path: str, document_data: dict[str, Any]) -> list[write.Write]:
    """``_helpers.pbs_for_set_no_merge``; with a sentinel in the data, the client's own."""
    if _has_sentinel(document_data):
        return _ORIGINALS["pbs_for_set_no_merge"](document_path, document_data)
    return [_document_write(document_path, document_data, exists=None)]


def get_update_pb(
    self: Any, document_path: str, exists: bool | None = None, allow_empty_mask: bool = False
) -> write.Write:
    """``DocumentExtractor.get_update_pb``, the document encoded here."""
    written = _document_write(document_path, self.set_fields, exists)
    mask = self._get_update_mask(allow_empty_mask)
    if mask is not None:
        write.Write.pb(written).update_mask.CopyFrom(common.DocumentMask.pb(mask))
    return written


_ORIGINALS: dict[str, Any] = {
    "get_update_pb": _helpers.DocumentExtractor.get_update_pb,
    "pbs_for_create": _helpers.pbs_for_create,
    "pbs_for_set_no_merge": _helpers.pbs_for_set_no_merge,
}
_FAST: dict[str, Any] = {
    "get_update_pb": get_update_pb,
    "pbs_for_create": pbs_for_create,
    "pbs_for_set_no_merge": pbs_for_set_no_merge,
}
_lock = threading.Lock()


def install() -> None:
    """Encode the client's writes here from now on, in this process (idempotent)."""
    _patch(_FAST)


def uninstall() -> None:
    """Back to the client's own encoding (a test comparing the two)."""
    _patch(_ORIGINALS)


def _patch(functions: dict[str, Any]) -> None:
    with _lock:
        _helpers.DocumentExtractor.get_update_pb = functions["get_update_pb"]  # type: ignore[method-assign]
        _helpers.pbs_for_create = functions["pbs_for_create"]
        _helpers.pbs_for_set_no_merge = functions["pbs_for_set_no_merge"]
