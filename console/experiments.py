"""Experiments: the list, the live view (agents, chats, errors, model use) pushed to the
page with server-sent events whenever the experiment's state changes, and the download for
analysis (``python -m tools.export``'s files as one zip)."""

from __future__ import annotations

from flask import Blueprint, Response, abort, render_template

from console import live_stream
from console.context import db
from console.live import read_state
from tools import export

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


@blueprint.get("/experiments/<experiment_id>/export.zip")
def download(experiment_id: str) -> Response:
    """The same files as ``python -m tools.export`` (the API's download as JSON, its logs, the
    tidy tables as CSV and Parquet), zipped."""
    zipped = export.archive(experiment_id)
    if zipped is None:
        abort(404)
    return Response(
        zipped,
        mimetype="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{experiment_id}.zip"'},
    )
