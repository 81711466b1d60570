"""Reads that the invocations of one instance share for a moment.

A new chat message gives every agent of the chat a turn at once, and each read the same chat
(and its senders' profiles) and, to write its prompt, the same cohort: on one instance with a
few cores, seven turns' identical reads were half their CPU. A turn may take a read another
invocation of this instance started less than ``max_age_s`` ago (waiting for it if it is still
under way) when that read can serve it: one it could have made itself had it been delivered a
moment sooner. What decides a write (whether a reply is still wanted, whether a stage unlocks)
never takes a shared read; it reads now, and that read is shared in turn.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Generic, TypeVar

from functions import clients

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class _Read(Generic[T]):
    started: float
    done: Future[T]


class SharedReads(Generic[T]):
    """The latest read started of each key (per project: runtimes of several projects can
    share a process), in flight or done, for ``max_age_s`` from its start."""

    def __init__(self, max_age_s: float) -> None:
        self.max_age_s = max_age_s
        self._latest: dict[tuple[str | None, Hashable], _Read[T]] = {}
        self._lock = threading.Lock()

    def now(self, key: Hashable, load: Callable[[], T]) -> T:
        """``load()`` now; the read is offered to others while it lasts and after."""
        full_key, read = (clients.project_id(), key), _Read[T](time.monotonic(), Future())
        with self._lock:
            self._forget_old(read.started)
            self._latest[full_key] = read
        try:
            value = load()
        except BaseException as error:
            read.done.set_exception(error)
            with self._lock:
                if self._latest.get(full_key) is read:
                    del self._latest[full_key]
            raise
        read.done.set_result(value)
        return value

    def recent(
        self, key: Hashable, load: Callable[[], T], serves: Callable[[T], bool] = lambda _: True
    ) -> T:
        """The latest read of ``key`` started at most ``max_age_s`` ago if ``serves`` accepts
        its value (any, by default; a failed one never does), else ``now(key, load)``."""
        with self._lock:
            read = self._latest.get((clients.project_id(), key))
        fresh = read is not None and time.monotonic() - read.started <= self.max_age_s
        if fresh and read is not None and read.done.exception() is None:
            value = read.done.result()
            if serves(value):
                return value
        return self.now(key, load)

    def _forget_old(self, now: float) -> None:
        old = [k for k, r in self._latest.items() if now - r.started > self.max_age_s]
        for key in old:
            del self._latest[key]
