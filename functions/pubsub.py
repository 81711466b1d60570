"""Publishing to the registry's Pub/Sub topics, awaited so nothing is lost on return."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from google.api_core import exceptions as gexc

from functions import clients, usage
from shared.errors import PlatformError

log = logging.getLogger(__name__)

PublishObserver = Callable[[str, str], None]
"""Called with (topic, message id) after each publish; the local runtime counts cascades with it."""

_observers: list[PublishObserver] = []


def add_observer(observer: PublishObserver) -> None:
    _observers.append(observer)


def remove_observer(observer: PublishObserver) -> None:
    if observer in _observers:
        _observers.remove(observer)


def topic_path(topic: str) -> str:
    return f"projects/{clients.project_id()}/topics/{topic}"


PUBLISH_TIMEOUT_S = 60.0
"""How long a publish is waited for (its client retries meanwhile)."""


def publish(
    topic: str, payload: Any, *, timeout: float = PUBLISH_TIMEOUT_S, **attributes: str
) -> str:
    """Publish ``payload`` as JSON and wait for the server's message id."""
    return publish_all(topic, [payload], timeout=timeout, **attributes)[0]


TOPIC_BACK_POLL_S = 0.25
"""How often a publish that met a missing topic asks whether it is back."""


def publish_all(
    topic: str, payloads: list[Any], *, timeout: float = PUBLISH_TIMEOUT_S, **attributes: str
) -> list[str]:
    """Publish every payload at once, then wait for all their message ids (a fan-out to a
    hundred agents waited for each publish in turn: 2 s per chat message), each at most
    ``timeout`` seconds. Nothing to publish is a no-op.

    A topic not found is the platform's, not the work's: a restarted Pub/Sub emulator has lost
    every topic until the local runtime's next check makes them again (about a second). The
    payloads it refused are published again once the topic is back with a subscription, within
    ``timeout``; after that a ``PlatformError`` (retried, not counted against the work)."""
    if not payloads:
        return []
    path = topic_path(topic)
    deadline = time.monotonic() + timeout
    message_ids: dict[int, str] = {}
    while True:
        missing = _publish(path, payloads, message_ids, timeout, attributes)
        if missing is None:
            break
        _await_topic(path, deadline, missing)
    usage.publishes(len(message_ids))
    ordered = [message_ids[i] for i in range(len(payloads))]
    for message_id in ordered:
        for observer in _observers:
            observer(topic, message_id)
    return ordered


def _publish(
    path: str,
    payloads: list[Any],
    message_ids: dict[int, str],
    timeout: float,
    attributes: dict[str, str],
) -> gexc.NotFound | None:
    """Publish the payloads not in ``message_ids`` yet and add their ids; the NotFound of those
    the server refused for want of the topic (None when none was)."""
    pending = [i for i in range(len(payloads)) if i not in message_ids]
    futures = {
        i: clients.publisher().publish(
            path, json.dumps(payloads[i], separators=(",", ":")).encode(), **attributes
        )
        for i in pending
    }
    missing: gexc.NotFound | None = None
    for i, future in futures.items():
        try:
            message_ids[i] = future.result(timeout=timeout)
        except gexc.NotFound as error:
            missing = error
    return missing


def _await_topic(path: str, deadline: float, missing: gexc.NotFound) -> None:
    """Return once ``path`` exists with a subscription (the local runtime makes each topic's
    subscriptions right after it: a message published to a topic with none would be lost);
    a ``PlatformError`` once ``deadline`` passes."""
    log.info("publishing to %s: %s; waiting for the topic to be back", path, missing)
    publisher = clients.publisher()
    while time.monotonic() + TOPIC_BACK_POLL_S < deadline:
        time.sleep(TOPIC_BACK_POLL_S)
        try:
            listed = publisher.list_topic_subscriptions(
                topic=path, retry=None, timeout=max(0.1, deadline - time.monotonic())
            )
            if any(True for _ in listed):
                return
        except gexc.GoogleAPICallError:  # not back yet (NotFound), or not answering
            continue
    raise PlatformError(f"{type(missing).__name__}: {missing} ({path}, not back in time)")
