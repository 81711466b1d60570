"""fast_write encodes a written document into the protobuf the client's own encoding gives."""

from __future__ import annotations

import pytest
from firestore_values import every_type, offline_client
from google.cloud import firestore
from google.cloud.firestore_v1.types import write

from functions import fast_write


@pytest.fixture(scope="module")
def client() -> firestore.Client:
    return offline_client()


def _writes(client: firestore.Client, build) -> list[write.Write]:
    batch = client.batch()
    build(batch, client.document("experiments/e1/participants/p1"))
    return list(batch._write_pbs)


def _both(client: firestore.Client, build) -> tuple[list[write.Write], list[write.Write]]:
    fast_write.uninstall()
    try:
        theirs = _writes(client, build)
    finally:
        fast_write.install()
    try:
        return theirs, _writes(client, build)
    finally:
        fast_write.uninstall()


@pytest.mark.parametrize(
    "build",
    [
        lambda b, ref, data: b.create(ref, data),
        lambda b, ref, data: b.set(ref, data),
        lambda b, ref, data: b.set(ref, data, merge=True),
        lambda b, ref, data: b.set(ref, data, merge=["map.a", "int"]),
        lambda b, ref, data: b.update(ref, {"map.a.b": data["map"]["a"]["b"], "int": 1}),
        lambda b, ref, data: b.update(
            ref, {"n": 1}, option=b._client.write_option(last_update_time=data["api nanos"])
        ),
        lambda b, ref, data: b.set(
            ref,
            {**data, "at": firestore.SERVER_TIMESTAMP, "gone": firestore.DELETE_FIELD},
            merge=True,
        ),
        lambda b, ref, data: b.update(
            ref, {"tags": firestore.ArrayUnion(["x"]), "n": firestore.Increment(2), "m": {}}
        ),
        lambda b, ref, data: b.create(ref, {**data, "map": {"at": firestore.SERVER_TIMESTAMP}}),
        lambda b, ref, data: b.set(ref, {**data, "n": firestore.Increment(1)}),
        lambda b, ref, data: b.create(ref, {}),
        lambda b, ref, data: b.set(ref, {}),
    ],
    ids=[
        "create",
        "set",
        "merge",
        "merge-fields",
        "update",
        "conditional",
        "sentinels",
        "ops",
        "create-with-sentinel",
        "set-with-sentinel",
        "create-empty",
        "set-empty",
    ],
)
def test_every_write_is_the_protobuf_the_client_builds(client, build) -> None:
    data = every_type(client)
    theirs, ours = _both(client, lambda b, ref: build(b, ref, data))
    assert [type(w) for w in ours] == [write.Write] * len(theirs)
    assert [write.Write.pb(w) for w in ours] == [write.Write.pb(w) for w in theirs]


def test_a_value_firestore_cannot_store_is_the_clients_error(client) -> None:
    fast_write.install()
    try:
        with pytest.raises(TypeError):
            _writes(client, lambda b, ref: b.set(ref, {"x": {"y": object()}}))
    finally:
        fast_write.uninstall()


def test_the_client_encodes_through_it_once_installed(client) -> None:
    fast_write.install()
    try:
        calls = []
        original = fast_write.fill_value
        fast_write.fill_value = lambda pb, value: calls.append(value) or original(pb, value)
        try:
            _writes(client, lambda b, ref: b.set(ref, {"a": 1}))
        finally:
            fast_write.fill_value = original
        assert calls == [1]
    finally:
        fast_write.uninstall()
