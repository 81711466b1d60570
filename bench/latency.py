"""Chat message written to agent reply written: one human and one agent in a group chat.

One agent, so its reply cannot start a chain (it never answers itself) and every sample is one
clean round trip: the human's message, the fan-out, the agent's turn, its reply. Both ends are the
emulator's commit times. Each sample is also split into where its time went, from the delivery
records (emulator to runtime, fan-out, Pub/Sub hop, the turn) and the model call's own latency.
Run on the scripted model (no model latency) and on a fake provider with a fixed latency.
"""

from __future__ import annotations

import random
import statistics
from typing import Any

from google.cloud import firestore

from bench import chat
from bench.fake_model import API_TYPE, fake_model, scripted_model
from bench.profile import RpcCounter, delivery_profile
from bench.stack import Stack, dist, say
from emulator.delivery import DeliveryRecord
from emulator.runtime import LocalRuntime

FAKE_LATENCY_S = 0.2
IDLE_TIMEOUT_S = 60.0


def _received(r: DeliveryRecord) -> float:
    return r.started - r.queued_ms / 1000


def _breakdown(
    t0: float, t1: float, records: list[DeliveryRecord], message_id: str, model_ms: float
) -> dict[str, float] | None:
    """Milliseconds per segment of one round trip, or None if a delivery is missing."""
    fan = [
        r
        for r in records
        if r.function == "onChatMessageCreated" and r.subject.endswith(message_id)
    ]
    turns = [r for r in records if r.function == "onAgentTurn" and r.started >= t0]
    if not fan or not turns:
        return None
    f, t = fan[0], min(turns, key=lambda r: r.started)
    return {
        "emulatorToRuntime": (_received(f) - t0) * 1000,
        "fanOutQueued": f.queued_ms,
        "fanOutRun": f.duration_ms,
        "pubsubHop": (_received(t) - f.ended) * 1000,
        "turnQueued": t.queued_ms,
        "turnModelCall": model_ms,
        "turnOther": (t1 - t.started) * 1000 - model_ms,
    }


def _measure(
    rt: LocalRuntime, db: firestore.Client, samples: int, api_type: str, rng: random.Random
) -> dict[str, Any]:
    room = chat.create(db, 1, api_type=api_type, rng=rng)
    rt.wait_until_idle(timeout=IDLE_TIMEOUT_S)  # the agent arrives; it does not open an empty chat
    round_trips: list[float] = []
    parts: list[dict[str, float]] = []
    unanswered = 0
    all_records: list[DeliveryRecord] = []
    for i in range(samples):
        rt.clear_deliveries()
        message_id = f"h{i:03d}-{rng.getrandbits(32):08x}"
        chat.say_as_human(db, room, message_id, f"Question {i}: what should we fund first?")
        rt.wait_until_idle(timeout=IDLE_TIMEOUT_S)
        records = rt.deliveries
        all_records += records
        history = chat.messages(db, room)
        ids = [m.id for m in history]
        mine = history[ids.index(message_id)]
        reply = next(
            (m for m in history[ids.index(message_id) + 1 :] if m.sender != chat.HUMAN), None
        )
        if reply is None:
            unanswered += 1
            continue
        round_trips.append((reply.committed - mine.committed) * 1000)
        calls = chat.reply_calls(chat.model_calls(db, room.experiment_id)).get(message_id, [])
        model_ms = sum(c.latency_ms for c in calls)
        split = _breakdown(mine.committed, reply.committed, records, message_id, model_ms)
        if split is not None:
            parts.append(split)
        if (i + 1) % max(1, samples // 4) == 0:
            say(
                f"latency ({api_type}): {i + 1}/{samples} messages, p50 so far "
                f"{statistics.median(round_trips) if round_trips else float('nan'):.0f} ms"
            )
    return {
        "samples": samples,
        "answered": len(round_trips),
        "unanswered": unanswered,
        "messageToReplyMs": dist(round_trips, 1),
        "breakdownMedianMs": {
            k: round(statistics.median(p[k] for p in parts), 1) for k in (parts[0] if parts else {})
        },
        "deliveries": delivery_profile(all_records),
    }


def run(stack: Stack, samples: int, seed: int, workers: int) -> dict[str, Any]:
    rng = random.Random(seed)
    cpu = stack.cpu()
    out: dict[str, Any] = {"agents": 1, "policy": "race", "workers": workers}
    with stack.runtime("latency", workers=workers) as rt:
        db = firestore.Client(project=rt.project)
        say(f"latency: scripted model, {samples} messages")
        with scripted_model(), RpcCounter() as rpcs:
            out["scripted"] = _measure(rt, db, samples, "SCRIPTED", rng)
        out["scripted"]["rpcs"] = rpcs.report(out["scripted"]["deliveries"])
        say(f"latency: fake provider, {FAKE_LATENCY_S * 1000:.0f} ms per call, {samples} messages")
        with fake_model(FAKE_LATENCY_S, seed, always_respond=True):
            out["fakeProvider"] = _measure(rt, db, samples, API_TYPE, rng)
            out["fakeProvider"]["modelLatencyMs"] = FAKE_LATENCY_S * 1000
        rt.reset()
        db.close()
    out["cpu"] = cpu.stop()
    return out
