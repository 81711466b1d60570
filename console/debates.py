"""Debates: the list with a form to create one from JSON, and a live view of each (progress,
clusters, latest statements, errors, decision) with pause/resume and the Markdown transcript."""

from __future__ import annotations

import uuid

from flask import (
    Blueprint,
    Response,
    jsonify,
    render_template,
    request,
)

from console import live_stream
from console.context import db
from console.debate_live import read_view
from shared.debate import loading
from shared.models import DocumentError
from tools.debate import state as debate_state
from tools.debate.transcript import markdown
from tools.owner import owned

blueprint = Blueprint("debates", __name__)


@blueprint.get("/debates")
def index() -> str:
    debates = []
    for snap in db().collection("debates").stream():
        data = snap.to_dict() or {}
        debates.append(
            {
                "id": snap.id,
                "name": data.get("name", ""),
                "mode": data.get("mode", "hierarchical"),
                "status": data.get("status", ""),
                "decision": (data.get("decision") or {}).get("conclusion", ""),
            }
        )
    return render_template("debates.html", debates=debates)


@blueprint.post("/api/debates")
def create() -> tuple[Response, int]:
    """Create a debate from the JSON body (checked as its start would check it first)."""
    body = request.get_json(silent=True)
    debate_id = request.args.get("id") or f"debate-{uuid.uuid4().hex[:8]}"
    path = f"debates/{debate_id}"
    try:
        if not isinstance(body, dict):
            raise DocumentError(path, "(document)", "a debate must be a JSON object")
        loading.load(body, path)
    except DocumentError as error:
        return jsonify(document=error.document, field=error.field, reason=error.reason), 422
    db().document(path).set(owned(body))
    return jsonify(id=debate_id), 201


@blueprint.get("/debates/<debate_id>/live")
def live(debate_id: str) -> str:
    return render_template("debate_live.html", debate_id=debate_id)


@blueprint.post("/api/debates/<debate_id>/paused")
def pause(debate_id: str) -> Response:
    paused = bool((request.get_json(silent=True) or {}).get("paused"))
    db().document(f"debates/{debate_id}").update({"paused": paused})
    return jsonify(paused=paused)


@blueprint.get("/debates/<debate_id>/transcript.md")
def transcript(debate_id: str) -> Response:
    text = markdown(debate_state.read(db(), debate_id))
    return Response(text, mimetype="text/markdown")


@blueprint.get("/api/debates/<debate_id>/state")
def state(debate_id: str) -> Response:
    return Response(read_view(db(), debate_id).model_dump_json(), mimetype="application/json")


@blueprint.get("/api/debates/<debate_id>/events")
def events(debate_id: str) -> Response:
    """One ``state`` event now and one per change (the pattern of the experiment live view)."""
    client = db()
    return live_stream.state_events(lambda: read_view(client, debate_id))
