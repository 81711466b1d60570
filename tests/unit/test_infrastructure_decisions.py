"""The infrastructure's pure parts: values as the export shows them, Firestore values encoded
and decoded without the client, increments split from plain fields, dotted paths nested, what a
call costs, which errors are contention, the documents that validate, a message as seen."""

from __future__ import annotations

import datetime
from types import SimpleNamespace
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud import firestore
from google.cloud.firestore_v1.types import document, write

from functions import (
    as_seen,
    documents,
    download,
    errors,
    firestore_api,
    pubsub,
    store,
    transactions,
    usage,
)
from shared.errors import Kind, PlatformError
from shared.models import ChatMessage, DocumentError, ProfileBase, UserType

UTC = datetime.UTC

# --- download.plain -----------------------------------------------------------------------


def test_plain_timestamps_as_seconds_and_nanoseconds() -> None:
    stamp = datetime.datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC)
    assert download.plain(stamp) == {"seconds": 1767323045, "nanoseconds": 678_000_000}
    naive = datetime.datetime(2026, 1, 2, 3, 4, 5)  # taken as UTC
    assert download.plain(naive) == {"seconds": 1767323045, "nanoseconds": 0}
    nanos = DatetimeWithNanoseconds(2026, 1, 2, 3, 4, 5, nanosecond=123, tzinfo=UTC)
    assert download.plain(nanos) == {"seconds": 1767323045, "nanoseconds": 123}


def test_plain_walks_maps_and_lists_and_names_references() -> None:
    reference = SimpleNamespace(path="experiments/e1/stages/s1", id="s1")
    value = {"a": [b"\x01\xff", (1, "x")], "ref": reference, "n": None}
    assert download.plain(value) == {
        "a": ["01ff", [1, "x"]],
        "ref": "experiments/e1/stages/s1",
        "n": None,
    }


# --- firestore_api ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None,
        "text",
        True,
        False,
        7,
        2.5,
        {},
        [],
        {"a": {"b": [1, "x", None]}, "c": b"\x00"},
        datetime.datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC),
    ],
)
def test_encode_then_decode_gives_the_value_back(value: Any) -> None:
    pb = document.Value.pb()()
    firestore_api.fill_value(pb, value)
    decoded = firestore_api.decode_value(pb)
    assert decoded == value and type(decoded) is type(value)


def test_encoding_keeps_bool_apart_from_int_and_refuses_sentinels() -> None:
    pb = document.Value.pb()()
    firestore_api.fill_value(pb, True)
    assert pb.WhichOneof("value_type") == "boolean_value"
    with pytest.raises(TypeError):
        firestore_api.fill_value(document.Value.pb()(), object())


def test_split_plain_values_from_increments() -> None:
    data = {
        "n": firestore.Increment(2),
        "name": "x",
        "tally": {"calls": firestore.Increment(1), "day": 3},
        "only": {"deep": firestore.Increment(5)},
        "empty": {},
    }
    plain, increments = firestore_api._split(data)
    assert plain == {"name": "x", "tally": {"day": 3}, "empty": {}}
    assert increments == {("n",): 2, ("tally", "calls"): 1, ("only", "deep"): 5}
    with pytest.raises(TypeError):
        firestore_api._split({"at": firestore.SERVER_TIMESTAMP})


def test_nest_dotted_paths() -> None:
    nested = firestore_api._nest({"a.b": 1, "a.c": 2, "d": 3, "`x.y`.z": 4})
    assert nested == {"a": {"b": 1, "c": 2}, "d": 3, "x.y": {"z": 4}}


# --- usage --------------------------------------------------------------------------------


