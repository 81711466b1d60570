"""Two runs' documents side by side: the same after what differs by design is set aside.

Set aside by design: timestamps (a replay runs later), ids the backend draws at random (a chat
message's, a log entry's: any uuid the original run's start did not hold), and the collections
of bookkeeping rather than outcome (call logs, the journal, spend counters, leases, error
records, which say how the run went, not what it came to).
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import json
import re
from typing import Any

from google.cloud import firestore

BOOKKEEPING = frozenset({"logs", "attempts", "journal", "spend", "errors", "usage"})
"""``attempts``: a conductor step's call log."""
_DRAWN = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")


def _bookkeeping(name: str) -> bool:
    lowered = name.lower()
    return name in BOOKKEEPING or "lease" in lowered or "lock" in lowered


def dump(db: firestore.Client, path: str) -> dict[str, dict[str, Any]]:
    """Every document of the run (its own and below it), bookkeeping left out."""
    out: dict[str, dict[str, Any]] = {}
    root = db.document(path)
    snap = root.get()
    if snap.exists:
        out[path] = snap.to_dict() or {}
    pending = [c for c in root.collections() if not _bookkeeping(c.id)]
    while pending:
        collection = pending.pop()
        for ref in collection.list_documents():
            doc = ref.get()
            if doc.exists:
                out[ref.path] = doc.to_dict() or {}
            pending.extend(c for c in ref.collections() if not _bookkeeping(c.id))
    return out


@dataclasses.dataclass
class _Normal:
    kept: frozenset[str]
    """Ids the run started with: they are the same in both runs."""

    def value(self, value: Any) -> Any:
        if isinstance(value, datetime.datetime):
            return "<time>"
        if isinstance(value, dict):  # a field set to null is a field not set
            return {k: self.value(v) for k, v in value.items() if v is not None}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        if hasattr(value, "path"):  # a document reference
            return self.text(str(value.path))
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)  # 2 and 2.0 are one number, however a writer typed it
        return value

    def text(self, text: str) -> str:
        parts = text.split("/")
        return "/".join("<id>" if _DRAWN.match(p) and p not in self.kept else p for p in parts)


@dataclasses.dataclass(frozen=True)
class Comparison:
    documents: int
    differing: tuple[str, ...]
    """Where the two runs differ: a document path (ids drawn at random shown as ``<id>``), with
    how many of its documents only one run has."""

    @property
    def same(self) -> bool:
        return not self.differing


def compare(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]], kept: set[str]
) -> Comparison:
    normal = _Normal(frozenset(kept))
    sides = []
    for docs in (before, after):
        grouped: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for path, data in docs.items():
            body = json.dumps(normal.value(data), sort_keys=True, default=str)
            grouped[normal.text(path)][body] += 1
        sides.append(grouped)
    differing = []
    for path in sorted(sides[0].keys() | sides[1].keys()):
        empty: collections.Counter[str] = collections.Counter()
        old, new = sides[0].get(path, empty), sides[1].get(path, empty)
        if old != new:
            differing.append(_difference(path, old - new, new - old))
    return Comparison(len(before), tuple(differing))


def _difference(
    path: str, only_old: collections.Counter[str], only_new: collections.Counter[str]
) -> str:
    """One place where the runs differ; for one document on each side, its fields that do."""
    counts = (
        f"{sum(only_old.values())} only in the run, {sum(only_new.values())} only in the replay"
    )
    if sum(only_old.values()) == sum(only_new.values()) == 1:
        a, b = json.loads(next(iter(only_old))), json.loads(next(iter(only_new)))
        fields = sorted(k for k in a.keys() | b.keys() if _text(a.get(k)) != _text(b.get(k)))
        return f"{path} (fields {', '.join(fields)})"
    return f"{path} ({counts})"


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
