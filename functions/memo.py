"""Documents read once per invocation: what does not change while one function runs.

A stage config, the experiment document and the stored profiles of a chat's senders are read
by several steps of one invocation (a move reads the stage to decide and again to check the
unlock; a turn reads the chat twice, each time with its senders' profiles). Within an
invocation's scope (``_entry.dispatch`` opens one) the first read is kept and the others reuse
it; outside a scope (a test calling a module directly, a tool) every read goes to Firestore.
Nothing is kept across invocations, so an experimenter's edit is seen by the next one.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Hashable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

_scope: contextvars.ContextVar[dict[Hashable, Any] | None] = contextvars.ContextVar(
    "invocation_memo", default=None
)


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
