"""The runtime's Pub/Sub threads outlive an emulator that stops answering (issue 40 row 8):
an ack or a deadline change that ends in RetryError (the client's retries gave up: not a
GoogleAPICallError) is logged, and the message comes again after its deadline; before, it
ended the lease thread, or the delivery thread that settled the message, for good."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from emulator import pubsub
from emulator.delivery import Delivery
from emulator.dispatcher import Dispatcher


class _GivingUp:
    """A subscriber whose acks and deadline changes end as the client's retry gives up."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def _fail(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)
        raise gexc.RetryError("Timeout of 60.0s exceeded", cause=None)

    def acknowledge(self, **kwargs: Any) -> None:
        self._fail(**kwargs)

    def modify_ack_deadline(self, **kwargs: Any) -> None:
        self._fail(**kwargs)


def _bridge(subscriber: _GivingUp) -> pubsub.PubSubBridge:
    bridge = pubsub.PubSubBridge("p", (), lambda _: None, host="127.0.0.1:1")
    bridge._subscriber = subscriber
    return bridge


def test_a_settle_that_gives_up_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    subscriber = _GivingUp()
    bridge = _bridge(subscriber)
    bridge._send("projects/p/subscriptions/s", ["a1"], None)  # the delivery thread's ack
    bridge._send("projects/p/subscriptions/s", ["a1"], 0)  # its nack
    assert [c["retry"] for c in subscriber.calls] == [None, None]  # tried once, not a minute
    assert all(c["timeout"] == pubsub.SETTLE_TIMEOUT_S for c in subscriber.calls)
    assert caplog.text.count("settling 1 message(s)") == 2


def test_the_lease_thread_outlives_rounds_that_give_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pubsub, "LEASE_EVERY_S", 0.01)
    subscriber = _GivingUp()
    bridge = _bridge(subscriber)
    bridge._held["projects/p/subscriptions/s"] = {"a1", "a2"}
    thread = threading.Thread(target=bridge._lease, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while len(subscriber.calls) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(subscriber.calls) >= 5 and thread.is_alive()
    bridge._stopping.set()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_a_delivery_worker_outlives_a_settle_that_raises() -> None:
    """Whatever settling meets, the worker takes the next delivery."""
    ran: list[str] = []

    def settle(ok: bool) -> None:
        raise gexc.RetryError("Timeout of 60.0s exceeded", cause=None)

    def run(delivery: Delivery) -> bool:
        ran.append(delivery.event_id)
        return True

    dispatcher = Dispatcher(run, workers=1)
    dispatcher.start()
    try:
        first = Delivery("f", "topic", "e1", {}, b"", settle=settle)
        dispatcher.submit(first)
        dispatcher.submit(Delivery("f", "topic", "e2", {}, b""))
        deadline = time.monotonic() + 10
        while len(ran) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ran == ["e1", "e2"]
    finally:
        dispatcher.stop()
