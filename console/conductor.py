"""Conductor workflows: create a conversation, watch its steps and attempts live, steer it by
editing a memory field, cancel it."""

from __future__ import annotations

import re
import uuid

from flask import (
    Blueprint,
    Response,
    abort,
    jsonify,
    render_template,
    request,
)

from console import conductor_state as state
from console import live_stream
from console.context import db
from functions.conductor import human
from tools import conversation_export
from tools.owner import owned

blueprint = Blueprint("conductor", __name__)

_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


@blueprint.get("/conductor")
def index() -> str:
    return render_template(
        "conductor.html",
        conversations=state.list_conversations(db()),
        workflows=state.workflows(db()),
    )


@blueprint.get("/conductor/<conversation_id>")
def conversation(conversation_id: str) -> str:
    return render_template("conversation.html", conversation_id=conversation_id)


@blueprint.post("/api/conductor/conversations")
def create() -> tuple[Response, int]:
    body = request.get_json(silent=True) or {}
    query, workflow = str(body.get("query") or "").strip(), str(body.get("workflowId") or "")
    if not query or not workflow:
        return jsonify({"field": "query" if not query else "workflowId", "reason": "required"}), 422
    if workflow not in state.workflows(db()):
        return jsonify({"field": "workflowId", "reason": f"no workflow {workflow!r}"}), 422
    conversation_id = str(body.get("id") or uuid.uuid4().hex[:12])
    db().document(f"conversations/{conversation_id}").create(
        owned({"query": query, "workflowId": workflow, "status": "PENDING"})
    )
    return jsonify({"id": conversation_id}), 201


@blueprint.get("/api/conductor/<conversation_id>/state")
def read(conversation_id: str) -> Response:
    found = state.read_conversation(db(), conversation_id)
    if found is None:
        abort(404)
    return Response(found.model_dump_json(), mimetype="application/json")


@blueprint.post("/api/conductor/<conversation_id>/cancel")
def cancel(conversation_id: str) -> Response:
    return jsonify({"status": state.cancel(db(), conversation_id)})


@blueprint.put("/api/conductor/<conversation_id>/memory/<field>")
def set_memory(conversation_id: str, field: str) -> tuple[Response, int]:
    body = request.get_json(silent=True)
    if not _FIELD.match(field):
        return jsonify({"field": f"memory.{field}", "reason": "not a field name"}), 422
    if not isinstance(body, dict) or "value" not in body:
        return jsonify({"field": f"memory.{field}", "reason": 'send {"value": ...}'}), 422
    state.set_memory(db(), conversation_id, field, body["value"])
    return jsonify({"field": field}), 200


@blueprint.post("/api/conductor/<conversation_id>/answer")
def answer(conversation_id: str) -> tuple[Response, int]:
    """A person's answer to the conversation's waiting human step (``{"values": {...}}``),
    checked as the step will check it before it is written."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not isinstance(body.get("values"), dict):
        return jsonify({"field": "values", "reason": 'send {"values": {...}}'}), 422
    written = human.submit(conversation_id, body["values"], by="console")
    if isinstance(written, human.Refused):
        return jsonify({"field": written.field, "reason": written.reason}), written.status
    return jsonify({"answer": written}), 201


@blueprint.get("/api/conductor/<conversation_id>/export.jsonl")
def export(conversation_id: str) -> Response:
    """The conversation as JSON Lines (what ``python -m tools.export --conversation`` writes)."""
    found = conversation_export.records(db(), conversation_id)
    if found is None:
        abort(404)
    headers = {"Content-Disposition": f'attachment; filename="{conversation_id}.jsonl"'}
    return Response(conversation_export.jsonl(found), mimetype="application/jsonl", headers=headers)


@blueprint.get("/api/conductor/<conversation_id>/events")
def events(conversation_id: str) -> Response:
    client = db()
    return live_stream.state_events(lambda: state.read_conversation(client, conversation_id))
