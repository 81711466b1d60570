"""Documents read once per invocation (and, when enabled, once per instance for a few seconds):
what does not change while one function runs.

A stage config, the experiment document and the stored profiles of a chat's senders are read
by several steps of one invocation (a move reads the stage to decide and again to check the
unlock; a turn reads the chat twice, each time with its senders' profiles). Within an
invocation's scope (``_entry.dispatch`` opens one) the first read is kept and the others reuse
it; outside a scope (a test calling a module directly, a tool) every read goes to Firestore.
Nothing is kept across invocations by default, so an experimenter's edit is seen by the next.

``DLAB_CONFIG_CACHE_SECONDS`` (default 0: off) keeps the experiment and stage documents per
instance for that many seconds (``shared``): a move then reads neither. An instance that sees a
stage or the experiment written (``onStageWritten``, ``onExperimentWritten``) drops its copy,
and an agent blocked on a document reads everything fresh (``fresh``), so a fix in the console
is never hidden by a kept copy; an edit that fixes nothing reaches the other instances within
the TTL.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from typing import Any, TypeVar

from functions.settings import backbone_settings

T = TypeVar("T")

_scope: contextvars.ContextVar[dict[Hashable, Any] | None] = contextvars.ContextVar(
    "invocation_memo", default=None
)
_fresh: contextvars.ContextVar[bool] = contextvars.ContextVar("fresh_reads", default=False)
_instance: dict[tuple[str, Hashable], tuple[float, Any]] = {}
_instance_lock = threading.Lock()


@contextlib.contextmanager
def invocation() -> Iterator[None]:
    """Keep reads for the duration of the block (one function invocation)."""
    token = _scope.set({})
    try:
        yield
    finally:
        _scope.reset(token)


def cached(key: Hashable, load: Callable[[], T]) -> T:
    """``load()`` once per invocation for ``key``; an exception is not kept (raised each time)."""
    scope = _scope.get()
    if scope is None:
        return load()
    if key not in scope:
        scope[key] = load()
    return scope[key]


def active() -> bool:
    """Whether reads are kept (inside an invocation's scope)."""
    return _scope.get() is not None


def take(key: Hashable) -> Any:
    """Remove and return a kept value (None if there is none): a document read ahead for the
    one read that follows, which must not answer a later read after a write."""
    scope = _scope.get()
    return None if scope is None else scope.pop(key, None)


def has(key: Hashable) -> bool:
    """Whether a value is kept for ``key`` in this invocation."""
    scope = _scope.get()
    return scope is not None and key in scope


def put(key: Hashable, value: Any) -> None:
    """Keep ``value`` as the latest read for ``key`` (a fresher read than the kept one)."""
    scope = _scope.get()
    if scope is not None:
        scope[key] = value


def forget(key: Hashable) -> None:
    """Drop a kept read (the invocation wrote that document itself)."""
    scope = _scope.get()
    if scope is not None:
        scope.pop(key, None)


def ttl_s() -> float:
    return backbone_settings().config_cache_seconds


def shared(key: Hashable, path: str, load: Callable[[], T]) -> T:
    """``cached``, and kept per instance for ``DLAB_CONFIG_CACHE_SECONDS`` (off by default)
    unless reads must be fresh; ``path`` is the document's, for ``drop_shared``."""
    ttl = ttl_s()
    if ttl <= 0 or _fresh.get():
        return cached(key, load)
    now = time.monotonic()
    with _instance_lock:
        kept = _instance.get((path, key))
    if kept is not None and kept[0] > now:
        return kept[1]
    value = cached(key, load)
    with _instance_lock:
        _instance[(path, key)] = (now + ttl, value)
    return value


def kept(key: Hashable, path: str) -> bool:
    """Whether ``shared(key, path, ...)`` would answer without a read (so reading the document
    ahead, in a batch with others, would be a read for nothing)."""
    scope = _scope.get()
    if scope is not None and key in scope:
        return True
    if ttl_s() <= 0 or _fresh.get():
        return False
    with _instance_lock:
        entry = _instance.get((path, key))
    return entry is not None and entry[0] > time.monotonic()


def drop_shared(path: str) -> None:
    """This instance saw the document at ``path`` written: read it again next time."""
    with _instance_lock:
        for kept in [k for k in _instance if k[0] == path]:
            del _instance[kept]


@contextlib.contextmanager
def fresh(enabled: bool = True) -> Iterator[None]:
    """Within the block, no per-instance copies are used (an agent blocked on a document)."""
    token = _fresh.set(enabled or _fresh.get())
    try:
        yield
    finally:
        _fresh.reset(token)
