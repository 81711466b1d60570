"""Many documents read at once (a query or a collection), each validated into its model.

A document that does not validate is recorded once per instance and left out: one malformed
chat message or profile edited in the console must not stop a whole chat or cohort, and the
experimenter still sees what is wrong with which field.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from functions import errors, store
from shared.models import DocumentError

T = TypeVar("T")

_reported: set[tuple[str, str]] = set()
_reported_lock = threading.Lock()


class Snapshot(Protocol):
    """What we use of a Firestore DocumentSnapshot."""

    @property
    def id(self) -> str: ...

    @property
    def reference(self) -> Any: ...

    @property
    def exists(self) -> bool: ...

    def to_dict(self) -> dict[str, Any] | None: ...


Parse = Callable[[str, dict[str, Any]], T]
"""Validates the data read at a path, raising DocumentError (e.g. ``parse_document``)."""


def valid(snapshots: Iterable[Snapshot], parse: Parse[T], *, id_field: str = "id") -> list[T]:
    """The snapshots that validate, in order; the document id fills ``id_field`` (Deliberate Lab
    stores it in the document, a console edit may leave it out)."""
    out: list[T] = []
    for snap in snapshots:
        raw = store.data_of(snap) or {}
        data = {id_field: snap.id, **raw}
        try:
            _check_id(snap, raw, id_field)
            out.append(parse(snap.reference.path, data))
        except DocumentError as error:
            _report(error)
    return out


def _check_id(snap: Snapshot, raw: dict[str, Any], id_field: str) -> None:
    """A participant's or mediator's ``privateId`` must be its document id: one naming another
    participant would make the backend act on that one's document."""
    stored = raw.get(id_field)
    if id_field != "id" and stored and stored != snap.id:
        reason = f"must equal the document id {snap.id!r} (it names another document)"
        raise DocumentError(snap.reference.path, id_field, reason)


def _report(error: DocumentError) -> None:
    key = (error.document, error.reason)
    with _reported_lock:
        if key in _reported:
            return
        _reported.add(key)
    errors.record_error(errors.current_function(), error)
