"""Agent societies: the list, a live view (day, members, proposals, laws, forum, daily
summaries, errors) pushed with server-sent events, and the researcher's controls (pause,
resume, give or take resources; settings are edited in the document editor, validated)."""

from __future__ import annotations

import time
from collections.abc import Iterator

from flask import (
    Blueprint,
    Response,
    current_app,
    jsonify,
    render_template,
    request,
    stream_with_context,
)

from console.context import db
from console.society_state import read_state
from shared.society.models import Intervention
from tools.society import client

blueprint = Blueprint("societies", __name__)
POLL_S = 1.0
HEARTBEAT_S = 15.0


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
    client_db = db()
    app = current_app._get_current_object()  # type: ignore[attr-defined]

    def stream() -> Iterator[str]:
        last, quiet_since = "", time.monotonic()
        while not app.extensions.get("dlab_stopping"):
            current = read_state(client_db, sid).model_dump_json()
            if current != last:
                last, quiet_since = current, time.monotonic()
                yield f"event: state\ndata: {current}\n\n"
            elif time.monotonic() - quiet_since > HEARTBEAT_S:
                quiet_since = time.monotonic()
                yield ": still here\n\n"
            time.sleep(POLL_S)

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Response(stream_with_context(stream()), mimetype="text/event-stream", headers=headers)
