"""A conductor conversation as JSON Lines: everything that happened in it, one record a line.

Each record is ``{type, conversationId, step, id, data}``: ``step`` the step's index (null for
the conversation's own records), ``id`` the document's id, ``data`` the document's fields
(camelCase, as stored; times as ISO 8601). In order:

- ``conversation``: the query, status, answer, error, the final memory with who set each value
- for each step, in order: ``step`` (kind, agent, input, output, decision, waiting, status),
  then its ``attempt`` records (each model call: prompt or conversation, reply, status, error),
  its ``tool_call`` records (name, arguments, result, status: entries of the conversation's
  journal, ``id`` their key; a parallel branch's under its step), its ``human_answer`` (a human
  step's answer document) and its ``memory_change`` records (field, before, after, with the
  step's agent and turn), as the commit that completed the step wrote them
- ``memory_change`` records made in the console (``by: console``), in the order they were made
- ``error``: the conversation's error records
- ``journal``: every model reply recorded for it (functions/journal.py), as recorded, oldest
  first; ``id`` the call's key (tools/journal_data.py). The journal's tool calls are the steps'
  ``tool_call`` records, not repeated here

Used by ``python -m tools.export --conversation C`` and the console's conversation page.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from typing import Any

from google.cloud import firestore

from tools import journal_data

Json = dict[str, Any]

SUBRECORDS = (("attempts", "attempt"),)
"""A step's subcollections and the record type of their documents."""


def _plain(value: Any) -> Any:
    """Firestore values as JSON: times as ISO 8601, references as paths."""
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, firestore.DocumentReference):
        return value.path
    return value


def _record(kind: str, cid: str, data: Json, step: Any = None, id: str = "") -> Json:
    return {"type": kind, "conversationId": cid, "step": step, "id": id, "data": _plain(data)}


def _sorted(docs: list[Any], key: str) -> list[Any]:
    return sorted(docs, key=lambda d: ((d.to_dict() or {}).get(key) or 0, d.id))


def _step_records(snap: Any, cid: str, tool_calls: list[Json]) -> Iterator[Json]:
    ref, step = snap.reference, snap.to_dict() or {}
    index = step.get("index")
    changes = step.pop("memoryChanges", None) or []
    yield _record("step", cid, step, index, ref.id)
    for collection, kind in SUBRECORDS:
        for doc in sorted(ref.collection(collection).get(), key=lambda d: d.id):
            yield _record(kind, cid, doc.to_dict() or {}, index, doc.id)
    for call in tool_calls:
        data = {k: v for k, v in call.items() if k != "storedBytes"}
        yield _record("tool_call", cid, data, index, call["key"])
    answer = ref.parent.parent.collection("humanAnswers").document(ref.id).get()
    if answer.exists:
        yield _record("human_answer", cid, answer.to_dict() or {}, index, answer.id)
    who = {"agent": step.get("agent"), "turn": step.get("turn"), "at": step.get("completedAt")}
    for change in changes:
        yield _record("memory_change", cid, {**who, "by": "step", **change}, index)


def records(db: firestore.Client, conversation_id: str) -> list[Json] | None:
    """The conversation's records, or None when there is no such conversation."""
    ref = db.document(f"conversations/{conversation_id}")
    snap = ref.get()
    if not snap.exists:
        return None
    out = [_record("conversation", conversation_id, snap.to_dict() or {}, id=conversation_id)]
    journal = journal_data.entries(db, ref.path)
    calls = journal_data.tool_calls_by_step(journal)
    for step in _sorted(ref.collection("steps").get(), "index"):
        out.extend(_step_records(step, conversation_id, calls.get(step.reference.path, [])))
    for edit in _sorted(ref.collection("memoryEdits").get(), "at"):
        out.append(_record("memory_change", conversation_id, edit.to_dict() or {}, id=edit.id))
    for error in sorted(ref.collection("errors").get(), key=lambda d: d.id):
        out.append(_record("error", conversation_id, error.to_dict() or {}, id=error.id))
    for entry in journal:
        if not journal_data.is_tool_call(entry):
            out.append(_record("journal", conversation_id, entry, id=entry["key"]))
    return out


def jsonl(found: list[Json]) -> bytes:
    lines = (json.dumps(r, ensure_ascii=False, sort_keys=True, default=str) for r in found)
    return "".join(line + "\n" for line in lines).encode()
