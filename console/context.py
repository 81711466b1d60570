"""What every view gets from the app: the project's Firestore client."""

from __future__ import annotations

from flask import current_app
from google.cloud import firestore

EXTENSION = "dlab_firestore"


def db() -> firestore.Client:
    return current_app.extensions[EXTENSION]