def test_usage_adds_up_and_logs_one_line() -> None:
    used = usage.Usage(reads=2, writes=1, rpcs=3)
    used.by_method["Commit"] += 1
    used.add(usage.Usage(reads=1, deletes=4, transactions=1, rpcs=1))
    assert used.fields() == {"reads": 3, "writes": 1, "deletes": 4, "transactions": 1, "rpcs": 4}
    line = used.log_line("onMove", "experiments/e1")
    assert line == (
        "firestore usage: function=onMove subject=experiments/e1 "
        "reads=3 writes=1 deletes=4 transactions=1 rpcs=4"
    )
    entry = used.entry("onMove", "experiments/e1")
    assert entry["severity"] == "INFO" and entry["message"] == line
    assert entry["firestoreUsage"]["function"] == "onMove"
    assert entry["firestoreUsage"]["reads"] == 3


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ("", None),
        ("off", None),
        ("0", None),
        ("FALSE", None),
        ("1", "stdout"),
        ("stdout", "stdout"),
        ("On", "stdout"),
        ("/tmp/usage.jsonl", "/tmp/usage.jsonl"),
    ],
)
def test_usage_destination(monkeypatch: pytest.MonkeyPatch, value: str, where: str | None) -> None:
    monkeypatch.setenv("DLAB_USAGE_LOG", value)
    assert usage.destination() == where


@pytest.mark.parametrize(
    ("method", "name"),
    [
        ("/google.firestore.v1.Firestore/Commit", "Commit"),
        (b"/google.firestore.v1.Firestore/RunQuery", "RunQuery"),
        ("/google.pubsub.v1.Publisher/Publish", None),
        ("", None),
    ],
)
def test_usage_method_of_a_call(method: Any, name: str | None) -> None:
    assert usage._method(SimpleNamespace(method=method)) == name


def test_usage_commit_counts_writes_and_deletes() -> None:
    request = SimpleNamespace(
        writes=[
            write.Write(update=document.Document(name="d/1")),
            write.Write(delete="d/2"),
            write.Write(update=document.Document(name="d/3")),
        ]
    )
    assert usage._commit_writes(request) == (2, 1, ("d/1", "d/2", "d/3"))
    assert usage._commit_writes(SimpleNamespace()) == (0, 0, ())


# --- transactions, store, documents -------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "contention"),
    [
        (gexc.Aborted("lock"), True),
        (ValueError("Failed to commit transaction in 5 attempts."), True),
        (ValueError("other"), False),
        (gexc.NotFound("x"), False),
    ],
)
def test_is_contention(error: BaseException, contention: bool) -> None:
    assert transactions.is_contention(error) is contention


def test_retry_contended_retries_contention_only() -> None:
    calls: list[int] = []

    def write() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise gexc.Aborted("lock timeout")
        return "done"

    assert transactions.retry_contended(write) == "done" and len(calls) == 2

    def broken() -> None:
        calls.append(1)
        raise KeyError("bug")

    calls.clear()
    with pytest.raises(KeyError):
        transactions.retry_contended(broken)
    assert len(calls) == 1


def test_store_paths_and_ids() -> None:
    assert store.experiment_path("e1") == "experiments/e1"
    assert store.stage_path("e1", "s1") == "experiments/e1/stages/s1"
    assert store.participant_path("e1", "p1") == "experiments/e1/participants/p1"
    assert store.cohort_path("e1", "c1") == "experiments/e1/cohorts/c1"
    assert store._with_id("id", "a/b/c1", {"x": 1}) == {"x": 1, "id": "c1"}
    assert store._with_id("id", "a/b/c1", {"id": "kept"}) == {"id": "kept"}
    assert store._with_id("id", "a/b/c1", None) is None


class _Snap:
    def __init__(self, doc_id: str, data: dict[str, Any] | None) -> None:
        self.id, self._data = doc_id, data
        self.reference = SimpleNamespace(path=f"elsewhere/{doc_id}")
        self.exists = data is not None

    def to_dict(self) -> dict[str, Any] | None:
        return self._data


def _parse(path: str, data: dict[str, Any]) -> dict[str, Any]:
    if "bad" in data:
        raise DocumentError(path, "bad", "is bad")
    return data


def test_valid_keeps_the_documents_that_parse_with_their_ids() -> None:
    # under no experiment, a bad document's record is only logged (no Firestore write)
    snaps = [_Snap("a", {"x": 1}), _Snap("b", {"bad": 1}), _Snap("c", {"id": "c", "x": 2})]
    assert documents.valid(snaps, _parse) == [{"id": "a", "x": 1}, {"id": "c", "x": 2}]


