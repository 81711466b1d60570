"""The journal of a run (functions/journal.py): every model reply recorded for an experiment,
a society, a debate or a conversation, with who asked (description, agent, stage), its tokens,
when it was recorded, its size and its text; and every tool call of a reply, with its result.
Read-only: the journal is the model's record, and a replay hands its replies back as they are
(the document editor refuses to write it too)."""

from __future__ import annotations

from flask import Blueprint, Response, abort, render_template
from google.cloud import firestore
from pydantic import BaseModel

from console.context import db
from functions.journal import TOOL_CALL
from tools import journal_data

blueprint = Blueprint("journal", __name__)


class JournalRow(BaseModel):
    key: str
    kind: str
    """``reply``, or ``toolCall`` (the tool in ``description``, its result in ``text``)."""
    recorded_at: str
    description: str
    agent: str
    stage_id: str
    model_name: str
    prompt_tokens: int
    completion_tokens: int
    stored_bytes: int
    log_id: str
    """The path of the call's log entry, written in the same batch."""
    tool_calls: str
    text: str


class RunJournal(BaseModel):
    run: str
    """``{kind}/{id}``: ``experiments/e1``, ``societies/s1``, ..."""
    calls: int
    """Recorded replies."""
    tool_calls: int
    """Recorded tool calls."""
    prompt_tokens: int
    completion_tokens: int
    stored_bytes: int
    rows: list[JournalRow]
    """Oldest first."""


def read_journal(client: firestore.Client, kind: str, run_id: str) -> RunJournal:
    run = f"{kind}/{run_id}"
    table = journal_data.rows(run, journal_data.entries(client, run))
    rows = [JournalRow(**row) for row in table]
    return RunJournal(
        run=run,
        calls=sum(1 for r in rows if r.kind != TOOL_CALL),
        tool_calls=sum(1 for r in rows if r.kind == TOOL_CALL),
        prompt_tokens=sum(r.prompt_tokens for r in rows),
        completion_tokens=sum(r.completion_tokens for r in rows),
        stored_bytes=sum(r.stored_bytes for r in rows),
        rows=rows,
    )


def _run_of(kind: str, run_id: str) -> RunJournal:
    if kind not in journal_data.RUN_KINDS:
        abort(404)
    return read_journal(db(), kind, run_id)


@blueprint.get("/journal")
def index() -> str:
    """Every run, by kind, with a link to its journal and its documents."""
    runs = {
        kind: sorted(ref.id for ref in db().collection(kind).list_documents())
        for kind in journal_data.RUN_KINDS
    }
    return render_template("journal_runs.html", runs=runs)


@blueprint.get("/journal/<kind>/<run_id>")
def page(kind: str, run_id: str) -> str:
    return render_template("journal.html", journal=_run_of(kind, run_id))


@blueprint.get("/api/journal/<kind>/<run_id>")
def state(kind: str, run_id: str) -> Response:
    return Response(_run_of(kind, run_id).model_dump_json(), mimetype="application/json")
