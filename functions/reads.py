"""One invocation's reads: the one way the functions read Firestore outside transactions.

Every invocation (``_entry.dispatch``) gets a ``Reads`` object; domain code asks it for
documents and says which reads go together, and the object decides how: documents read in one
round trip (``ahead``/``batch``: one BatchGetDocuments through the client's public ``get_all``),
independent reads at the same time (``together``), a value read once per invocation (``once``),
the experiment and stage documents kept per instance when ``DLAB_CONFIG_CACHE_SECONDS`` is set
(``config``), and what the instance's other invocations read a moment ago (``Recent``, which
pays because ``onAgentTurn`` runs eight turns of one chat message per instance). Outside an
invocation (a test or tool calling a module directly) every read goes to Firestore.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import dataclasses
import functools
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any, Generic, TypeVar, cast

from functions import clients, usage
from functions.settings import backbone_settings

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")

POOL_THREADS = 32
"""Enough for every invocation of a runtime's 8 at a time to wait on two or three reads at once
(a turn's first round trip is three); a task waiting for a pool thread waits its whole read."""
THREAD_PREFIX = "reads"
GUESSES_KEPT = 10_000


class Reads:
    """The reads of one invocation (``keeping``) or of none (every read made when asked)."""

    def __init__(self, keeping: bool = True) -> None:
        self.keeping = keeping
        self._kept: dict[Hashable, Any] = {}
        self._ahead: dict[Hashable, Any] = {}

    # ---- values read once per invocation ----------------------------------------------------

    def once(self, key: Hashable, load: Callable[[], T]) -> T:
        """``load()`` once per invocation for ``key``; an exception is not kept."""
        if not self.keeping:
            return load()
        if key not in self._kept:
            self._kept[key] = load()
        return cast(T, self._kept[key])

    def note(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` as the latest read for ``key`` (fresher than a kept one)."""
        if self.keeping:
            self._kept[key] = value

    def config(self, path: str, load: Callable[[], T]) -> T:
        """``once``, and kept per instance for ``DLAB_CONFIG_CACHE_SECONDS`` (off by default)
        unless reads must be fresh: the experiment and stage documents nothing here writes."""
        ttl = backbone_settings().config_cache_seconds
        if ttl <= 0 or _fresh.get():
            return self.once(("config", path), load)
        kept = _configs.get(path)
        if kept is not None:
            return cast(T, kept)
        value = self.once(("config", path), load)
        _configs.put(path, value, ttl)
        return value

    def holds(self, path: str) -> bool:
        """Whether ``config(path, ...)`` would answer without a read."""
        if self.keeping and ("config", path) in self._kept:
            return True
        ttl = backbone_settings().config_cache_seconds
        return ttl > 0 and not _fresh.get() and _configs.get(path) is not None

    # ---- documents read in one round trip ---------------------------------------------------

    def batch(self, paths: Iterable[str]) -> None:
        """Within an ``ahead`` block, read these documents in one round trip for their next
        read (``take``); those held already (read ahead and unused, or a kept config) are not
        read again, and a single document is left to its own read."""
        if _block.get() is None or not self.keeping:
            return
        self.hold(self.read_now(paths))

    def read_now(self, paths: Iterable[str]) -> list[Any]:
        """The snapshots of those of ``paths`` that ``batch`` would read, read now in one round
        trip (none for fewer than two, or outside an invocation): for a read started before
        its ``ahead`` block (``start``), which ``hold`` then hands to the block."""
        wanted = [
            p
            for p in dict.fromkeys(p for p in paths if p)
            if p not in self._ahead and not self.holds(p)
        ]
        if not self.keeping or len(wanted) < 2:
            return []
        db = clients.db()
        return list(db.get_all([db.document(p) for p in wanted]))

    def hold(self, snapshots: Iterable[Any]) -> None:
        """Within an ``ahead`` block, keep these snapshots for their documents' next read."""
        for snap in snapshots:
            self.hold_value(snap.reference.path, snap)

    def take(self, path: Hashable) -> Any:
        """The snapshot read ahead for the next read of ``path`` (None if none): it answers
        that one read only, never one after a write."""
        return self._ahead.pop(path, None)

    def peek(self, path: str) -> Any:
        """The snapshot read ahead for ``path``, left for its next read (None if none)."""
        return self._ahead.get(path)

    def hold_value(self, key: Hashable, value: Any) -> None:
        """Within an ``ahead`` block, keep ``value`` for the next read of ``key``: a snapshot
        under its document's path (``take``), or a query's result read for the block
        (``ahead_or``)."""
        block = _block.get()
        if block is not None and self.keeping:
            self._ahead[key] = value
            block.append(key)

    def ahead_or(self, key: Hashable, load: Callable[..., T], *args: Any) -> T:
        """The value held for ``key`` (``hold_value``), once, else ``load(*args)`` now."""
        held = self._ahead.pop(key, None)
        return cast(T, held) if held is not None else load(*args)

    def knows(self, path: str, key: Hashable) -> bool:
        """Whether the document at ``path`` is read ahead, or ``key`` kept (``once``)."""
        return path in self._ahead or (self.keeping and key in self._kept)


_reads: contextvars.ContextVar[Reads | None] = contextvars.ContextVar("reads", default=None)
_block: contextvars.ContextVar[list[Hashable] | None] = contextvars.ContextVar(
    "ahead", default=None
)
_fresh: contextvars.ContextVar[bool] = contextvars.ContextVar("fresh_reads", default=False)


def current() -> Reads:
    """This invocation's reads (outside one: reads that keep nothing)."""
    return _reads.get() or Reads(keeping=False)


@contextlib.contextmanager
def invocation() -> Iterator[Reads]:
    """One invocation's reads, for the block."""
    token = _reads.set(Reads())
    try:
        yield _reads.get() or Reads()
    finally:
        _reads.reset(token)


@contextlib.contextmanager
def ahead(paths: Iterable[str] = (), read: Iterable[Any] = ()) -> Iterator[None]:
    """Read ``paths`` (and, within the block, what ``batch`` adds) in one round trip, each for
    its first read within the block; what the block did not read is dropped at its end, so no
    snapshot outlives the step it was read for. Firestore bills per document either way: what
    this saves is round trips. ``read``: snapshots read for the block before it began
    (``Reads.read_now`` started beside other work), held like those of ``paths``."""
    kept: list[Hashable] = []
    token = _block.set(kept)
    try:
        current().hold(read)
        current().batch(paths)
        yield
    finally:
        _block.reset(token)
        reads = current()
        for path in kept:
            reads.take(path)


def batch(paths: Iterable[str]) -> None:
    """``Reads.batch`` of this invocation."""
    current().batch(paths)


def once(key: Hashable, load: Callable[[], T]) -> T:
    """``Reads.once`` of this invocation."""
    return current().once(key, load)


def note(key: Hashable, value: Any) -> None:
    """``Reads.note`` of this invocation."""
    current().note(key, value)


@contextlib.contextmanager
def fresh(enabled: bool = True) -> Iterator[None]:
    """Within the block, no per-instance config copy answers (an agent blocked on one)."""
    token = _fresh.set(enabled or _fresh.get())
    try:
        yield
    finally:
        _fresh.reset(token)


# ---- reads at the same time ------------------------------------------------------------------


@functools.cache
def _pool(pid: int, level: int) -> concurrent.futures.ThreadPoolExecutor:
    """One pool per process and level (by pid: a forked child gets its own, not the parent's
    threads)."""
    return concurrent.futures.ThreadPoolExecutor(
        POOL_THREADS, thread_name_prefix=f"{THREAD_PREFIX}-{level}"
    )


def _submit(call: Callable[[], T]) -> Callable[[], T]:
    """Start ``call`` on a pool with this context (the invocation's reads, its function name);
    what waits for it. A call started from the first pool's thread (a read started beside an
    election that reads three things at once) goes to the second pool; from the second, it runs
    here. The second pool's threads never wait on a pool, so no thread waits for ever."""
    name = threading.current_thread().name
    if name.startswith(f"{THREAD_PREFIX}-1"):
        result = call()
        return lambda: result
    level = 1 if name.startswith(f"{THREAD_PREFIX}-0") else 0

    def traced() -> tuple[T, int]:
        return call(), usage.chain()

    future = _pool(os.getpid(), level).submit(contextvars.copy_context().run, traced)

    def wait() -> T:
        value, length = future.result()
        usage.joined(length)  # the waiter's round trips continue after the longer chain
        return value

    return wait


def start(call: Callable[[], T]) -> Callable[[], T]:
    """Start ``call`` now, beside what the caller does next; what waits for its result."""
    return _submit(call)


def together(first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
    """``(first(), second())`` run at the same time; an exception of either is raised here."""
    later = _submit(second)
    return first(), later()


def three(
    first: Callable[[], A], second: Callable[[], B], third: Callable[[], C]
) -> tuple[A, B, C]:
    """``together`` of three; ``first`` has returned by the time another's exception is
    raised."""
    later, last = _submit(second), _submit(third)
    return first(), later(), last()


def all_together(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Each call's result, in order, the calls run at the same time (the first one here)."""
    if not calls:
        return []
    first, *rest = calls
    later = [_submit(call) for call in rest]
    return [first(), *(result() for result in later)]


# ---- what this instance read a moment ago ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Read(Generic[T]):
    started: float
    done: Future[T]


class Recent(Generic[T]):
    """The latest read started of each key (per project: runtimes of several projects can share
    a process), in flight or done, for ``max_age_s`` from its start. A turn may take a read
    another invocation of this instance started a moment ago, waiting for it if still under
    way, when that read can serve it (one it could have made itself had it been delivered a
    moment sooner); what decides a write reads ``now``, and that read is offered in turn."""

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
        its value (a failed one never does), else ``now(key, load)``."""
        with self._lock:
            read = self._latest.get((clients.project_id(), key))
        young = read is not None and time.monotonic() - read.started <= self.max_age_s
        if young and read is not None and read.done.exception() is None:
            value = read.done.result()
            if serves(value):
                return value
        return self.now(key, load)

    def young(self, key: Hashable) -> bool:
        """Whether a read of ``key`` started at most ``max_age_s`` ago (in flight or done)."""
        with self._lock:
            read = self._latest.get((clients.project_id(), key))
        return read is not None and time.monotonic() - read.started <= self.max_age_s

    def _forget_old(self, now: float) -> None:
        old = [k for k, r in self._latest.items() if now - r.started > self.max_age_s]
        for key in old:
            del self._latest[key]


class _Configs:
    """Experiment and stage documents kept per instance until their expiry (``config``)."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, path: str) -> Any:
        with self._lock:
            entry = self._kept.get(path)
        return entry[1] if entry is not None and entry[0] > time.monotonic() else None

    def put(self, path: str, value: Any, ttl: float) -> None:
        with self._lock:
            self._kept[path] = (time.monotonic() + ttl, value)

    def drop(self, path: str) -> None:
        with self._lock:
            self._kept.pop(path, None)


_configs = _Configs()


def drop_config(path: str) -> None:
    """This instance saw the document at ``path`` written: read it again next time."""
    _configs.drop(path)


class Guesses:
    """Per instance: the documents a step last read after a known one, by key (paths only,
    never data: a guess that no longer holds costs the reads it saved). The next such step
    reads them in its first round trip. A guess starting with the same document adds to the
    one kept (callers read a prompt with or without the creator's keys); another starts anew."""

    def __init__(self) -> None:
        self._kept: dict[Hashable, tuple[str, ...]] = {}

    def of(self, key: Hashable) -> tuple[str, ...]:
        return self._kept.get(key, ())

    def remember(self, key: Hashable, read: Sequence[str], *, add: bool = True) -> None:
        if len(self._kept) >= GUESSES_KEPT:
            self._kept.clear()
        read = tuple(p for p in read if p)
        before = self._kept.get(key, ())
        if add and before[:1] == read[:1]:
            read = tuple(dict.fromkeys([*before, *read]))
        self._kept[key] = read
