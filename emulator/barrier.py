"""Proof that the emulator has sent every event committed before now.

The emulator delivers in commit order on one thread, so once the event for a freshly created
marker document arrives, every earlier event has been received.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from functions.registry import FirestoreTrigger

TRIGGER_ID = "_runtimeBarrier"
COLLECTION = "_runtimeBarrier"
TRIGGER = FirestoreTrigger("created", COLLECTION + "/{barrierId}")


class Barrier:
    def __init__(self, db: Any) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._waiting: dict[str, threading.Event] = {}

    def arrived(self, document: str) -> None:
        """Called by the receiver with the marker's path."""
        token = document.rsplit("/", 1)[-1]
        with self._lock:
            event = self._waiting.get(token)
        if event is not None:
            event.set()

    def cross(self, timeout: float) -> None:
        token = uuid.uuid4().hex
        event = threading.Event()
        with self._lock:
            self._waiting[token] = event
        ref = self._db.document(f"{COLLECTION}/{token}")
        try:
            ref.create({"token": token})
            if not event.wait(max(timeout, 0.0)):
                raise TimeoutError(f"barrier event not delivered within {timeout:.1f} s")
        finally:
            with self._lock:
                self._waiting.pop(token, None)
            ref.delete()
