"""The process's Google Cloud clients, created once per instance and shared by every module.

Kept apart from ``store`` and ``pubsub`` so that neither needs the other: the local runtime
resets both when it points a process at other emulators.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from google.cloud import firestore

if TYPE_CHECKING:
    from google.cloud import pubsub_v1  # type: ignore[attr-defined]


def project_id() -> str | None:
    return os.environ.get("GOOGLE_CLOUD_PROJECT") or os.environ.get("GCLOUD_PROJECT")


_created: list[Callable[[firestore.Client], None]] = []


def on_create(prepare: Callable[[firestore.Client], None]) -> None:
    """Call ``prepare`` on each Firestore client this process creates from now on (the local
    runtime meters it, ``emulator.metering``); deployed code registers nothing."""
    _created.append(prepare)


@functools.cache
def db() -> firestore.Client:
    client = firestore.Client(project=project_id())
    for prepare in _created:
        prepare(client)
    return client


PUBLISH_BATCH_LATENCY_S = 0.001
"""How long the publisher holds a message for others to join its batch. ``publish_all`` hands
over a whole fan-out in one loop and then waits, so the client's default 10 ms only delayed
every turn (bench.reply_path: 14-19 ms per fan-out's publish, most of it this wait)."""


@functools.cache
def publisher() -> pubsub_v1.PublisherClient:
    # Imported here, at the first publish: a function that publishes nothing (most moves, a
    # chat turn that posts) does not pay for the Pub/Sub client at its cold start.
    from google.cloud import pubsub_v1  # type: ignore[attr-defined]

    batching = pubsub_v1.types.BatchSettings(max_latency=PUBLISH_BATCH_LATENCY_S)
    return pubsub_v1.PublisherClient(batch_settings=batching)


_resets: list[Callable[[], None]] = []


def on_reset(forget: Callable[[], None]) -> None:
    """Call ``forget`` on ``reset`` (another module's cached client, ``firestore_api``'s)."""
    _resets.append(forget)


def reset() -> None:
    """Forget cached clients, for a process whose emulator hosts or project change (the local
    runtime); deployed functions never need it."""
    db.cache_clear()
    publisher.cache_clear()
    for forget in _resets:
        forget()
