"""The console's JSON API and live-view data on the emulator (no browser): writes are validated
before anything is written, deletes delete, error records are marked resolved once nothing is
blocked on their document."""

from __future__ import annotations

import json

import pytest
from flask.testing import FlaskClient
from google.cloud import firestore

from console.app import create_app
from console.live import read_state

E = "experiments/console-api"


@pytest.fixture
def api(runtime, db: firestore.Client) -> FlaskClient:
    return create_app(runtime.project, db).test_client()


def test_writes_are_checked_and_nothing_is_written_when_they_fail(api, db):
    path = f"{E}/participants/p1"
    for body, status in (("{not json", 422), ('{"currentStatus": "ASLEEP"}', 422), ("[]", 422)):
        assert api.put(f"/api/docs/{path}", data=body).status_code == status
    assert not db.document(path).get().exists
    refused = api.put(f"/api/docs/{E}/participants", data="{}")
    assert refused.status_code == 400 and refused.json["field"] == "(path)"

    created = api.post(f"/api/docs/{E}/stages", data=json.dumps({"kind": "info"}))
    assert created.status_code == 200
    written = created.json["written"]
    assert db.document(written).get().to_dict() == {"kind": "info"}
    assert api.delete(f"/api/docs/{written}").status_code == 200
    assert not db.document(written).get().exists


def test_pages_render(api, db):
    db.document(E).set({"stageIds": ["a"], "metadata": {"name": "Console API"}})
    db.document(f"{E}/participants/p1").set({"currentStageId": "a"})
    assert "Console API" in api.get("/").get_data(True)
    page = api.get(f"/docs/{E}/participants/p1").get_data(True)
    assert "currentStageId" in page and "participants" in page
    assert "p1" in api.get(f"/docs/{E}/participants").get_data(True)
    assert api.get(f"/experiments/{E.split('/')[1]}/live").status_code == 200


def test_error_records_are_resolved_when_nothing_is_blocked_on_them(db):
    stage = f"{E}/stages/missing"
    db.document(E).set({"stageIds": ["missing"]})
    db.document(f"{E}/errors/e1").set(
        {"document": stage, "field": "kind", "reason": "document does not exist", "occurrences": 2}
    )
    agent = db.document(f"{E}/participants/a1")
    agent.set({"agentConfig": {}, "agentBlockedOn": {"document": stage}})
    (error,) = _ours(read_state(db, "console-api").errors)
    assert (error.document, error.field, error.occurrences, error.resolved) == (
        stage,
        "kind",
        2,
        False,
    )
    agent.update({"agentBlockedOn": None})
    assert _ours(read_state(db, "console-api").errors)[0].resolved


def _ours(errors):
    """The record this test wrote (the backend may add its own about the bare documents)."""
    return [e for e in errors if e.path == f"{E}/errors/e1"]


def test_the_event_stream_opens_with_the_experiment_state(api, db):
    db.document(E).set({"stageIds": ["a"], "metadata": {"name": "Streamed"}})
    response = api.get("/api/experiments/console-api/events", buffered=False)
    try:
        assert response.mimetype == "text/event-stream"
        first = next(iter(response.response)).decode()
    finally:
        response.close()
    event, data = first.split("\n")[:2]
    assert event == "event: state" and json.loads(data.removeprefix("data: "))["name"] == "Streamed"
