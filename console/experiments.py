"""Experiments: the list, and the live view (agents, chats, errors, model use) pushed to the
page with server-sent events whenever the experiment's state changes."""

from __future__ import annotations

import time
from collections.abc import Iterator

from flask import Blueprint, Response, current_app, render_template, stream_with_context

from console.context import db
from console.live import read_state

blueprint = Blueprint("experiments", __name__)

POLL_S = 0.5
HEARTBEAT_S = 15.0


@blueprint.get("/")
def index() -> str:
    experiments = []
    for snap in db().collection("experiments").stream():
        data = snap.to_dict() or {}
        name = (data.get("metadata") or {}).get("name") or snap.id
        experiments.append({"id": snap.id, "name": name, "stages": len(data.get("stageIds") or [])})
    return render_template("experiments.html", experiments=experiments)


@blueprint.get("/experiments/<experiment_id>/live")
def live(experiment_id: str) -> str:
    return render_template("live.html", experiment_id=experiment_id)


@blueprint.get("/api/experiments/<experiment_id>/state")
def state(experiment_id: str) -> Response:
    return Response(read_state(db(), experiment_id).model_dump_json(), mimetype="application/json")


@blueprint.get("/api/experiments/<experiment_id>/events")
def events(experiment_id: str) -> Response:
    """One ``state`` event now and one per change; the page redraws from it (no reload)."""
    client = db()
    app = current_app._get_current_object()  # type: ignore[attr-defined]

    def stream() -> Iterator[str]:
        last, quiet_since = "", time.monotonic()
        while not app.extensions.get("dlab_stopping"):
            current = read_state(client, experiment_id).model_dump_json()
            if current != last:
                last, quiet_since = current, time.monotonic()
                yield f"event: state\ndata: {current}\n\n"
            elif time.monotonic() - quiet_since > HEARTBEAT_S:
                quiet_since = time.monotonic()
                yield ": still here\n\n"
            time.sleep(POLL_S)

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Response(stream_with_context(stream()), mimetype="text/event-stream", headers=headers)
