"""Documents of every value type written to the emulator read back through fast_read (the
functions' read path) equal to what the client's own decoding gives, by every read the
functions make: a get, a batch get with a missing document, a field mask, a query, a
collection group query, a read in a transaction, a collection listed (``store.every_document``);
and the usage counters count the same."""

from __future__ import annotations

import datetime
import math

import pytest
from google.cloud import firestore
from google.cloud.firestore_v1.vector import Vector
from google.protobuf import timestamp_pb2
from proto.datetime_helpers import DatetimeWithNanoseconds

from functions import fast_read, store, transactions, usage

T0 = datetime.datetime(2026, 11, 23, 18, 0, 1, 234567, tzinfo=datetime.UTC)


def _every_type(db: firestore.Client) -> dict:
    return {
        "null": None,
        "bool": True,
        "int": -(2**62),
        "float": 2.5,
        "inf": math.inf,
        "string": "héllo 🐻",
        "bytes": b"\x00\xff",
        "time": T0,
        "ref": db.document("experiments/other"),
        "geo": firestore.GeoPoint(48.85, 2.35),
        "array": [1, "two", None, {"nested": [3.0]}, {"k": T0}],
        "emptyArray": [],
        "map": {"a": {"b": {"c": T0, "d": [T0]}}, "dotted.key": 1},
        "emptyMap": {},
        "vector": Vector([1.0, 2.0]),
        "timestamps": {"readyStages": {f"s{i}": T0 for i in range(5)}},
        "kind": "probe",
    }


def _reads(db: firestore.Client) -> dict:
    a, b, gone = (db.document(f"fastRead/{x}") for x in ("a", "b", "gone"))
    out: dict = {
        "get": [a.get()],
        "missing": [gone.get()],
        "get_all": sorted(db.get_all([a, b, gone]), key=lambda s: s.id),
        "mask": [a.get(field_paths=["map.a", "time"])],
        "query": list(
            db.collection("fastRead")
            .where(filter=firestore.FieldFilter("kind", "==", "probe"))
            .stream()
        ),
        "group": db.collection_group("fastRead").get(),
    }

    @firestore.transactional
    def in_transaction(transaction):
        return [a.get(transaction=transaction), *transaction.get_all([b, gone])]

    out["transaction"] = in_transaction(db.transaction())
    return out


def _compare(ours: dict, theirs: dict) -> None:
    for how in theirs:
        assert len(ours[how]) == len(theirs[how]), how
        for mine, client in zip(ours[how], theirs[how], strict=True):
            assert isinstance(mine, fast_read.Snapshot), how
            assert not isinstance(client, fast_read.Snapshot), how
            assert (mine.exists, mine.id, mine.reference.path) == (
                client.exists,
                client.id,
                client.reference.path,
            ), how
            assert mine.to_dict() == client.to_dict(), how
            assert mine.update_time == _time(client.update_time), how
            assert mine.create_time == _time(client.create_time), how
            assert type(mine.update_time) is type(_time(client.update_time)), how


def _time(value):
    """The client's collection group snapshots hold their times as raw protobuf Timestamps
    (its other reads as datetimes); fast_read gives datetimes for all."""
    if isinstance(value, timestamp_pb2.Timestamp):
        return DatetimeWithNanoseconds.from_timestamp_pb(value)
    return value


@pytest.mark.usefixtures("clean")
def test_every_value_type_reads_back_as_the_client_reads_it(db):
    db.document("fastRead/a").set(_every_type(db))
    db.document("fastRead/b").set({"kind": "probe", "at": firestore.SERVER_TIMESTAMP})
    fast_read.uninstall()
    try:
        with usage.counting() as counted_theirs:
            theirs = _reads(db)
    finally:
        fast_read.install()
    with usage.counting() as counted_ours:
        ours = _reads(db)
    _compare(ours, theirs)
    got = ours["get"][0].to_dict()
    assert isinstance(got["vector"], Vector)
    assert ours["mask"][0].to_dict() == {"map": {"a": {"b": {"c": T0, "d": [T0]}}}, "time": T0}
    assert ours["missing"][0].to_dict() is None and ours["missing"][0].update_time is None
    assert counted_ours.fields() == counted_theirs.fields()
    assert counted_ours.by_method == counted_theirs.by_method


@pytest.mark.usefixtures("clean")
def test_an_update_time_read_here_is_a_precondition_that_holds(db):
    """``store.read_versioned`` writes conditional on the update time a snapshot read."""
    ref = db.document("fastRead/v")
    ref.set({"n": 1})
    fast_read.install()
    snap = ref.get()
    assert isinstance(snap, fast_read.Snapshot)
    ref.update({"n": 2}, option=db.write_option(last_update_time=snap.update_time))
    assert ref.get().to_dict() == {"n": 2}


@pytest.mark.usefixtures("clean")
def test_a_listed_collection_reads_as_the_clients_query_reads_it(db, monkeypatch):
    """``store.every_document`` (ListDocuments, page by page) gives the snapshots the client's
    query of the whole collection gives, not its subcollections' documents, and bills one read
    per document (one for none), as the query does."""
    every_type = _every_type(db)
    reference = every_type.pop("ref")  # decoded with the functions' client (``store.db``)
    db.document("fastRead/a").set(every_type)
    db.document("fastRead/b").set({"kind": "probe", "at": firestore.SERVER_TIMESTAMP})
    db.document("fastRead/c").set({"kind": "probe", "ref": reference})
    db.document("fastRead/a/under/x").set({"kind": "probe"})
    fast_read.uninstall()
    try:
        theirs = sorted(db.collection("fastRead").get(), key=lambda s: s.id)
    finally:
        fast_read.install()
    monkeypatch.setattr(store, "LIST_PAGE_SIZE", 2)
    with usage.counting() as counted:
        ours = sorted(store.every_document("fastRead"), key=lambda s: s.id)
    for snap in (ours[2], theirs[2]):  # the two clients' references differ; their paths not
        assert snap._data.pop("ref").path == reference.path
    _compare({"listed": ours}, {"listed": theirs})
    assert (counted.reads, counted.by_method) == (3, {"ListDocuments": 2})
    with usage.counting() as counted:
        assert store.every_document("fastRead/a/nothing") == []
    assert counted.reads == 1


@pytest.mark.usefixtures("clean")
def test_a_transaction_begun_by_its_read_counts_as_one(db):
    """``transactions.begin_by_reading`` begins no transaction of its own (no BeginTransaction):
    the usage counters count the read that began it."""
    db.document("fastRead/a").set({"n": 1})
    paths = ["fastRead/a", "fastRead/gone"]
    with usage.counting() as counted, transactions.begin_by_reading(paths) as begun:
        assert begun.documents == {"fastRead/a": {"n": 1}, "fastRead/gone": None}
        begun.transaction.update(db.document("fastRead/a"), {"n": 2})
        begun.commit()
    assert (counted.transactions, counted.reads, counted.writes) == (1, 2, 1)
    assert counted.by_method == {"BatchGetDocuments": 1, "Commit": 1}
    assert db.document("fastRead/a").get().to_dict() == {"n": 2}
