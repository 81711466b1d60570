"""The console's JSON API and live-view data on the emulator (no browser): writes are validated
before anything is written, deletes delete, error records are marked resolved once nothing is
blocked on their document."""

from __future__ import annotations

import datetime
import json

import pytest
from flask.testing import FlaskClient
from google.cloud import firestore

from console.app import create_app
from console.live import read_state
from functions.journal import RecordedToolCall
from shared.llm.base import ToolCall

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


J = "societies/console-journal"


def _recorded(key: str, seconds: int, text: str) -> dict:
    """A journal entry as functions/journal.py writes it."""
    at = datetime.datetime(2026, 1, 1, 0, 0, seconds, tzinfo=datetime.UTC)
    return {
        "key": key,
        "modelName": "scripted",
        "description": f"turn {key}",
        "stageId": "day-1",
        "agent": "member-2",
        "text": text,
        "toolCalls": [],
        "promptTokens": 11,
        "completionTokens": 3,
        "log": f"{J}/logs/l-{key}",
        "recordedAt": at,
        "expireAt": at + datetime.timedelta(days=90),
    }


def test_a_runs_journal_is_shown_read_only(api, db):
    """The recorded calls of a run, oldest first, with who asked, tokens, time, size and text;
    the page links the run's documents, the documents link the journal, and nothing in the
    console writes a journal."""
    # only the journal: a society document would start the backend on it
    later, earlier = _recorded("k2", 30, "second <b>reply</b>"), _recorded("k1", 10, "first")
    db.document(f"{J}/journal/k2").set(later)
    db.document(f"{J}/journal/k1").set(earlier)
    state = api.get("/api/journal/societies/console-journal").json
    assert [r["key"] for r in state["rows"]] == ["k1", "k2"]
    first = state["rows"][0]
    assert (first["description"], first["agent"], first["stage_id"], first["text"]) == (
        "turn k1",
        "member-2",
        "day-1",
        "first",
    )
    assert (first["prompt_tokens"], first["completion_tokens"]) == (11, 3)
    assert first["recorded_at"] == "2026-01-01T00:00:10+00:00"
    assert first["log_id"] == f"{J}/logs/l-k1" and first["stored_bytes"] > 200
    assert (state["calls"], state["prompt_tokens"], state["completion_tokens"]) == (2, 22, 6)

    page = api.get(f"/journal/{J}").get_data(True)
    assert "turn k1" in page and "second &lt;b&gt;reply&lt;/b&gt;" in page  # escaped
    assert f'href="/docs/{J}"' in page
    assert f'href="/journal/{J}"' in api.get(f"/docs/{J}").get_data(True)
    assert f'href="/journal/{J}"' in api.get("/journal").get_data(True)
    assert api.get("/journal/nothing/x").status_code == 404
    for page, kind in (
        ("/experiments/x/live", "experiments"),
        ("/societies/x/live", "societies"),
        ("/debates/x/live", "debates"),
        ("/conductor/x", "conversations"),
    ):  # each run's own page links its journal
        assert f'href="/journal/{kind}/x"' in api.get(page).get_data(True), page
    assert api.get("/api/journal/experiments/none-such").json["rows"] == []

    edit = api.put(f"/api/docs/{J}/journal/k1", data=json.dumps({**first, "text": "forged"}))
    assert edit.status_code == 403 and "read-only" in edit.json["reason"]
    assert api.post(f"/api/docs/{J}/journal", data="{}").status_code == 403
    assert api.delete(f"/api/docs/{J}/journal/k1").status_code == 403
    stored = db.document(f"{J}/journal/k1").get().to_dict()
    assert stored["text"] == "first"
    assert len(db.collection(f"{J}/journal").get()) == 2


def test_a_tool_call_is_a_row_of_the_journal_page(api, db):
    """A reply's tool call is an entry of the run's journal: one row, the tool as its
    description, the step as its stage, its result as its text; counted apart from replies."""
    run, step = "conversations/console-tools", "conversations/console-tools/steps/0003"
    call = RecordedToolCall.of("k" * 40, step, 0, 0, ToolCall("c1", "lookup", {"city": "Oslo"}),
                               "", "answerer")  # fmt: skip
    done = call.model_copy(update={"status": "done", "result": "sunny in Oslo"})
    db.document(f"{run}/journal/{call.key}").set(done.to_firestore())
    db.document(f"{run}/journal/{'k' * 40}").set(_recorded("k", 1, "calls lookup"))
    state = api.get("/api/journal/conversations/console-tools").json
    assert (state["calls"], state["tool_calls"]) == (1, 1)
    [row] = [r for r in state["rows"] if r["kind"] == "toolCall"]
    assert (row["key"], row["description"], row["stage_id"], row["text"]) == (
        f"{'k' * 40}.00",
        "tool lookup",
        step,
        "sunny in Oslo",
    )
    assert json.loads(row["tool_calls"])[0]["arguments"] == '{"city": "Oslo"}'
    assert "tool lookup" in api.get(f"/journal/{run}").get_data(True)
