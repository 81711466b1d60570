"""The document browser: collections and documents of the project, with create, edit (JSON,
validated before writing) and delete, like the Firebase console's data tab."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, render_template, request
from google.cloud import firestore

from console import firestore_json, validation
from console.context import db
from functions.journal import JOURNAL
from tools.journal_data import RUN_KINDS

blueprint = Blueprint("documents", __name__)


def _is_document(path: str) -> bool:
    return bool(path) and len(path.split("/")) % 2 == 0


def _run_of(path: str) -> tuple[str, str] | None:
    """(kind, id) of the run a path is in (``experiments/e1/...``), if any."""
    parts = path.split("/")
    return (parts[0], parts[1]) if len(parts) >= 2 and parts[0] in RUN_KINDS else None


def _in_journal(path: str) -> bool:
    parts = path.split("/")
    return _run_of(path) is not None and len(parts) >= 3 and parts[2] == JOURNAL


def _collections(parent: firestore.DocumentReference | None) -> list[str]:
    found = parent.collections() if parent is not None else db().collections()
    return sorted(c.id for c in found)


@blueprint.get("/docs/")
@blueprint.get("/docs/<path:path>")
def browse(path: str = "") -> str:
    path = path.strip("/")
    if not path:
        return render_template(
            "collection.html", path="", documents=[], collections=_collections(None)
        )
    if _is_document(path):
        ref = db().document(path)
        snap = ref.get()
        data = firestore_json.to_json(snap.to_dict()) if snap.exists else None
        return render_template(
            "document.html",
            path=path,
            data=data,
            collections=_collections(ref),
            model=validation.model_for(path),
            journal_of=_run_of(path),
        )
    documents = sorted(s.id for s in db().collection(path).list_documents())
    return render_template(
        "collection.html",
        path=path,
        documents=documents,
        collections=[],
        model=validation.model_for(f"{path}/x"),
    )


def _refuse(status: int, document: str, field: str, reason: str) -> tuple[Response, int]:
    return jsonify({"document": document, "field": field, "reason": reason}), status


@blueprint.put("/api/docs/<path:path>")
def save(path: str) -> tuple[Response, int]:
    """Create or replace a document; 422 with the model's error (and nothing written) if invalid."""
    path = path.strip("/")
    if not _is_document(path):
        return _refuse(400, path, "(path)", "not a document path (collection/doc/...)")
    if _in_journal(path):
        return _read_only(path)
    try:
        data: Any = request.get_json(force=True)
    except Exception as error:
        return _refuse(422, path, "(document)", f"not valid JSON: {error}")
    problem = validation.validate(path, data)
    if problem is not None:
        return _refuse(422, problem.document, problem.field, problem.reason)
    db().document(path).set(firestore_json.from_json(data))
    return jsonify({"written": path}), 200


@blueprint.post("/api/docs/<path:path>")
def create(path: str) -> tuple[Response, int]:
    """Create a document with a generated id in the collection ``path``."""
    path = path.strip("/")
    return save(f"{path}/{db().collection(path).document().id}")


def _read_only(path: str) -> tuple[Response, int]:
    reason = "the journal is read-only: a replay hands its recorded replies back as the model's"
    return _refuse(403, path, "(path)", reason)


@blueprint.delete("/api/docs/<path:path>")
def delete(path: str) -> tuple[Response, int]:
    if _in_journal(path.strip("/")):
        return _read_only(path.strip("/"))
    db().document(path.strip("/")).delete()
    return jsonify({"deleted": path}), 200
