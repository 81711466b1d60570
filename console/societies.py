"""Agent societies: the list, a live view (day, members, proposals, laws, forum, daily
summaries, errors) pushed with server-sent events, and the researcher's controls (pause,
resume, give or take resources; settings are edited in the document editor, validated)."""

from __future__ import annotations

from flask import (
    Blueprint,
    Response,
    jsonify,
    render_template,
    request,
)

from console import live_stream
from console.context import db
from console.society_state import read_state
from shared.society.models import Intervention
from tools.society import client

blueprint = Blueprint("societies", __name__)
POLL_S = 1.0


@blueprint.get("/societies")
def index() -> str:
    societies = []
    for snap in db().collection("societies").stream():
        data = snap.to_dict() or {}
        settings = data.get("settings") or {}
        societies.append(
            {"id": snap.id, "name": data.get("name") or snap.id, "agents": settings.get("agents")}
        )
    return render_template("societies.html", societies=societies)


@blueprint.get("/societies/<sid>/live")
def live(sid: str) -> str:
    return render_template("society.html", society_id=sid)


@blueprint.get("/api/societies/<sid>/state")
def state(sid: str) -> Response:
    return Response(read_state(db(), sid).model_dump_json(), mimetype="application/json")


@blueprint.post("/api/societies/<sid>/<command>")
def command(sid: str, command: str) -> tuple[Response, int]:
    """``pause``, ``resume``, or ``give`` ({agentId, resource, amount, note}; amount < 0 takes)."""
    if command in ("pause", "resume"):
        client.set_status(db(), sid, "paused" if command == "pause" else "running")
        return jsonify({"status": command}), 200
    if command != "give":
        return jsonify({"error": f"unknown command {command!r}"}), 404
    try:
        item = Intervention.model_validate(request.get_json(force=True) or {})
    except ValueError as error:
        return jsonify({"document": f"societies/{sid}/interventions", "reason": str(error)}), 422
    iid = client.intervene(db(), sid, item.agent_id, item.resource, item.amount, item.note)
    return jsonify({"intervention": iid}), 200


@blueprint.get("/api/societies/<sid>/events")
def events(sid: str) -> Response:
    client = db()
    return live_stream.state_events(lambda: read_state(client, sid), poll_s=POLL_S)
