"""What flows through the runtime: one delivery of one event to one function, and its record."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from datetime import datetime

Settle = Callable[[bool], None]
"""Pub/Sub only: called once with True (the function succeeded or the event was dropped)."""


@dataclasses.dataclass
class Delivery:
    function: str
    subject: str
    """Document path (Firestore) or topic (Pub/Sub): what the log shows."""
    event_id: str
    headers: dict[str, str]
    body: bytes
    """Exactly what functions-framework receives (raw protobuf or Pub/Sub JSON envelope)."""
    drop_reason: str | None = None
    settle: Settle | None = None
    attempt: int = 1
    started: float | None = None
    received: float = dataclasses.field(default_factory=time.time)
    """Epoch seconds when the runtime got the event (queueing and delays come after)."""

    def finish(self, ok: bool) -> None:
        if self.settle is not None:
            self.settle(ok)


@dataclasses.dataclass(frozen=True)
class DeliveryRecord:
    function: str
    subject: str
    event_id: str
    started: float
    """Epoch seconds."""
    duration_ms: float
    outcome: str
    """``ok``, ``error`` or ``dropped:<why>``."""
    error: str = ""
    queued_ms: float = 0.0
    """From the runtime getting the event to a worker starting it (chaos delays included)."""
    attempt: int = 1

    @property
    def ended(self) -> float:
        return self.started + self.duration_ms / 1000

    @property
    def dropped(self) -> bool:
        return self.outcome.startswith("dropped:")


class DeliveryLog:
    """Thread-safe, append-only (until cleared) record of every delivery and every drop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[DeliveryRecord] = []

    def add(self, record: DeliveryRecord) -> None:
        with self._lock:
            self._records.append(record)

    def dropped(self, delivery: Delivery, why: str) -> None:
        self.add(
            DeliveryRecord(
                delivery.function,
                delivery.subject,
                delivery.event_id,
                time.time(),
                0.0,
                f"dropped:{why}",
            )
        )

    def records(self) -> list[DeliveryRecord]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def table(self, last: int | None = None) -> str:
        rows = self.records()[-last:] if last else self.records()
        lines = [f"{'started':12} {'ms':>7}  {'outcome':22} {'function':24} subject / error"]
        for r in rows:
            stamp = datetime.fromtimestamp(r.started).strftime("%H:%M:%S.%f")[:12]
            tail = f"{r.subject}  {r.error.strip().splitlines()[-1]}" if r.error else r.subject
            lines.append(f"{stamp:12} {r.duration_ms:7.1f}  {r.outcome:22} {r.function:24} {tail}")
        return "\n".join(lines)
