"""Retry policy for model calls: retryable ModelErrors only, jittered backoff, within a deadline.

Deliberate Lab retries only 5xx/timeouts and leaves 429 to the user; we also retry QUOTA_ERROR
(rate limits are the commonest transient failure when many agents run at once). The caller drives
the loop so it can log every attempt::

    for attempt in retrying(deadline):
        with attempt:
            reply = client.generate(replace(request, timeout_s=remaining(deadline, cap=120)))
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import tenacity
from tenacity.stop import stop_base
from tenacity.wait import wait_base

from shared.llm.base import ModelError

MIN_ATTEMPT_S = 1.0
"""The least time worth starting another attempt with; below it we stop instead of sleeping."""
MAX_RETRY_AFTER_S = 60.0
"""The longest ``retry-after`` honoured as asked; a longer one waits this long (the deadline
still bounds every wait)."""


def error_for_status(
    http_status: int,
    message: str,
    raw: str | None = None,
    retry_after_s: float | None = None,
) -> ModelError:
    """A failed HTTP call as a ModelError; what is retryable is part of the retry policy.

    401/403 authentication, 429 quota (retryable: rate limits pass), 408/5xx provider unavailable
    (retryable; Anthropic's 529 overloaded too), other 4xx a configuration problem (bad model
    name, unsupported option). ``retry_after_s``: the provider's own wait, which the retry loop
    honours."""
    if http_status in (401, 403):
        status, retryable = "AUTHENTICATION_ERROR", False
    elif http_status == 429:
        status, retryable = "QUOTA_ERROR", True
    elif http_status == 408 or http_status >= 500:
        status, retryable = "PROVIDER_UNAVAILABLE_ERROR", True
    elif 400 <= http_status < 500:
        status, retryable = "CONFIG_ERROR", False
    else:
        status, retryable = "INTERNAL_ERROR", False
    return ModelError(
        status,
        f"HTTP {http_status}: {message}",
        retryable,
        http_status,
        raw,
        retry_after_s=retry_after_s if retryable else None,
    )


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a 429/5xx answer asks us to wait: ``retry-after-ms`` (OpenAI's), else
    ``retry-after`` in seconds; an HTTP date or garbage is ignored (the backoff then decides)."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            seconds = float(headers.get(name) or "") * scale
        except ValueError:
            continue
        if seconds >= 0 and math.isfinite(seconds):
            return seconds
    return None


@dataclasses.dataclass(frozen=True)
class SdkErrors:
    """How one provider SDK's exceptions read as ModelErrors: its HTTP status errors through
    ``status`` (which applies ``error_for_status``), its timeouts and connection failures as a
    provider unavailable (retryable), its own other errors as a configuration problem."""

    status_type: type[Exception]
    status: Callable[[Any], ModelError]
    timeout_type: type[Exception]
    connection_type: type[Exception]
    config_types: tuple[type[Exception], ...]

    def model_error(self, exc: Exception, timeout_s: float) -> ModelError:
        if isinstance(exc, self.status_type):
            return self.status(exc)
        if isinstance(exc, self.timeout_type):
            return ModelError(
                "PROVIDER_UNAVAILABLE_ERROR", f"no reply within {timeout_s:.1f}s", True
            )
        if isinstance(exc, self.connection_type):
            return ModelError("PROVIDER_UNAVAILABLE_ERROR", f"connection failed: {exc}", True)
        if isinstance(exc, self.config_types):
            return ModelError("CONFIG_ERROR", f"{type(exc).__name__}: {exc}")
        return ModelError("INTERNAL_ERROR", f"{type(exc).__name__}: {exc}")


def remaining(deadline: float | None, cap: float | None = None) -> float | None:
    """Seconds left before ``deadline`` (a ``time.monotonic()`` value), at most ``cap``;
    ``cap`` (possibly None) when there is no deadline. Used as the per-call timeout."""
    if deadline is None:
        return cap
    left = max(0.0, deadline - time.monotonic())
    return left if cap is None else min(left, cap)


def is_retryable(error: BaseException) -> bool:
    return isinstance(error, ModelError) and error.retryable


def _asked_wait(retry_state: tenacity.RetryCallState) -> float:
    """The provider's ``retry-after`` on the failed attempt (capped), or 0."""
    error = retry_state.outcome.exception() if retry_state.outcome else None
    asked = error.retry_after_s if isinstance(error, ModelError) else None
    return min(asked, MAX_RETRY_AFTER_S) if asked else 0.0


class _WaitWithinDeadline(wait_base):
    """The base wait, or longer when the provider said how long (``retry-after``: trying
    earlier only earns another 429), shortened so at least ``min_attempt_s`` is left for the
    next attempt."""

    def __init__(
        self,
        base: wait_base,
        deadline: float | None,
        min_attempt_s: float,
        clock: Callable[[], float],
    ) -> None:
        self.base, self.deadline, self.min_attempt_s, self.clock = (
            base,
            deadline,
            min_attempt_s,
            clock,
        )

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        wanted = max(self.base(retry_state), _asked_wait(retry_state))
        if self.deadline is None:
            return wanted
        return max(0.0, min(wanted, self.deadline - self.clock() - self.min_attempt_s))


class _StopAtDeadline(stop_base):
    """Stop when no time for a useful attempt would be left after the coming sleep, or after
    the wait the provider asked for (a retry then is handed to a later invocation)."""

    def __init__(
        self, deadline: float | None, min_attempt_s: float, clock: Callable[[], float]
    ) -> None:
        self.deadline, self.min_attempt_s, self.clock = deadline, min_attempt_s, clock

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        if self.deadline is None:
            return False
        sleep = max(retry_state.upcoming_sleep or 0.0, _asked_wait(retry_state))
        return self.clock() + sleep + self.min_attempt_s > self.deadline


def retrying(
    deadline: float | None,
    max_attempts: int = 6,
    *,
    wait: wait_base | None = None,
    min_attempt_s: float = MIN_ATTEMPT_S,
    before_sleep: Callable[[tenacity.RetryCallState], Any] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> tenacity.Retrying:
    """A tenacity loop over model attempts; the last error is re-raised as is (reraise=True).

    ``deadline`` is a ``time.monotonic()`` value (None: attempts are the only bound). ``wait``
    replaces the default backoff (tests pass ``tenacity.wait_none()``)."""
    base = wait if wait is not None else tenacity.wait_random_exponential(multiplier=0.5, max=20)
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_retryable),
        stop=tenacity.stop_after_attempt(max_attempts)
        | _StopAtDeadline(deadline, min_attempt_s, clock),
        wait=_WaitWithinDeadline(base, deadline, min_attempt_s, clock),
        before_sleep=before_sleep,
        sleep=sleep,
        reraise=True,
    )
