"""Pub/Sub functions: topics, one subscription per function, pulled into the dispatcher.

A message is acked only after its function succeeded; a failure is nacked (redelivered) when the
function asks for retries, else acked. Publishes made by functions in this process are counted
(``functions.pubsub`` observers) so wait_until_idle knows which messages are still on their way.

Each subscription is pulled by a thread of its own with long-polling unary ``Pull`` calls, and
the messages held are leased here. A message published from this process (the functions'
turns) is also pulled at once, by a second thread per subscription that the publish wakes: the
emulator answers a waiting long poll 10-40 ms after the publish, an immediate pull in 2-3 ms.
The client library's streaming pull took 34 ms from publish to callback at p50 (it sends a
modack and hands each message through its dispatcher and scheduler threads first), the long
poll 13-40 ms, with the immediate pull 7-8 ms: a hop of every agent's turn.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import threading
import urllib.parse
import urllib.request
import uuid
import warnings
from collections.abc import Callable
from typing import Any

import grpc
from google.api_core import exceptions as gexc
from google.cloud import pubsub_v1  # type: ignore[attr-defined]
from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport
from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport

from emulator import health
from emulator.delivery import Delivery
from functions import pubsub as function_pubsub
from functions import store
from functions.registry import FunctionSpec, PubSubTrigger

log = logging.getLogger(__name__)
# Deprecated for the service (an immediate pull may come back empty there); the emulator
# answers it with what it holds, which is what the pull after a publish wants.
warnings.filterwarnings(
    "ignore", "The return_immediately flag is deprecated", category=DeprecationWarning
)

EVENT_TYPE = PubSubTrigger.event_type
ACK_DEADLINE_S = 60
LEASE_EVERY_S = 20.0
"""Held messages (pulled, their function not settled) get ``ACK_DEADLINE_S`` more this often."""
POLL_S = 60.0
SETTLE_TIMEOUT_S = 10.0
"""An ack or a deadline change, tried once: a failure leaves the message to come again after
its deadline (the client's default retries for a minute, then raises RetryError)."""
"""The deadline of one long poll (the emulator answers an empty one about a second before)."""
MAX_MESSAGES = 100


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
        self,
        project: str,
        specs: tuple[FunctionSpec, ...],
        submit: Callable[[Delivery], None],
        host: str | None = None,
    ) -> None:
        """``host``: the emulator's (default ``$PUBSUB_EMULATOR_HOST``)."""
        self.project = project
        self._specs = [s for s in specs if isinstance(s.trigger, PubSubTrigger)]
        self._topic_of = {s.name: topic_of(s) for s in self._specs}
        self._topics = sorted(set(self._topic_of.values()))
        self._submit = submit
        self._lock = threading.Lock()
        self._outstanding: set[tuple[str, str]] = set()
        self._acked: set[tuple[str, str]] = set()
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._kicks: dict[str, threading.Event] = {}
        """Set by a publish from this process to the subscription's topic: pull now."""
        self._pulled_from: dict[str, list[str]] = {}
        """The subscriptions of each topic."""
        self._held: dict[str, set[str]] = {}
        """Ack ids pulled and not settled yet, by subscription (leased until they are)."""
        self._subscriber: pubsub_v1.SubscriberClient | None = None
        self._publisher: pubsub_v1.PublisherClient | None = None
        self._clients_lock = threading.Lock()
        """Held while the clients are replaced (a restarted emulator) or closed (stop)."""
        self._host = host or os.environ.get("PUBSUB_EMULATOR_HOST", "")
        self._silence = health.Silence("Pub/Sub emulator", self._host)
        self._failing: set[str] = set()
        """Subscriptions whose pulls fail (said once, until a pull succeeds)."""
        self._instance = uuid.uuid4().hex[:8]
        """Subscriptions are this runtime's own: the emulator goes on serving a stopped
        runtime's closed stream on a shared one, and messages it sends there come back only
        after the ack deadline (minutes late, for a runtime restarted on the same project)."""
        self._subscriptions: list[str] = []
        self._subscription_of = {
            s.name: f"projects/{project}/subscriptions/{subscription_id(s.name, self._instance)}"
            for s in self._specs
        }

    def start(self) -> None:
        """Create topics and subscriptions (idempotent), start pulling; needs the emulator env."""
        self._stopping.clear()
        self._connect()
        self._create()
        for spec in self._specs:
            name = self._subscription_of[spec.name]
            self._subscriptions.append(name)
            self._kicks[name] = threading.Event()
            self._pulled_from.setdefault(self._topic_of[spec.name], []).append(name)
            self._threads.append(self._thread(f"pull {spec.name}", self._pull, spec, name))
            self._threads.append(self._thread(f"kick {spec.name}", self._kicked, spec, name))
        self._threads.append(self._thread("pubsub leases", self._lease))
        function_pubsub.add_observer(self._published)

    def _connect(self) -> None:
        """New clients, on new channels: after an emulator restart, a channel of the old ones
        waits out its reconnect backoff (seconds) before it tries again. On ``self._host``
        whatever the environment says: the platform's delivery, not the functions' own calls
        (the benchmark points the functions at a delaying proxy, ``bench.rtt_proxy``)."""
        subscriber = pubsub_v1.SubscriberClient(
            transport=SubscriberGrpcTransport(channel=grpc.insecure_channel(self._host))
        )
        old, self._subscriber = self._subscriber, subscriber
        self._publisher = pubsub_v1.PublisherClient(
            transport=PublisherGrpcTransport(channel=grpc.insecure_channel(self._host))
        )
        if old is not None:
            old.close()  # its polls under way end; their threads pull again on the new one

    def _create(self) -> tuple[int, int]:
        """Our topics and subscriptions, those that exist already left as they are; how many
        of each there are. Each topic's subscriptions right after it: a publish that met the
        topic missing (a restarted emulator) waits for it to have a subscription
        (``functions.pubsub.publish_all``), and one made to a topic with none is lost."""
        publisher, subscriber = self._publisher, self._subscriber
        assert publisher is not None and subscriber is not None
        for topic in self._topics:
            path = publisher.topic_path(self.project, topic)
            with contextlib.suppress(gexc.AlreadyExists):
                publisher.create_topic(name=path)
            for spec in self._specs:
                if self._topic_of[spec.name] != topic:
                    continue
                with contextlib.suppress(gexc.AlreadyExists):
                    subscriber.create_subscription(
                        name=self._subscription_of[spec.name],
                        topic=path,
                        ack_deadline_seconds=ACK_DEADLINE_S,
                    )
        return len(self._topics), len(self._specs)

    def check(self) -> str | None:
        """Create our topics and subscriptions again if the emulator lost them (it restarted);
        a sentence for the live log when it did, or when it stops or starts answering.

        Messages published before the restart went with it: they are no longer awaited, and
        the ack ids held before it mean nothing now (nothing comes twice)."""
        with self._clients_lock:
            if self._subscriber is None or self._stopping.is_set():
                return None
            try:
                present = self._listed()
            except OSError as error:
                return self._silence.failed(error)
            back = self._silence.answered()
            if all(name in present for name in self._subscriptions):
                return back
            with self._lock:
                self._outstanding.clear()
                self._held.clear()
            self._connect()
            topics, subscriptions = self._create()
        for kick in list(self._kicks.values()):
            kick.set()
        return (
            f"the Pub/Sub emulator at {self._host} had lost this runtime's topics and "
            f"subscriptions (restarted): created {topics} topics and {subscriptions} "
            "subscriptions again"
        )

    def _listed(self) -> set[str]:
        """The project's subscriptions as the emulator lists them (REST, a new connection)."""
        names: set[str] = set()
        token = ""
        while True:
            query = urllib.parse.urlencode({"pageSize": 1000, "pageToken": token})
            url = f"http://{self._host}/v1/projects/{self.project}/subscriptions?{query}"
            with urllib.request.urlopen(url, timeout=health.CHECK_TIMEOUT_S) as response:
                page = json.loads(response.read() or b"{}")
            names.update(s["name"] for s in page.get("subscriptions", []))
            token = page.get("nextPageToken") or ""
            if not token:
                return names

    def _thread(self, name: str, target: Callable[..., None], *args: Any) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        function_pubsub.remove_observer(self._published)
        self._stopping.set()
        for kick in self._kicks.values():
            kick.set()
        with self._clients_lock:
            self._close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()
        self._kicks.clear()
        self._pulled_from.clear()

    def _close(self) -> None:
        """Delete our subscriptions and close the clients (the polls under way end)."""
        subscriber, self._subscriber, self._publisher = self._subscriber, None, None
        if subscriber is None:
            return
        for name in self._subscriptions:
            with contextlib.suppress(gexc.GoogleAPICallError):
                subscriber.delete_subscription(subscription=name)
        self._subscriptions.clear()
        subscriber.close()

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
        for name in self._pulled_from.get(topic, ()):
            kick = self._kicks.get(name)  # gone if the runtime stopped meanwhile
            if kick is not None:
                kick.set()

    def _pull(self, spec: FunctionSpec, subscription: str) -> None:
        while self._pull_once(spec, subscription, at_once=False):
            pass

    def _kicked(self, spec: FunctionSpec, subscription: str) -> None:
        kick = self._kicks[subscription]
        while kick.wait() and not self._stopping.is_set():
            kick.clear()  # publishes from now on wake it again
            self._pull_once(spec, subscription, at_once=True)

    def _pull_once(self, spec: FunctionSpec, subscription: str, *, at_once: bool) -> bool:
        """One pull (``at_once``: answered now, else a long poll) into the dispatcher; False
        once the runtime stops."""
        subscriber = self._subscriber
        if subscriber is None or self._stopping.is_set():
            return False
        try:
            response = subscriber.pull(
                subscription=subscription,
                max_messages=MAX_MESSAGES,
                return_immediately=at_once,
                timeout=POLL_S,
                retry=None,
            )
        except (gexc.GoogleAPIError, ValueError) as error:
            if self._stopping.is_set():
                return False  # the subscriber closed, or the subscription went, on stop
            self._pull_failed(subscription, error)
            return True
        self._failing.discard(subscription)
        for received in response.received_messages:
            self._take(spec, subscription, received.ack_id, received.message)
        return True

    def _pull_failed(self, subscription: str, error: Exception) -> None:
        """Logged once per outage, not at every retry (an emulator restarted for four minutes
        made 2,000 warnings): ``check`` says the outage in the live log, and re-creates what
        a restart lost."""
        if subscription not in self._failing:
            self._failing.add(subscription)
            log.info("pulling %s: %s (retrying quietly)", subscription, error)
        else:
            log.debug("pulling %s: %s", subscription, error)
        self._stopping.wait(0.5)

    def _take(self, spec: FunctionSpec, subscription: str, ack_id: str, message: Any) -> None:
        with self._lock:
            self._held.setdefault(subscription, set()).add(ack_id)
        delivery = to_delivery(self.project, spec, subscription, message)
        delivery.settle = self._settler(spec, subscription, ack_id, message.message_id)
        self._submit(delivery)

    def _lease(self) -> None:
        """Extend the held messages' deadlines, whatever one round meets (the thread must
        outlive an emulator restart: before, one RetryError ended it for good)."""
        while not self._stopping.wait(LEASE_EVERY_S):
            try:
                with self._lock:
                    held = {name: sorted(ids) for name, ids in self._held.items() if ids}
                for name, ids in held.items():
                    self._send(name, ids, ACK_DEADLINE_S)
            except Exception:  # logged; the next round tries again
                log.exception("extending the held messages' deadlines")

    def _send(self, subscription: str, ack_ids: list[str], deadline_s: int | None) -> None:
        """Ack (``deadline_s`` None) or change the ack deadline (0: redeliver now); a stopped
        runtime's settles go nowhere (its subscriptions are gone)."""
        subscriber = self._subscriber
        if subscriber is None or self._stopping.is_set():
            return
        calls = {"retry": None, "timeout": SETTLE_TIMEOUT_S}
        try:
            if deadline_s is None:
                subscriber.acknowledge(subscription=subscription, ack_ids=ack_ids, **calls)
            else:
                subscriber.modify_ack_deadline(
                    subscription=subscription,
                    ack_ids=ack_ids,
                    ack_deadline_seconds=deadline_s,
                    **calls,
                )
        except (gexc.GoogleAPIError, ValueError) as error:  # RetryError is no GoogleAPICallError
            if not self._stopping.is_set():  # the message comes again after its deadline
                log.warning("settling %d message(s) of %s: %s", len(ack_ids), subscription, error)

    def _settler(
        self, spec: FunctionSpec, subscription: str, ack_id: str, message_id: str
    ) -> Callable[[bool], None]:
        key = (spec.name, message_id)

        def settle(ok: bool) -> None:
            with self._lock:
                self._held.get(subscription, set()).discard(ack_id)
            if not ok and spec.retry:
                self._send(subscription, [ack_id], 0)
                return
            self._send(subscription, [ack_id], None)
            with self._lock:
                self._outstanding.discard(key)
                self._acked.add(key)

        return settle
