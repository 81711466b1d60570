"""Independent reads of one step made at once instead of one after the other.

A chat reply waits on every round trip before and after its model call (bench.reply_path: the
functions' own run time is most of message -> reply); where a step needs things that do not depend
on each other, all but the first are read on pool threads while the first is read here. The
invocation's context (its memo, prefetched documents, the function named in error records)
goes with it.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import functools
import os
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")
T = TypeVar("T")
POOL_THREADS = 32
"""Enough for every invocation of a runtime's 8 at a time to wait on two or three reads at once
(a turn's first round trip is three); a task waiting for a pool thread waits its whole read."""
THREAD_PREFIX = "side-by-side"


@functools.cache
def _pool(pid: int) -> concurrent.futures.ThreadPoolExecutor:
    """One pool per process (keyed by pid: a forked child gets its own, not the parent's
    threads, which it does not have)."""
    return concurrent.futures.ThreadPoolExecutor(POOL_THREADS, thread_name_prefix=THREAD_PREFIX)


def _submit(call: Callable[[], T]) -> Callable[[], T]:
    """Start ``call`` on the pool; what waits for its result. From a pool thread it runs where
    it is instead (a pool thread waiting on the pool could wait for ever once every thread
    does)."""
    if threading.current_thread().name.startswith(THREAD_PREFIX):
        result = call()
        return lambda: result
    future = _pool(os.getpid()).submit(contextvars.copy_context().run, call)
    return future.result


def side_by_side(first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
    """``(first(), second())``, the two run at the same time; an exception of either is
    raised here (the other's result is then dropped)."""
    later = _submit(second)
    return first(), later()


def three_at_once(
    first: Callable[[], A], second: Callable[[], B], third: Callable[[], C]
) -> tuple[A, B, C]:
    """``side_by_side`` of three. ``first`` runs here and has returned by the time an
    exception of another is raised."""
    later, last = _submit(second), _submit(third)
    return first(), later(), last()


def all_at_once(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Each call's result, in order, the calls run at the same time (the first one here)."""
    if not calls:
        return []
    first, *rest = calls
    later = [_submit(call) for call in rest]
    return [first(), *(result() for result in later)]
