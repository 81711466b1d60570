"""Probe functions for the runtime tests: they record what they receive, nothing else.

Imported by name (``probe``) both by the test module and, through ``probe_main.py``, by the
runtime's functions-framework apps, so both see the same ``calls`` list.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import Any

from google.cloud import firestore

from functions.registry import FirestoreTrigger, FunctionSpec, PubSubTrigger

ITEM = "groups/{groupId}/items/{itemId}"
TOPIC = "probe-topic"
FLAKY_TOPIC = "probe-flaky"


@dataclasses.dataclass(frozen=True)
class Call:
    function: str
    event: Any
    started: float
    ended: float


_lock = threading.Lock()
calls: list[Call] = []


def _record(function: str, event: Any, started: float | None = None) -> None:
    now = time.time()
    with _lock:
        calls.append(Call(function, event, started or now, now))


def calls_of(function: str) -> list[Call]:
    with _lock:
        return [c for c in calls if c.function == function]


def clear() -> None:
    with _lock:
        calls.clear()


def _recorder(function: str) -> Any:
    def handler(event: Any) -> None:
        _record(function, event)

    handler.__name__ = function
    return handler


on_created = _recorder("created")
on_updated = _recorder("updated")
on_deleted = _recorder("deleted")
on_written = _recorder("written")


def on_message(event: Any) -> None:
    """Sleeps for the message's ``sleep`` seconds, if any (a function that outlasts its
    message's ack deadline)."""
    time.sleep(float(event.json().get("sleep", 0)))
    _record("message", event)


on_cascade_b = _recorder("cascade_end")


def on_slow(event: Any) -> None:
    """Sleeps for the document's ``sleep`` seconds so tests can see overlap (or its absence)."""
    started = time.time()
    time.sleep(float(event.after.get("sleep", 1.0)))
    _record("slow", event, started)


def on_fail(event: Any) -> None:
    raise RuntimeError(f"probe failure on {event.document}")


def on_cascade_a(event: Any) -> None:
    """Writes the document that triggers on_cascade_end, as a real function would."""
    time.sleep(0.2)
    client = firestore.Client(project=os.environ["GOOGLE_CLOUD_PROJECT"])
    client.document(f"cascadeEnd/{event.params['id']}").set({"from": event.document})
    _record("cascade_start", event)


_attempts: dict[str, int] = {}


def on_flaky(event: Any) -> None:
    """Fails the first two deliveries of each message (retry-enabled: the runtime retries)."""
    with _lock:
        _attempts[event.id] = _attempts.get(event.id, 0) + 1
        attempt = _attempts[event.id]
    if attempt <= 2:
        raise RuntimeError(f"flaky probe: attempt {attempt} of {event.id} fails")
    _record("flaky", event)


def on_raw(cloud_event: Any) -> None:
    """Bare functions-framework entry (no decoding) to check the CloudEvent as delivered."""
    _record("raw", {"attributes": cloud_event.get_attributes(), "data": cloud_event.data})


def _spec(
    name: str, trigger: FirestoreTrigger | PubSubTrigger, handler: str, retry: bool = False
) -> FunctionSpec:
    return FunctionSpec(
        name=name, trigger=trigger, handler=f"probe:{handler}", description=name, retry=retry
    )


PROBE_REGISTRY: tuple[FunctionSpec, ...] = (
    _spec("probeCreated", FirestoreTrigger("created", ITEM), "on_created"),
    _spec("probeUpdated", FirestoreTrigger("updated", ITEM), "on_updated"),
    _spec("probeDeleted", FirestoreTrigger("deleted", ITEM), "on_deleted"),
    _spec("probeWritten", FirestoreTrigger("written", ITEM), "on_written"),
    _spec("probeSlow", FirestoreTrigger("created", "slow/{id}"), "on_slow"),
    _spec("probeFail", FirestoreTrigger("created", "fail/{id}"), "on_fail"),
    _spec(
        "probeFailInExperiment",
        FirestoreTrigger("created", "experiments/{experimentId}/fail/{id}"),
        "on_fail",
    ),
    _spec("probeCascadeStart", FirestoreTrigger("created", "cascadeStart/{id}"), "on_cascade_a"),
    _spec("probeCascadeEnd", FirestoreTrigger("created", "cascadeEnd/{id}"), "on_cascade_b"),
    _spec("probeMessage", PubSubTrigger(TOPIC), "on_message"),
    _spec("probeFlaky", PubSubTrigger(FLAKY_TOPIC), "on_flaky", retry=True),
    _spec("probeRaw", FirestoreTrigger("written", "raw/{id}"), "on_raw"),
)
