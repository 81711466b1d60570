"""Firestore access for the functions: the client, typed reads, and small write helpers."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from google.cloud import firestore
from pydantic import BaseModel

from functions import firestore_api, reads
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

# -- the client's names the domain writes with ----------------------------------------------------
# Domain modules (agents, chat, conductor, debate, society) never import the Firestore client
# (tests/unit/test_code_shape.py); what of it they name comes from here.

Transaction = firestore.Transaction
"""The handle a transaction body is given (``transactions.run``)."""
WriteBatch = firestore.WriteBatch
"""A batch of writes committed together."""
DELETE_FIELD: Any = firestore.DELETE_FIELD
"""An update's value that removes the field."""
SERVER_TIMESTAMP: Any = firestore.SERVER_TIMESTAMP
"""An update's value that the server replaces with the commit time."""


def increment(by: float) -> Any:
    """An update's value that adds ``by`` to the stored number (0 if none)."""
    return firestore.Increment(by)


def array_union(values: list[Any]) -> Any:
    """An update's value that adds ``values`` the stored array lacks."""
    return firestore.ArrayUnion(values)


def find(
    collection_path: str,
    where: tuple[str, str, Any] | None = None,
    *,
    fields: list[str] | None = None,
    limit: int | None = None,
) -> list[Any]:
    """Snapshots of the collection's documents, in one query: those whose ``field op value``
    (``where``), only ``fields`` of each (a field mask), at most ``limit``. For the named reads
    of a system's documents module, which say what they look for."""
    query: Any = db().collection(collection_path)
    if where is not None:
        query = query.where(filter=firestore.FieldFilter(*where))
    if fields is not None:
        query = query.select(fields)
    if limit is not None:
        query = query.limit(limit)
    return list(query.stream())


def ref(path: str) -> firestore.DocumentReference:
    return db().document(path)


def batch() -> firestore.WriteBatch:
    """A batch of writes, committed together by its ``commit``."""
    return db().batch()


def unchanged_since(update_time: Any) -> Any:
    """A write's precondition: the document was last written at ``update_time`` (a snapshot's);
    the write fails with FailedPrecondition if it was written since."""
    return db().write_option(last_update_time=update_time)


def snapshots(paths: list[str], transaction: firestore.Transaction | None = None) -> dict[str, Any]:
    """The documents' snapshots by path, read in one round trip (a missing one's ``exists`` is
    false)."""
    if not paths:
        return {}
    found = db().get_all([ref(p) for p in paths], transaction=transaction)
    return {snap.reference.path: snap for snap in found}


def _get(
    path: str, transaction: firestore.Transaction | None = None, fields: list[str] | None = None
) -> Any:
    """The document's snapshot: the one read ahead for this read (``reads.ahead``), if any
    (never in a transaction, nor for a field mask), else read now."""
    if transaction is None and fields is None:
        ahead = reads.current().take(path)
        if ahead is not None:
            return ahead
    return ref(path).get(field_paths=fields, transaction=transaction)


def snapshot_data(
    path: str, transaction: firestore.Transaction | None = None, *, fields: list[str] | None = None
) -> dict[str, Any] | None:
    """The document's data (None if it does not exist); ``fields``: only these (a field mask,
    so the rest is neither sent nor decoded)."""
    return data_of(_get(path, transaction, fields))


def every_document(collection_path: str) -> list[Any]:
    """Every document of a collection, as snapshots are read (``firestore_api.list_documents``:
    the chat's history, which every turn reads twice, decoded without proto-plus)."""
    return list(firestore_api.list_documents(collection_path))


def data_of(snap: Any) -> dict[str, Any] | None:
    """A snapshot's data (None if the document does not exist)."""
    return snap.to_dict() if snap.exists else None


@dataclasses.dataclass
class _Later:
    """A document waiting for a batch: replaced, or (``counts``) its fields incremented."""

    data: dict[str, Any] = dataclasses.field(default_factory=dict)
    counts: dict[str, float] = dataclasses.field(default_factory=dict)

    def write(self, batch: firestore.WriteBatch, path: str) -> None:
        if self.counts:
            fields = {name: firestore.Increment(value) for name, value in self.counts.items()}
            batch.set(ref(path), self.data | fields, merge=True)
        else:
            batch.set(ref(path), self.data)


_later: contextvars.ContextVar[dict[str, _Later] | None] = contextvars.ContextVar(
    "later", default=None
)


