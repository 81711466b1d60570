"""Firestore values to JSON and back, losslessly for what our documents hold.

Timestamps use Deliberate Lab's JSON form (``{"seconds", "nanoseconds"}``, which our models accept
too), so a document opened and saved unchanged in the console keeps its timestamps as timestamps.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from google.cloud.firestore import DocumentReference

_TIME_KEYS = {"seconds", "nanoseconds"}


def to_json(value: Any) -> Any:
    if isinstance(value, datetime):
        seconds = value.timestamp()
        return {"seconds": int(seconds), "nanoseconds": round((seconds % 1) * 1e9)}
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_json(item) for item in value]
    if isinstance(value, DocumentReference):
        return value.path
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value


def from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == _TIME_KEYS and all(isinstance(v, int) for v in value.values()):
            seconds = value["seconds"] + value["nanoseconds"] / 1e9
            return datetime.fromtimestamp(seconds, tz=UTC)
        return {key: from_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [from_json(item) for item in value]
    return value
