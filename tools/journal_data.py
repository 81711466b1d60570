"""A run's journal of model calls (functions/journal.py) as data: every recorded reply of an
experiment, society, debate or conversation, and every tool call of a reply (``kind``
``toolCall``), for the export and the console.

Read as stored (a malformed entry still shows, with what it has), in the order the replies
were recorded. Read-only: nothing here writes a journal.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import pyarrow as pa
from google.cloud import firestore

from functions.journal import JOURNAL, TOOL_CALL

Json = dict[str, Any]

RUN_KINDS = ("experiments", "societies", "debates", "conversations")
"""The collections whose documents are runs with a journal (``{kind}/{id}/journal``)."""

COLUMNS = {
    "run": pa.string(),
    "key": pa.string(),
    "kind": pa.string(),
    "recorded_at": pa.string(),
    "expire_at": pa.string(),
    "model_name": pa.string(),
    "description": pa.string(),
    "agent": pa.string(),
    "stage_id": pa.string(),
    "prompt_tokens": pa.int64(),
    "completion_tokens": pa.int64(),
    "log_id": pa.string(),
    "stored_bytes": pa.int64(),
    "tool_calls": pa.string(),
    "text": pa.string(),
}
"""The journal table's columns (CSV and Parquet): one row per recorded call. A tool call's row
(kind ``toolCall``): the tool as its description, the step that made it as its stage, its
call (name, arguments, status) as its tool calls and its result as its text."""


def _plain(value: Any) -> Any:
    """Firestore values as JSON: times as ISO 8601 UTC."""
    if isinstance(value, datetime.datetime):
        return value.astimezone(datetime.UTC).isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def stored_size(path: str, data: Any) -> int:
    """A document's size as Firestore counts it for storage and limits (its name, each field's
    name and value, 32 bytes more): cloud.google.com/firestore/docs/storage-size."""
    name = sum(len(part.encode()) + 1 for part in path.split("/")) + 16
    return name + _size(data) + 32


def _size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode()) + 1
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, int | float | datetime.datetime):
        return 8
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, dict):
        return sum(_size(str(k)) + _size(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(_size(v) for v in value)
    if isinstance(value, firestore.DocumentReference):
        return stored_size(value.path, {}) - 32
    return 16  # a GeoPoint


def _when(entry: Json) -> str:
    stamp = entry.get("recordedAt") or entry.get("createdAt")
    return stamp if isinstance(stamp, str) else ""


def is_tool_call(entry: Json) -> bool:
    return entry.get("kind") == TOOL_CALL


def tool_calls_by_step(journal: list[Json]) -> dict[str, list[Json]]:
    """The journal's tool calls by the step that made them (a parallel branch's under its
    step: ``conversations/c/steps/0003``), each step's in the order made."""
    found: dict[str, list[Json]] = {}
    for entry in journal:
        if is_tool_call(entry):
            step = "/".join(_str(entry.get("step")).split("/")[:4])
            found.setdefault(step, []).append(entry)
    return {step: sorted(calls, key=_made_order) for step, calls in found.items()}


def _made_order(entry: Json) -> tuple[str, int, int]:
    return str(entry.get("createdAt") or ""), _int(entry.get("round")), _int(entry.get("position"))


def entries(db: firestore.Client, run: str) -> list[Json]:
    """The journal of ``run`` (``experiments/e1``, ``societies/s1``, ...) as JSON, oldest
    first (ties by key), each entry with its ``key`` and ``storedBytes`` (its size as
    Firestore counts it, computed here: not a stored field); [] when the run has none."""
    found = [
        {
            **_plain(data := snap.to_dict() or {}),
            "key": snap.id,
            "storedBytes": stored_size(snap.reference.path, data),
        }
        for snap in db.collection(f"{run}/{JOURNAL}").stream()
    ]
    return sorted(found, key=lambda e: (_when(e), e["key"]))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _as_reply(entry: Json) -> Json:
    """A tool call's entry in a reply's fields (``COLUMNS``)."""
    if not is_tool_call(entry):
        return entry
    call = {k: entry.get(k) for k in ("name", "arguments", "status", "isError")}
    return {
        **entry,
        "description": f"tool {_str(entry.get('name'))}",
        "stageId": _str(entry.get("step")),
        "toolCalls": [call],
        "text": _str(entry.get("result")),
    }


def rows(run: str, journal: list[Json]) -> list[Json]:
    """One row per recorded call, in ``COLUMNS``' shape."""
    return [
        {
            "run": run,
            "key": entry["key"],
            "kind": TOOL_CALL if is_tool_call(entry) else "reply",
            "recorded_at": _when(entry),
            "expire_at": _str(entry.get("expireAt")),
            "model_name": _str(entry.get("modelName")),
            "description": _str(entry.get("description")),
            "agent": _str(entry.get("agent")),
            "stage_id": _str(entry.get("stageId")),
            "prompt_tokens": _int(entry.get("promptTokens")),
            "completion_tokens": _int(entry.get("completionTokens")),
            "log_id": _str(entry.get("log")),
            "stored_bytes": _int(entry.get("storedBytes")),
            "tool_calls": json.dumps(entry.get("toolCalls") or [], sort_keys=True),
            "text": _str(entry.get("text")),
        }
        for entry in map(_as_reply, journal)
    ]
