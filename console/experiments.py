"""Experiments: the list, and the live view (agents, chats, errors, model use) pushed to the
page with server-sent events whenever the experiment's state changes."""

from __future__ import annotations

from flask import Blueprint, Response, render_template

from console import live_stream
from console.context import db
from console.live import read_state

blueprint = Blueprint("experiments", __name__)


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
    return live_stream.state_events(lambda: read_state(client, experiment_id))
