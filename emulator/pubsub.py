"""Pub/Sub functions: topics, one subscription per function, streaming pull into the dispatcher.

A message is acked only after its function succeeded; a failure is nacked (redelivered) when the
function asks for retries, else acked. Publishes made by functions in this process are counted
(``functions.pubsub`` observers) so wait_until_idle knows which messages are still on their way.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1  # type: ignore[attr-defined]

from emulator.delivery import Delivery
from functions import pubsub as function_pubsub
from functions import store
from functions.registry import FunctionSpec, PubSubTrigger

log = logging.getLogger(__name__)

EVENT_TYPE = PubSubTrigger.event_type


def subscription_id(function: str, instance: str) -> str:
    return f"{function}-local-{instance}"


def topic_of(spec: FunctionSpec) -> str:
    if not isinstance(spec.trigger, PubSubTrigger):
        raise TypeError(f"{spec.name} is not a Pub/Sub function")
    return spec.trigger.topic


def to_delivery(project: str, spec: FunctionSpec, subscription: str, message: Any) -> Delivery:
    """A binary-mode CloudEvent with the JSON envelope Eventarc delivers in production."""
    topic = topic_of(spec)
    published = message.publish_time.isoformat().replace("+00:00", "Z")
    body = {
        "message": {
            "data": base64.b64encode(message.data).decode(),
            "attributes": dict(message.attributes),
            "messageId": message.message_id,
            "message_id": message.message_id,
            "publishTime": published,
            "publish_time": published,
        },
        "subscription": subscription,
    }
    headers = {
        "ce-specversion": "1.0",
        "ce-type": EVENT_TYPE,
        "ce-source": f"//pubsub.googleapis.com/projects/{project}/topics/{topic}",
        "ce-id": message.message_id,
        "ce-time": published,
        "content-type": "application/json",
    }
    return Delivery(spec.name, topic, message.message_id, headers, json.dumps(body).encode())


class PubSubBridge:
    def __init__(
        self, project: str, specs: tuple[FunctionSpec, ...], submit: Callable[[Delivery], None]
    ) -> None:
        self.project = project
        self._specs = [s for s in specs if isinstance(s.trigger, PubSubTrigger)]
        self._topic_of = {s.name: topic_of(s) for s in self._specs}
        self._topics = sorted(set(self._topic_of.values()))
        self._submit = submit
        self._lock = threading.Lock()
        self._outstanding: set[tuple[str, str]] = set()
        self._acked: set[tuple[str, str]] = set()
        self._futures: list[Any] = []
        self._subscriber: pubsub_v1.SubscriberClient | None = None
        self._instance = uuid.uuid4().hex[:8]
        """Subscriptions are this runtime's own: the emulator goes on serving a stopped
        runtime's closed stream on a shared one, and messages it sends there come back only
        after the ack deadline (minutes late, for a runtime restarted on the same project)."""
        self._subscriptions: list[str] = []

    def start(self) -> None:
        """Create topics and subscriptions (idempotent), start pulling; needs the emulator env."""
        publisher = pubsub_v1.PublisherClient()
        self._subscriber = pubsub_v1.SubscriberClient()
        for topic in self._topics:
            with contextlib.suppress(gexc.AlreadyExists):
                publisher.create_topic(name=publisher.topic_path(self.project, topic))
        for spec in self._specs:
            topic = publisher.topic_path(self.project, self._topic_of[spec.name])
            name = self._subscriber.subscription_path(
                self.project, subscription_id(spec.name, self._instance)
            )
            self._subscriber.create_subscription(name=name, topic=topic, ack_deadline_seconds=60)
            self._subscriptions.append(name)
            self._futures.append(self._subscriber.subscribe(name, self._callback(spec, name)))
        function_pubsub.add_observer(self._published)

    def stop(self) -> None:
        function_pubsub.remove_observer(self._published)
        for future in self._futures:
            future.cancel()
        for future in self._futures:
            with contextlib.suppress(Exception):  # a cancelled pull raises; nothing left to do
                future.result(timeout=5)
        self._futures.clear()
        if self._subscriber is not None:
            for name in self._subscriptions:
                with contextlib.suppress(gexc.GoogleAPICallError):
                    self._subscriber.delete_subscription(subscription=name)
            self._subscriptions.clear()
            self._subscriber.close()
            self._subscriber = None

    def outstanding(self) -> list[tuple[str, str]]:
        """(function, message id) published from this process and not acked yet."""
        with self._lock:
            return sorted(self._outstanding)

    def forget(self) -> None:
        """Reset the bookkeeping (after a data reset)."""
        with self._lock:
            self._outstanding.clear()
            self._acked.clear()

    def _published(self, topic: str, message_id: str) -> None:
        if store.project_id() != self.project:
            return  # another runtime's project (runtimes share the process)
        with self._lock:
            for spec in self._specs:
                key = (spec.name, message_id)
                if self._topic_of[spec.name] == topic and key not in self._acked:
                    self._outstanding.add(key)

    def _callback(self, spec: FunctionSpec, subscription: str) -> Callable[[Any], None]:
        def on_message(message: Any) -> None:
            delivery = to_delivery(self.project, spec, subscription, message)
            delivery.settle = self._settler(spec, message)
            self._submit(delivery)

        return on_message

    def _settler(self, spec: FunctionSpec, message: Any) -> Callable[[bool], None]:
        key = (spec.name, message.message_id)

        def settle(ok: bool) -> None:
            if not ok and spec.retry:
                message.nack()
                return
            message.ack()
            with self._lock:
                self._outstanding.discard(key)
                self._acked.add(key)

        return settle
