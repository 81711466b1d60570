"""Firestore access for the functions: the client, typed reads, and small write helpers."""

from __future__ import annotations

from typing import Any, TypeVar

from google.cloud import firestore
from pydantic import BaseModel

from functions import memo
from functions.clients import db, project_id
from functions.clients import reset as reset_clients
from shared import paths
from shared.models import (
    CohortConfig,
    Experiment,
    ParticipantProfile,
    StageConfig,
    parse_document,
    parse_stage,
)

M = TypeVar("M", bound=BaseModel)

# Document fields that Deliberate Lab sets to the document id; a console edit may leave them out.
_ID_FIELDS = {
    ParticipantProfile: "privateId",
    Experiment: "id",
    CohortConfig: "id",
}


__all__ = ["db", "project_id", "reset_clients"]  # the clients, re-exported for callers


def ref(path: str) -> firestore.DocumentReference:
    return db().document(path)


def snapshot_data(
    path: str, transaction: Any = None, *, fields: list[str] | None = None
) -> dict[str, Any] | None:
    """The document's data (None if it does not exist); ``fields``: only these (a field mask,
    so the rest is neither sent nor decoded)."""
    snap = ref(path).get(field_paths=fields, transaction=transaction)
    return snap.to_dict() if snap.exists else None


def _with_id(field: str, path: str, data: dict[str, Any] | None) -> dict[str, Any] | None:
    """Fill the id field from the document id when a console edit left it out."""
    if data is not None and not data.get(field):
        data = {**data, field: path.rsplit("/", 1)[1]}
    return data


_KEPT_PER_INVOCATION = (Experiment,)
"""Models read once per invocation outside transactions (``memo``; per instance too, when
``DLAB_CONFIG_CACHE_SECONDS`` is set): nothing the functions do changes them while they run."""


def read(model: type[M], path: str, transaction: Any = None) -> M:
    """Read and validate a document; DocumentError names the path and field when it is unusable."""
    if transaction is None and model in _KEPT_PER_INVOCATION:
        return memo.shared(("read", model, path), path, lambda: _read(model, path, None))
    return _read(model, path, transaction)


def _read(model: type[M], path: str, transaction: Any) -> M:
    data = snapshot_data(path, transaction)
    return parse(model, path, data)


def read_versioned(model: type[M], path: str) -> tuple[M, Any]:
    """``read``, with the document's update time (for a write conditional on it)."""
    snap = ref(path).get()
    return parse(model, path, snap.to_dict() if snap.exists else None), snap.update_time


def parse(model: type[M], path: str, data: dict[str, Any] | None) -> M:
    """Validate data already read from ``path`` (as ``read`` does)."""
    return parse_document(model, path, _with_id(_ID_FIELDS.get(model, "id"), path, data))


def read_stage(experiment_id: str, stage_id: str, transaction: Any = None) -> StageConfig:
    """A stage config; outside a transaction read once per invocation (``memo``)."""
    path = stage_path(experiment_id, stage_id)
    if transaction is None:
        return memo.shared(("stage", path), path, lambda: _read_stage(path, None))
    return _read_stage(path, transaction)


def _read_stage(path: str, transaction: Any) -> StageConfig:
    return parse_stage(path, _with_id("id", path, snapshot_data(path, transaction)))


def experiment_path(experiment_id: str) -> str:
    return paths.build(paths.EXPERIMENT, experimentId=experiment_id)


def stage_path(experiment_id: str, stage_id: str) -> str:
    return paths.build(paths.STAGE, experimentId=experiment_id, stageId=stage_id)


def participant_path(experiment_id: str, participant_id: str) -> str:
    return paths.build(paths.PARTICIPANT, experimentId=experiment_id, participantId=participant_id)


def cohort_path(experiment_id: str, cohort_id: str) -> str:
    return paths.build(paths.COHORT, experimentId=experiment_id, cohortId=cohort_id)


def stage_data_path(experiment_id: str, participant_id: str, stage_id: str) -> str:
    return paths.build(
        paths.STAGE_DATA, experimentId=experiment_id, participantId=participant_id, stageId=stage_id
    )


def public_stage_data_path(experiment_id: str, cohort_id: str, stage_id: str) -> str:
    return paths.build(
        paths.PUBLIC_STAGE_DATA, experimentId=experiment_id, cohortId=cohort_id, stageId=stage_id
    )


def move_lease_path(experiment_id: str, participant_id: str) -> str:
    return paths.build(paths.MOVE_LEASE, experimentId=experiment_id, participantId=participant_id)


def participants(experiment_id: str) -> firestore.CollectionReference:
    return db().collection(paths.collection_of(paths.PARTICIPANT, experimentId=experiment_id))
