"""A no-op function on a Firestore trigger: what the runtime itself costs per event.

Imported by name (``bench.noop``) by the benchmark and, through ``noop_main.py``, by the
runtime's functions-framework apps, so both see the same arrival records.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from functions.registry import FirestoreTrigger, FunctionSpec

COLLECTION = "benchNoop"
SOURCE = Path(__file__).resolve().parent / "noop_main.py"

REGISTRY: tuple[FunctionSpec, ...] = (
    FunctionSpec(
        name="benchNoop",
        trigger=FirestoreTrigger("created", COLLECTION + "/{id}"),
        handler="bench.noop:on_created",
        description="Records when it started; does nothing else.",
        timeout_s=60,
    ),
)

_lock = threading.Lock()
_arrived: dict[str, float] = {}
_events: dict[str, threading.Event] = {}


def expect(doc_id: str) -> threading.Event:
    """An event set when the handler for ``benchNoop/{doc_id}`` starts."""
    event = threading.Event()
    with _lock:
        _events[doc_id] = event
    return event


def arrived(doc_id: str) -> float | None:
    """Epoch seconds when the handler started for this document, if it did."""
    with _lock:
        return _arrived.get(doc_id)


def clear() -> None:
    with _lock:
        _arrived.clear()
        _events.clear()


def on_created(event: Any) -> None:
    now = time.time()
    doc_id = event.params["id"]
    with _lock:
        _arrived[doc_id] = now
        waiter = _events.pop(doc_id, None)
    if waiter is not None:
        waiter.set()
