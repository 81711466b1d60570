"""Worker pool between the receivers and the functions; the delivery mode lives here.

``serial`` is one worker (the emulator's FIFO order); ``concurrent`` is N workers (production:
parallel, unordered); ``chaos`` is concurrent with the ``emulator.chaos`` policy. A ``Policy``
decides how often and when a delivery runs and whether a failure is retried, so a chaos mode is a
new Policy, not a new dispatcher.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable

from emulator.delivery import Delivery

log = logging.getLogger(__name__)

Run = Callable[[Delivery], bool]
"""Runs one delivery; True when the function succeeded."""

MODES = ("serial", "concurrent", "chaos")


class Policy:
    """Production-like defaults: each event once, at once, never retried by the runtime."""

    def schedule(self, delivery: Delivery) -> list[tuple[float, Delivery]]:
        """(delay in seconds, delivery) for each copy to run."""
        return [(0.0, delivery)]

    def retry_delay(self, delivery: Delivery) -> float | None:
        """Seconds until a failed delivery runs again, or None for no retry."""
        return None

    def reported(self, delivery: Delivery, ok: bool) -> bool:
        """The outcome the platform sees (chaos may lose a success, as a crash after the work
        and before the acknowledgement would)."""
        return ok


class Dispatcher:
    def __init__(self, run: Run, workers: int, policy: Policy | None = None) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self._run = run
        self._workers = workers
        self._policy = policy or Policy()
        self._cond = threading.Condition()
        self._queue: collections.deque[Delivery] = collections.deque()
        self._running: list[Delivery] = []
        self._delayed: dict[threading.Timer, Delivery] = {}
        self._stopping = False
        self._threads: list[threading.Thread] = []
        self._submitted = 0
        self._finished = 0

    @property
    def policy(self) -> Policy:
        return self._policy

    def set_policy(self, policy: Policy) -> None:
        self._policy = policy

    def start(self) -> None:
        for i in range(self._workers):
            thread = threading.Thread(target=self._work, name=f"delivery-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 10.0) -> None:
        with self._cond:
            self._stopping = True
            self._queue.clear()
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()

    def submit(self, delivery: Delivery) -> None:
        with self._cond:
            self._submitted += 1
            for delay, copy in self._policy.schedule(delivery):
                self._enqueue_locked(copy, delay)

    def _enqueue_locked(self, delivery: Delivery, delay: float) -> None:
        """Queue now, or count as delayed until a timer queues it (so idle waits see it)."""
        if delay <= 0:
            self._queue.append(delivery)
            self._cond.notify()
            return

        def later() -> None:
            with self._cond:
                if self._delayed.pop(timer, None) is not None and not self._stopping:
                    self._queue.append(delivery)
                self._cond.notify_all()

        timer = threading.Timer(delay, later)
        timer.daemon = True
        self._delayed[timer] = delivery
        timer.start()

    def drain(self) -> list[Delivery]:
        """Remove and return everything queued or delayed but not started."""
        with self._cond:
            for timer in self._delayed:
                timer.cancel()
            drained = [*self._queue, *self._delayed.values()]
            self._queue.clear()
            self._delayed.clear()
            self._cond.notify_all()
            return drained

    @property
    def activity(self) -> tuple[int, int]:
        """(accepted, finished) so far: unchanged across a wait means nothing ran meanwhile."""
        with self._cond:
            return self._submitted, self._finished

    def busy(self) -> bool:
        with self._cond:
            return bool(self._queue or self._running or self._delayed)

    def wait_not_running(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: not self._running, timeout)

    def snapshot(self) -> tuple[list[Delivery], list[Delivery], int]:
        """(running, queued, delayed count) for diagnostics."""
        with self._cond:
            return list(self._running), list(self._queue), len(self._delayed)

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._stopping)
                if self._stopping:
                    return
                delivery = self._queue.popleft()
                delivery.started = time.time()
                self._running.append(delivery)
            try:
                ok = self._run(delivery)
            except Exception:
                log.exception("delivery of %s crashed the runtime", delivery.function)
                ok = False
            ok = self._policy.reported(delivery, ok)
            retry = None if ok else self._policy.retry_delay(delivery)
            with self._cond:
                self._running.remove(delivery)
                self._finished += 1
                retrying = retry is not None and not self._stopping
                if retry is not None and retrying:
                    delivery.attempt += 1
                    delivery.started = None
                    self._enqueue_locked(delivery, retry)
                self._cond.notify_all()
            if not retrying:
                self._finish(delivery, ok)

    @staticmethod
    def _finish(delivery: Delivery, ok: bool) -> None:
        """A Pub/Sub message is acked (or nacked) only now; whatever that meets (an emulator
        away), the worker goes on: the message comes again after its deadline."""
        try:
            delivery.finish(ok)
        except Exception:
            log.exception("settling the delivery of %s", delivery.function)
