"""The running invocation's deadline, so long work (model retries) stops before the platform
kills the function."""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

SAFETY_MARGIN_S = 10.0
"""Time kept back to write logs and records after the last model attempt."""

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)


@contextlib.contextmanager
def running_for(timeout_s: float) -> Iterator[None]:
    token = _deadline.set(time.monotonic() + max(1.0, timeout_s - SAFETY_MARGIN_S))
    try:
        yield
    finally:
        _deadline.reset(token)


def deadline() -> float | None:
    """A ``time.monotonic()`` value, or None outside a function invocation (tools, tests)."""
    return _deadline.get()


def remaining() -> float | None:
    end = _deadline.get()
    return None if end is None else max(0.0, end - time.monotonic())
