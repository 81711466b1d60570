"""fast_read decodes a document's protobuf into what the client's own decoding gives."""

from __future__ import annotations

import datetime

import pytest
from firestore_values import T0, every_type, offline_client
from google.cloud import firestore
from google.cloud.firestore_v1 import _helpers, base_client
from google.cloud.firestore_v1 import client as client_module
from google.cloud.firestore_v1.types import document as document_types
from google.cloud.firestore_v1.types import firestore as firestore_types
from google.cloud.firestore_v1.vector import Vector
from google.protobuf import timestamp_pb2
from proto.datetime_helpers import DatetimeWithNanoseconds

from functions import fast_read

PATH = "experiments/e1/participants/p1"


@pytest.fixture(scope="module")
def client() -> firestore.Client:
    return offline_client()


def _document(client: firestore.Client, data: dict) -> document_types.Document:
    fields = _helpers.encode_dict(data)
    # the client writes microseconds only; another writer (or the server) may store nanoseconds
    fields["nanos"] = document_types.Value(
        timestamp_value=timestamp_pb2.Timestamp(seconds=1767323045, nanos=123456789)
    )
    return document_types.Document(
        name=client.document(PATH)._document_path,
        fields=fields,
        create_time=T0,
        update_time=DatetimeWithNanoseconds(
            2026, 11, 23, 18, 0, 2, nanosecond=5, tzinfo=datetime.UTC
        ),
    )


def test_every_value_type_decodes_as_the_client_decodes_it(client):
    fields = _document(client, every_type(client))._pb.fields
    ours = fast_read.decode_fields(fields, client)
    theirs = _helpers.decode_dict(fields, client)
    assert ours == theirs
    assert ours.keys() == every_type(client).keys()
    assert isinstance(ours["vector"], Vector)
    assert ours["nanos"].nanosecond == 123456789
    assert type(ours["nanos"]) is type(theirs["nanos"])
    assert ours["time"] == T0 and ours["time"].tzinfo is not None
    assert ours["before epoch"] == theirs["before epoch"]
    assert ours["ref"].path == "experiments/e2"


def test_a_map_with_a_type_key_is_the_clients(client):
    data = {"m": {"__type__": "not a vector", "value": [1]}, "n": 1}
    fields = document_types.Document(fields=_helpers.encode_dict(data))._pb.fields
    assert fast_read.decode_fields(fields, client) == _helpers.decode_dict(fields, client)


def test_a_bson_value_is_the_clients(client):
    raw = document_types.Value(
        map_value=document_types.MapValue(fields={"__int__": {"integer_value": 7}})
    )
    assert fast_read.decode_value(raw._pb, client) == _helpers.decode_value(raw, client)


def _response(**result):
    return firestore_types.BatchGetDocumentsResponse(read_time=T0, **result)


def test_snapshots_match_the_clients(client):
    ref = client.document(PATH)
    refs = {ref._document_path: ref}
    found = _response(found=_document(client, every_type(client)))
    missing = _response(missing=ref._document_path)
    for response in (found, missing):
        ours = fast_read.parse_batch_get(response, refs, client)
        theirs = fast_read._ORIGINALS[(base_client, "_parse_batch_get")](response, refs, client)
        assert isinstance(ours, fast_read.Snapshot)
        assert (ours.exists, ours.id, ours.reference) == (
            theirs.exists,
            theirs.id,
            theirs.reference,
        )
        assert ours.to_dict() == theirs.to_dict()
        assert ours.to_dict() is not ours._data or ours._data is None  # to_dict still copies
        for time in ("read_time", "create_time", "update_time"):
            assert getattr(ours, time) == getattr(theirs, time)
            assert type(getattr(ours, time)) is type(getattr(theirs, time))
    assert fast_read.parse_batch_get(found, refs, client).update_time.nanosecond == 5


def test_install_replaces_the_clients_parsers_and_uninstall_restores_them():
    fast_read.install()
    try:
        assert client_module._parse_batch_get is fast_read.parse_batch_get
        assert base_client._parse_batch_get is fast_read.parse_batch_get
    finally:
        fast_read.uninstall()
    assert client_module._parse_batch_get is fast_read._ORIGINALS[(base_client, "_parse_batch_get")]
    fast_read.install()