def test_valid_refuses_a_private_id_naming_another_document() -> None:
    snaps = [_Snap("p1", {"privateId": "p2"}), _Snap("p3", {"privateId": "p3"}), _Snap("p4", {})]
    kept = documents.valid(snaps, _parse, id_field="privateId")
    assert kept == [{"privateId": "p3"}, {"privateId": "p4"}]


# --- as_seen ------------------------------------------------------------------------------


def test_a_message_as_seen_is_dated_by_its_creation_and_shows_the_stored_profile() -> None:
    created = datetime.datetime(2026, 1, 1, tzinfo=UTC)
    profile = ProfileBase(name="Ana")
    profiles = {(UserType.PARTICIPANT, "pub1"): profile}
    sent = ChatMessage(
        id="m", type=UserType.PARTICIPANT, sender_id="pub1", profile=ProfileBase(name="x")
    )
    seen = as_seen._as_seen(sent, created, profiles)
    assert seen.timestamp == created and seen.profile == profile
    assert sent.profile.name == "x"  # a copy
    unknown = as_seen._as_seen(sent.model_copy(update={"sender_id": "gone"}), created, profiles)
    assert unknown.profile == ProfileBase()
    system = ChatMessage(id="s", type=UserType.SYSTEM, profile=ProfileBase(name="System"))
    assert as_seen._as_seen(system, created, profiles).profile.name == "System"  # kept


def test_topic_path_names_the_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GCLOUD_PROJECT", raising=False)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "lab-1")
    assert pubsub.topic_path("agent-turn") == "projects/lab-1/topics/agent-turn"
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT")
    monkeypatch.setenv("GCLOUD_PROJECT", "lab-2")
    assert pubsub.topic_path("t") == "projects/lab-2/topics/t"


def test_publish_observers_are_removed_once() -> None:
    def seen(topic: str, message_id: str) -> None:
        pass

    pubsub.add_observer(seen)
    assert seen in pubsub._observers
    pubsub.remove_observer(seen)
    pubsub.remove_observer(seen)  # not there any more: nothing to do
    assert seen not in pubsub._observers


class _TopicGone:
    """A publisher whose topic is gone: each publish's future raises NotFound, and the topic
    has no subscription, ``back_after`` times; then publishes get ids."""

    def __init__(self, back_after: int) -> None:
        self.back_after = back_after
        self.published: list[bytes] = []

    def publish(self, path: str, data: bytes) -> Any:
        self.published.append(data)
        gone, n = self.back_after > 0, len(self.published)
        return SimpleNamespace(result=lambda timeout: self._answer(gone, n))

    def _answer(self, gone: bool, n: int) -> str:
        if gone:
            raise gexc.NotFound("Topic not found")
        return f"m{n}"

    def list_topic_subscriptions(self, topic: str, retry: Any, timeout: float) -> list[str]:
        self.back_after -= 1
        if self.back_after > 0:
            raise gexc.NotFound("Topic not found")
        return [f"{topic}-sub"]


def test_a_publish_that_meets_its_topic_gone_waits_for_it_or_is_the_platforms_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A restarted Pub/Sub emulator has lost its topics until the runtime makes them again: the
    refused payloads go again once the topic has a subscription; a topic that never comes back
    is a PlatformError (retried, not counted against the work), not a NotFound (the work's)."""
    monkeypatch.setattr(pubsub, "TOPIC_BACK_POLL_S", 0.01)
    back = _TopicGone(back_after=3)
    monkeypatch.setattr(pubsub.clients, "publisher", lambda: back)
    assert pubsub.publish_all("t", [1, 2], timeout=5) == ["m3", "m4"]
    assert back.published == [b"1", b"2", b"1", b"2"]
    never = _TopicGone(back_after=10**6)
    monkeypatch.setattr(pubsub.clients, "publisher", lambda: never)
    with pytest.raises(PlatformError, match="NotFound: 404 Topic not found"):
        pubsub.publish("t", {}, timeout=0.2)
    assert errors.kind_of(PlatformError("x")) is Kind.PLATFORM