@contextlib.contextmanager
def writing_later() -> Iterator[None]:
    """Within the block, documents written with ``set_later`` go in the block's next batch
    that takes them (``with_later``), so a record of the step (a model call's log) costs no
    round trip of its own; whatever no batch took is written at the block's end, in one
    batch, an exception included. Outside such a block ``set_later`` writes at once."""
    pending: dict[str, _Later] = {}
    token = _later.set(pending)
    try:
        yield
    except BaseException as failure:  # the step's own error is the one to report
        _later.reset(token)
        try:
            _write_now(pending)
        except Exception as lost:
            failure.add_note(f"and the step's model log was not written: {lost!r}")
        raise
    _later.reset(token)
    _write_now(pending)


def _write_now(documents: dict[str, _Later]) -> None:
    if documents:
        batch = db().batch()
        for path, later in documents.items():
            later.write(batch, path)
        batch.commit()


def writes_later() -> bool:
    """Whether ``set_later`` waits for a batch here (inside a ``writing_later`` block)."""
    return _later.get() is not None


def set_later(path: str, data: dict[str, Any]) -> None:
    """Write the document with the next batch that takes it (see ``writing_later``)."""
    pending = _later.get()
    if pending is None:
        ref(path).set(data)
    else:
        pending[path] = _Later(data)


def add_later(path: str, counts: dict[str, float], data: dict[str, Any] | None = None) -> None:
    """Increment the document's ``counts`` (and merge ``data``) with the next batch that takes
    it; increments of one document waiting together add up. At once outside a block."""
    pending = _later.get()
    if pending is None:
        _write_now({path: _Later(data or {}, dict(counts))})
        return
    was = pending.get(path) or _Later()
    summed = {name: was.counts.get(name, 0) + counts.get(name, 0) for name in was.counts | counts}
    pending[path] = _Later(was.data | (data or {}), summed)


def with_later(batch: firestore.WriteBatch) -> Callable[[], None]:
    """Add the documents waiting to be written (``set_later``) to ``batch``; returns what to
    call once the batch committed (until then they are still waiting: a batch that fails,
    say for its precondition, leaves them to the next batch or the block's end)."""
    pending = _later.get()
    taken = dict(pending or {})
    for path, later in taken.items():
        later.write(batch, path)

    def committed() -> None:
        for path in taken:
            if pending is not None:
                pending.pop(path, None)

    return committed


def _with_id(field: str, path: str, data: dict[str, Any] | None) -> dict[str, Any] | None:
    """Fill the id field from the document id when a console edit left it out."""
    if data is not None and not data.get(field):
        data = {**data, field: path.rsplit("/", 1)[1]}
    return data


_KEPT_PER_INVOCATION = (Experiment,)
"""Models read once per invocation outside transactions (``reads.Reads.config``; per instance
too, when ``DLAB_CONFIG_CACHE_SECONDS`` is set): nothing the functions do changes them."""


def read(model: type[M], path: str, transaction: firestore.Transaction | None = None) -> M:
    """Read and validate a document; DocumentError names the path and field when it is unusable."""
    if transaction is None and model in _KEPT_PER_INVOCATION:
        return reads.current().config(path, lambda: _read(model, path, None))
    return _read(model, path, transaction)


def _read(model: type[M], path: str, transaction: firestore.Transaction | None) -> M:
    data = snapshot_data(path, transaction)
    return parse(model, path, data)


def read_versioned(model: type[M], path: str) -> tuple[M, Any]:
    """``read``, with the document's update time (for a write conditional on it)."""
    snap = _get(path)
    return parse(model, path, data_of(snap)), snap.update_time


def parse(model: type[M], path: str, data: dict[str, Any] | None) -> M:
    """Validate data already read from ``path`` (as ``read`` does)."""
    return parse_document(model, path, _with_id(_ID_FIELDS.get(model, "id"), path, data))


def read_stage(
    experiment_id: str, stage_id: str, transaction: firestore.Transaction | None = None
) -> StageConfig:
    """A stage config; outside a transaction read once per invocation (``reads``)."""
    path = stage_path(experiment_id, stage_id)
    if transaction is None:
        return reads.current().config(path, lambda: _read_stage(path, None))
    return _read_stage(path, transaction)


def _read_stage(path: str, transaction: firestore.Transaction | None) -> StageConfig:
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
