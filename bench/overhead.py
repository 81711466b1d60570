"""Runtime overhead per event, against a raw emulator write measured in the same run.

The function is a no-op, so everything measured is the runtime: overhead = ``queued_ms`` (the
runtime got the event, a worker picked it up) + ``duration_ms`` (functions-framework, CloudEvent
decoding, the no-op). Raw writes and events alternate, so background noise hits both alike. A
burst then shows the throughput of the event path when many writes land at once.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from google.cloud import firestore

from bench import noop
from bench.profile import delivery_profile
from bench.stack import Stack, dist, say

EVENT_TIMEOUT_S = 10.0


def _raw_write(db: firestore.Client, i: int) -> float:
    t0 = time.perf_counter()
    db.document(f"benchRaw/r{i}").set({"i": i})
    return (time.perf_counter() - t0) * 1000


def _event(db: firestore.Client, i: int) -> tuple[str, float, float | None]:
    """Write one trigger document and wait for the handler: (id, write start, handler start)."""
    doc_id = f"e{i}-{uuid.uuid4().hex[:6]}"
    started = noop.expect(doc_id)
    t0 = time.time()
    db.document(f"{noop.COLLECTION}/{doc_id}").set({"i": i})
    if not started.wait(EVENT_TIMEOUT_S):
        return doc_id, t0, None
    return doc_id, t0, noop.arrived(doc_id)


def _burst(stack: Stack, db: firestore.Client, count: int, rt: Any) -> dict[str, Any]:
    """``count`` trigger documents in one batch commit: events per second until all handled."""
    rt.clear_deliveries()
    batch = db.batch()
    ids = [f"b{i}-{uuid.uuid4().hex[:6]}" for i in range(count)]
    for i, doc_id in enumerate(ids):
        batch.set(db.document(f"{noop.COLLECTION}/{doc_id}"), {"i": i})
    t0 = time.time()
    batch.commit()
    rt.wait_until_idle(timeout=120)
    arrivals = [a for a in (noop.arrived(d) for d in ids) if a is not None]
    records = [r for r in rt.deliveries if r.function == "benchNoop" and not r.dropped]
    span = max(r.ended for r in records) - t0 if records else 0.0
    return {
        "events": count,
        "handled": len(arrivals),
        "seconds": round(span, 3),
        "eventsPerSecond": round(len(records) / span, 1) if span else None,
        "queuedMs": dist([r.queued_ms for r in records]),
        "durationMs": dist([r.duration_ms for r in records]),
    }


def run(stack: Stack, samples: int, burst: int, workers: int) -> dict[str, Any]:
    say(f"overhead: no-op function vs raw emulator write, {samples} samples each")
    noop.clear()
    cpu = stack.cpu()
    with stack.runtime(
        "overhead", registry=noop.REGISTRY, source=noop.SOURCE, workers=workers
    ) as rt:
        db = firestore.Client(project=rt.project)
        for i in range(10):  # warm up clients, channels and the functions-framework app
            _raw_write(db, -1 - i)
            _event(db, -1 - i)
        rt.wait_until_idle(timeout=30)
        rt.clear_deliveries()
        raw_ms: list[float] = []
        sent: dict[str, float] = {}
        e2e_ms: list[float] = []
        lost = 0
        for i in range(samples):
            raw_ms.append(_raw_write(db, i))
            doc_id, t0, handler_started = _event(db, i)
            sent[doc_id] = t0
            if handler_started is None:
                lost += 1
            else:
                e2e_ms.append((handler_started - t0) * 1000)
            if (i + 1) % max(1, samples // 4) == 0:
                say(f"overhead: {i + 1}/{samples} samples")
        rt.wait_until_idle(timeout=30)
        records = [r for r in rt.deliveries if r.function == "benchNoop" and not r.dropped]
        per_event = [r.queued_ms + r.duration_ms for r in records]
        say(f"overhead: burst of {burst} events in one commit")
        burst_result = _burst(stack, db, burst, rt)
        db.close()
    raw = dist(raw_ms)
    overhead = dist(per_event)
    e2e = dist(e2e_ms)
    ratio = round(overhead["p50"] / raw["p50"], 2) if overhead["p50"] and raw["p50"] else None
    return {
        "samples": samples,
        "workers": workers,
        "rawWriteMs": raw,
        "overheadPerEventMs": overhead,
        "queuedMs": dist([r.queued_ms for r in records]),
        "durationMs": dist([r.duration_ms for r in records]),
        "writeToHandlerStartMs": e2e,
        "eventsLost": lost,
        "overheadRatioP50": ratio,
        "writeToHandlerRatioP50": (
            round(e2e["p50"] / raw["p50"], 2) if e2e["p50"] and raw["p50"] else None
        ),
        "burst": burst_result,
        "deliveries": delivery_profile(records),
        "cpu": cpu.stop(),
    }
