"""The console's Flask app: a Firestore client for the project and the views of ``VIEWS``."""

from __future__ import annotations

from typing import Any

from flask import Flask
from google.cloud import firestore

from console.context import EXTENSION
from console.views import VIEWS


def create_app(project: str, client: firestore.Client | None = None) -> Flask:
    """The app for ``project`` (on the emulator that FIRESTORE_EMULATOR_HOST names)."""
    app = Flask(__name__)
    app.extensions[EXTENSION] = client or firestore.Client(project=project)
    app.config["PROJECT"] = project
    for view in VIEWS:
        app.register_blueprint(view.blueprint)

    @app.context_processor
    def navigation() -> dict[str, Any]:
        return {"views": VIEWS, "project": project}

    return app
