"""Error records: what the backend could not do, with the document, field and reason.

Written to ``experiments/{e}/errors/{id}`` where the experimenter sees them in the console. The
id is derived from the error itself, so a repeated delivery updates one record instead of adding
new ones.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
from collections.abc import Iterator

from google.api_core import exceptions as gexc
from google.cloud import firestore

from functions import store
from shared import paths
from shared.errors import BackendError, Kind
from shared.models import DocumentError, ErrorRecord, now
from shared.models.logs import cut_to_bytes

log = logging.getLogger(__name__)

_function: contextvars.ContextVar[str] = contextvars.ContextVar("function", default="backend")


@contextlib.contextmanager
def invoked_as(function: str) -> Iterator[None]:
    """Name the running function, so code deep in a call can file an error under it."""
    token = _function.set(function)
    try:
        yield
    finally:
        _function.reset(token)


def current_function() -> str:
    return _function.get()


PLATFORM_ERRORS: tuple[type[BaseException], ...] = (
    gexc.ServiceUnavailable,
    gexc.DeadlineExceeded,
    gexc.InternalServerError,
    gexc.Aborted,
    gexc.RetryError,
)
"""Transient failures of Firestore or Pub/Sub (their clients' own retries ran out): the
platform's, not the work's."""


def kind_of(error: BaseException) -> Kind:
    """The kind of any exception (``shared.errors``): a ``BackendError``'s own; a transient
    Firestore or Pub/Sub failure is the platform's; anything else is a bug, so the work's."""
    if isinstance(error, BackendError):
        return error.kind
    if isinstance(error, PLATFORM_ERRORS):
        return Kind.PLATFORM
    return Kind.WORK


def error_id(error: DocumentError) -> str:
    """Same document, field and reason: same record, whichever function met it."""
    key = "\x1f".join((error.document, error.field, error.reason))
    return hashlib.sha1(key.encode()).hexdigest()[:24]


def experiment_of(document: str) -> str | None:
    parts = document.split("/")
    return parts[1] if len(parts) >= 2 and parts[0] == "experiments" else None


OWN_ERROR_ROOTS = frozenset({"societies", "debates", "conversations", "workflows"})
"""Systems whose documents are not under an experiment keep their records under their root
document: ``societies/{s}/errors``, ``debates/{d}/errors``, ``conversations/{c}/errors``..."""


def record_path(document: str, record_id: str) -> str | None:
    """Where the record of an error about ``document`` goes: its experiment's ``errors``, or its
    society's, debate's, conversation's or workflow's; None when it belongs to none."""
    experiment_id = experiment_of(document)
    if experiment_id is not None:
        return paths.build(paths.ERROR_RECORD, experimentId=experiment_id, errorId=record_id)
    parts = document.split("/")
    if len(parts) >= 2 and parts[0] in OWN_ERROR_ROOTS and parts[1]:
        return f"{parts[0]}/{parts[1]}/errors/{record_id}"
    return None


def record_error(
    function: str, error: DocumentError, event_id: str = "", severity: str = "error"
) -> str | None:
    """Write or refresh the error record; its path, or None if no experiment to file it under."""
    log.warning("%s: %s", function, cut_to_bytes(str(error), 20_000))  # a log entry has limits too
    record_id = error_id(error)
    path = record_path(error.document, record_id)
    if path is None:
        return None
    stamp = now()
    record = ErrorRecord(
        id=record_id,
        function=function,
        document=error.document,
        field=error.field,
        reason=error.reason,
        severity=severity,
        event_id=event_id,
        first_seen=stamp,
        last_seen=stamp,
    )
    doc = store.ref(path)
    try:
        doc.create(record.to_firestore())
    except gexc.AlreadyExists:
        again = ErrorRecord.fields(
            last_seen=stamp,
            event_id=event_id,
            function=function,
            occurrences=firestore.Increment(1),
            resolved_at=None,
        )
        doc.update(again)
    return path


def mark_resolved(experiment_id: str, record_id: str) -> None:
    """The cause of the record was fixed: say when (the experimenter sees it in the console)."""
    path = paths.build(paths.ERROR_RECORD, experimentId=experiment_id, errorId=record_id)
    with contextlib.suppress(gexc.NotFound):  # deleted by the experimenter meanwhile
        store.ref(path).update(ErrorRecord.fields(resolved_at=now()))
