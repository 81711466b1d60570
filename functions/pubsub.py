"""Publishing to the registry's Pub/Sub topics, awaited so nothing is lost on return."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from functions import clients, usage

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


def publish_all(
    topic: str, payloads: list[Any], *, timeout: float = PUBLISH_TIMEOUT_S, **attributes: str
) -> list[str]:
    """Publish every payload at once, then wait for all their message ids (a fan-out to a
    hundred agents waited for each publish in turn: 2 s per chat message), each at most
    ``timeout`` seconds. Nothing to publish is a no-op."""
    if not payloads:
        return []
    path = topic_path(topic)
    futures = [
        clients.publisher().publish(
            path, json.dumps(p, separators=(",", ":")).encode(), **attributes
        )
        for p in payloads
    ]
    message_ids = [future.result(timeout=timeout) for future in futures]
    usage.publishes(len(message_ids))
    for message_id in message_ids:
        for observer in _observers:
            observer(topic, message_id)
    return message_ids
