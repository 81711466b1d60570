"""CloudEvent decoding: Firestore DocumentEventData protobuf and the Pub/Sub envelope."""

import base64
import json
from datetime import UTC, datetime

from cloudevents.http import CloudEvent
from google.events.cloud.firestore import Document, DocumentEventData, Value
from google.protobuf.timestamp_pb2 import Timestamp

from emulator import receiver
from functions import _events
from shared import paths

NAME = "projects/p/databases/(default)/documents/experiments/e1/participants/p1"


def _doc(**fields) -> Document:
    return Document(name=NAME, fields=fields)


def _cloud_event(data: bytes) -> CloudEvent:
    attrs = {
        "type": "google.cloud.firestore.document.v1.updated",
        "source": "//firestore.googleapis.com/projects/p/databases/(default)",
        "id": "ev-1",
        "document": "experiments/e1/participants/p1",
    }
    return CloudEvent(attrs, data)


def test_firestore_event_values_params_before_and_after():
    ts = Timestamp()
    ts.FromDatetime(datetime(2026, 1, 2, tzinfo=UTC))
    after = _doc(
        name=Value(string_value="Ann"),
        n=Value(integer_value=3),
        ok=Value(boolean_value=True),
        none=Value(null_value=0),
        at=Value(timestamp_value=ts),
        tags=Value(array_value={"values": [Value(string_value="a"), Value(double_value=1.5)]}),
        nested=Value(map_value={"fields": {"k": Value(string_value="v")}}),
    )
    raw = DocumentEventData.serialize(
        DocumentEventData(value=after, old_value=_doc(n=Value(integer_value=2)))
    )
    event = _events.firestore_event(_cloud_event(raw), paths.PARTICIPANT)
    assert event.params == {"experimentId": "e1", "participantId": "p1"}
    assert event.before == {"n": 2}
    assert event.after == {
        "name": "Ann",
        "n": 3,
        "ok": True,
        "none": None,
        "at": datetime(2026, 1, 2, tzinfo=UTC),
        "tags": ["a", 1.5],
        "nested": {"k": "v"},
    }
    assert not event.is_phantom and not event.is_noop


def test_the_document_path_comes_from_the_payload_whatever_its_characters():
    """The ``document`` attribute comes through HTTP headers as Latin-1; the payload is UTF-8."""
    for participant in ("Zoë-team-A", "参加者-1", "agent-🦊"):
        name = f"projects/p/databases/(default)/documents/experiments/e1/participants/{participant}"
        raw = DocumentEventData.serialize(DocumentEventData(value=Document(name=name, fields={})))
        event = _cloud_event(raw)
        event["document"] = f"experiments/e1/participants/{participant}".encode().decode("latin-1")
        decoded = _events.firestore_event(event, paths.PARTICIPANT)
        assert decoded.document == f"experiments/e1/participants/{participant}"
        assert decoded.params["participantId"] == participant


def test_phantom_and_noop_are_recognised():
    phantom = _events.firestore_event(_cloud_event(b""), paths.PARTICIPANT)
    assert phantom.is_phantom
    same = _doc(n=Value(integer_value=1))
    raw = DocumentEventData.serialize(DocumentEventData(value=same, old_value=same))
    assert _events.firestore_event(_cloud_event(raw), paths.PARTICIPANT).is_noop


def test_pubsub_envelope():
    payload = {"experimentId": "e1", "participantId": "p1"}
    envelope = {
        "message": {
            "data": base64.b64encode(json.dumps(payload).encode()).decode(),
            "attributes": {"a": "b"},
            "messageId": "m-1",
        },
        "subscription": "projects/p/subscriptions/s",
    }
    event = _events.pubsub_event(
        CloudEvent(
            {
                "type": "google.cloud.pubsub.topic.v1.messagePublished",
                "source": "//pubsub.googleapis.com/projects/p/topics/agent-wake",
                "id": "x",
            },
            envelope,
        )
    )
    assert (event.id, event.topic, event.attributes) == ("m-1", "agent-wake", {"a": "b"})
    assert event.json() == payload


def _stamp(second: int) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(datetime(2026, 1, 2, 0, 0, second, tzinfo=UTC))
    return ts


def _stored(update_second: int, **fields) -> Document:
    return Document(name=NAME, fields=fields, update_time=_stamp(update_second))


def test_the_runtime_drops_what_production_never_delivers():
    """The local runtime's receiver compares the documents as stored: a rewrite of the same
    fields (maps in any key order, new update time) is a no-op; any changed value is not."""
    updated = "google.cloud.firestore.document.v1.updated"

    def raw(before, after):
        return DocumentEventData.serialize(DocumentEventData(value=after, old_value=before))

    def nested(*keys):
        return Value(map_value={"fields": {k: Value(integer_value=i) for i, k in keys}})

    a = _stored(1, m=nested((1, "x"), (2, "y")), s=Value(string_value="v"))
    same = _stored(2, s=Value(string_value="v"), m=nested((2, "y"), (1, "x")))
    changed = _stored(2, m=nested((1, "x"), (3, "y")), s=Value(string_value="v"))
    typed = _stored(2, m=nested((1, "x"), (2, "y")), s=Value(bytes_value=b"v"))
    path = "experiments/e1/participants/p1"
    assert receiver.classify(updated, raw(a, same)) == ("no-op update", path)
    assert receiver.classify(updated, raw(a, changed)) == (None, path)
    assert receiver.classify(updated, raw(a, typed)) == (None, path)
    assert receiver.classify("google.cloud.firestore.document.v1.created", raw(None, a)) == (
        None,
        path,
    )
    assert receiver.classify(updated, b"") == ("phantom", None)
