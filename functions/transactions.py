"""Firestore transactions that survive contention.

Many deliveries touch the same documents at once (every agent electing itself for one message,
duplicate events for one participant). The client retries an aborted transaction at once, so
contenders stay in step and can all fail; here each retry waits a jittered, growing delay.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import tenacity
from google.api_core import exceptions as gexc
from google.cloud import firestore

from functions import store

T = TypeVar("T")
ATTEMPTS = 8


def is_contention(error: BaseException) -> bool:
    """Aborted by a concurrent transaction (the client reports exhausted retries as ValueError)."""
    return isinstance(error, gexc.Aborted) or (
        isinstance(error, ValueError) and str(error).startswith("Failed to commit transaction")
    )


def retry_contended(write: Callable[[], T], *, attempts: int = ATTEMPTS) -> T:
    """Run a plain write (or a few) again when it collides with a transaction holding the
    document ("409 Transaction lock timeout"): many agents mark themselves ready in one chat's
    public data while a thread advance or a turn holds it, and a lost mark stalls the thread."""
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_random_exponential(multiplier=0.05, max=2),
        retry=tenacity.retry_if_exception(is_contention),
        reraise=True,
    )
    return retrying(write)


def run(
    body: Callable[[Any], T],
    *,
    settled: Callable[[], T | None] | None = None,
    attempts: int = ATTEMPTS,
) -> T:
    """Run ``body(transaction)`` in a transaction, retrying contention with backoff. Before a
    retry, ``settled()`` may return a result that makes the retry unnecessary (another delivery
    already did the work)."""
    transactional = firestore.transactional(body)
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_random_exponential(multiplier=0.05, max=2),
        retry=tenacity.retry_if_exception(is_contention),
        reraise=True,
    )
    for attempt in retrying:
        with attempt:
            if settled is not None and attempt.retry_state.attempt_number > 1:
                outcome = settled()
                if outcome is not None:
                    return outcome
            return transactional(store.db().transaction(max_attempts=2))
    raise AssertionError("unreachable: tenacity reraises the last error")
