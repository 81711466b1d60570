"""What a run's model calls left in Firestore: its call logs, its journal entries and their size.

``stored(project)`` counts, in one emulator project, the documents of the ``logs`` collections
(a model call's log: ``experiments/{e}/logs``, a society's or a debate's) and of the ``journal``
collections (``functions.journal``: one recorded reply per logical call), and sizes each journal
document as Firestore counts storage (https://firebase.google.com/docs/firestore/storage-size):
a string is its UTF-8 bytes + 1; a document name the sizes of its collection and document ids
+ 16; an integer, a float and a timestamp 8 bytes; a boolean and a null 1; an array the sum of
its values; a map the sum of its field names and values; a document its name, its field names
and values, + 32. Index entries are not counted.
"""

from __future__ import annotations

import statistics
from datetime import datetime
from typing import Any

from google.cloud import firestore


def _string(text: str) -> int:
    return len(text.encode()) + 1


def value_size(value: Any) -> int:
    """One field value's size."""
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, int | float | datetime):
        return 8
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, list | tuple):
        return sum(value_size(v) for v in value)
    if isinstance(value, dict):
        return fields_size(value)
    raise TypeError(f"no storage size for a {type(value).__name__}")


def fields_size(data: dict[str, Any]) -> int:
    return sum(_string(name) + value_size(v) for name, v in data.items())


def name_size(path: str) -> int:
    """A document name's size: each collection and document id of its path, + 16."""
    return sum(_string(part) for part in path.split("/")) + 16


def document_size(path: str, data: dict[str, Any]) -> int:
    return name_size(path) + fields_size(data) + 32


def stored(project: str) -> dict[str, Any]:
    """Call logs and journal entries in ``project``, and the journal entries' sizes (bytes)."""
    db = firestore.Client(project=project)
    logs = sum(1 for _ in db.collection_group("logs").select([]).stream())
    sizes: list[int] = []
    fields: dict[str, list[int]] = {}
    for snap in db.collection_group("journal").stream():
        data = snap.to_dict() or {}
        sizes.append(document_size(snap.reference.path, data))
        for name, value in data.items():
            fields.setdefault(name, []).append(_string(name) + value_size(value))
    out: dict[str, Any] = {"logs": logs, "journal": len(sizes)}
    if sizes:
        out["journalBytes"] = {
            "total": sum(sizes),
            "mean": round(statistics.fmean(sizes), 1),
            "median": statistics.median(sizes),
            "min": min(sizes),
            "max": max(sizes),
            "meanByField": {k: round(statistics.fmean(v), 1) for k, v in sorted(fields.items())},
        }
    return out
