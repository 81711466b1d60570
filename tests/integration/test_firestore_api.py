"""``functions.firestore_api`` on the emulator: a collection listed reads as the client's query
of it reads, page by page, billed as the query is; a transaction begun by its read reads every
value type as the client library reads it, its writes (``Writes``) store what the client's own
writes store, it costs one read RPC and one commit (no BeginTransaction), and it holds what it
read until it ends (a rollback frees it)."""

from __future__ import annotations

import datetime
import math

import pytest
from google.api_core import exceptions as gexc
from google.cloud import firestore

from functions import firestore_api, store, transactions, usage

pytestmark = pytest.mark.usefixtures("clean")

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
        "geo": firestore.GeoPoint(48.85, 2.35),
        "array": [1, "two", None, {"nested": [3.0]}, {"k": T0}],
        "emptyArray": [],
        "map": {"a": {"b": {"c": T0, "d": [T0]}}, "dotted.key": 1},
        "emptyMap": {},
    }


def test_a_begun_read_reads_as_the_client_reads(db):
    data = _every_type(db)
    db.document("api/a").set({**data, "ref": db.document("experiments/other")})
    with transactions.begin_by_reading(["api/a", "api/gone"]) as begun:
        ours = dict(begun.documents)
    theirs = db.document("api/a").get().to_dict()
    assert ours["api/gone"] is None
    assert ours["api/a"].pop("ref").path == theirs.pop("ref").path
    assert ours["api/a"] == theirs


def test_its_writes_store_what_the_clients_writes_store(db):
    """create, set, set with merge and increments (``store.with_later``), update of a dotted
    path: each document as a batch of the client's writes leaves its twin."""
    data = _every_type(db)
    data.pop("geo")  # not a value a reply writes
    for name in ("ours", "theirs"):
        db.document(f"api/{name}-merged").set({"kept": 1, "counts": {"calls": 2}})
        db.document(f"api/{name}-updated").set({"map": {"a": 1, "b": 2}, "other": 3})

    def writes(batch, name: str) -> None:
        batch.create(db.document(f"api/{name}-created"), data)
        batch.set(db.document(f"api/{name}-set"), data)
        merged = {"counts": {"calls": firestore.Increment(3)}, "tokens": firestore.Increment(5)}
        batch.set(db.document(f"api/{name}-merged"), {"at": T0, **merged}, merge=True)
        batch.update(db.document(f"api/{name}-updated"), {"map.a": 10, "added": [T0]})

    batch = db.batch()
    writes(batch, "theirs")
    batch.commit()
    with usage.counting() as used, transactions.begin_by_reading(["api/ours-merged"]) as begun:
        writes(begun.transaction, "ours")
        begun.commit()
    for kind in ("created", "set", "merged", "updated"):
        ours, theirs = (db.document(f"api/{n}-{kind}").get().to_dict() for n in ("ours", "theirs"))
        assert ours == theirs, kind
    assert used.by_method == {"BatchGetDocuments": 1, "Commit": 1}
    assert (used.transactions, used.reads, used.writes) == (1, 1, 4)


def test_a_create_of_an_existing_document_fails_the_commit(db):
    db.document("api/taken").set({"n": 1})
    with transactions.begin_by_reading(["api/taken"]) as begun:
        begun.transaction.create(db.document("api/taken"), {"n": 2})
        with pytest.raises(gexc.AlreadyExists):
            begun.commit()
    assert db.document("api/taken").get().to_dict() == {"n": 1}


def test_a_closed_one_is_rolled_back_and_frees_what_it_read(db):
    """Closed without a commit, it writes nothing and the document it read takes other writes
    at once (a transaction left open would hold them until it expired)."""
    db.document("api/held").set({"n": 1})
    begun = transactions.begin_by_reading(["api/held"])
    begun.close()  # rolled back: the document is free
    store.ref("api/held").set({"n": 2})
    assert db.document("api/held").get().to_dict() == {"n": 2}
    with transactions.begin_by_reading(["api/held"]) as begun:
        assert begun.documents == {"api/held": {"n": 2}}
        begun.transaction.update(db.document("api/held"), {"n": 3})
        begun.commit()
    assert db.document("api/held").get().to_dict() == {"n": 3}


def test_a_listed_collection_reads_as_the_clients_query_reads_it(db, monkeypatch):
    """``store.every_document`` (ListDocuments, page by page): the documents, data and create
    times the client's query gives, not a subcollection's, one read billed per document (one
    for none)."""
    db.document("api/a").set({**_every_type(db), "ref": db.document("experiments/other")})
    db.document("api/b").set({"kind": "probe", "at": firestore.SERVER_TIMESTAMP})
    db.document("api/c").set({"kind": "probe"})
    db.document("api/a/under/x").set({"kind": "probe"})
    theirs = sorted(db.collection("api").get(), key=lambda s: s.id)
    monkeypatch.setattr(firestore_api, "LIST_PAGE_SIZE", 2)
    with usage.counting() as counted:
        ours = sorted(store.every_document("api"), key=lambda s: s.id)
    assert [s.reference.path for s in ours] == [s.reference.path for s in theirs]
    assert [s.id for s in ours] == ["a", "b", "c"]
    assert [s.create_time for s in ours] == [s.create_time for s in theirs]
    mine, client = store.data_of(ours[0]), store.data_of(theirs[0])
    assert mine is not None and client is not None
    assert mine.pop("ref").path == client.pop("ref").path
    assert [mine, *map(store.data_of, ours[1:])] == [client, *map(store.data_of, theirs[1:])]
    assert (counted.reads, counted.by_method) == (3, {"ListDocuments": 2})
    with usage.counting() as counted:
        assert store.every_document("api/a/nothing") == []
    assert counted.reads == 1
