"""Firestore transactions that survive contention.

Many deliveries touch the same documents at once (every agent electing itself for one message,
duplicate events for one participant). The client retries an aborted transaction at once, so
contenders stay in step and can all fail; here each retry waits a jittered, growing delay.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import tenacity
from google.api_core import exceptions as gexc
from google.cloud import firestore

from functions import firestore_api, store

T = TypeVar("T")
ATTEMPTS = 8


def is_contention(error: BaseException) -> bool:
    """Aborted by a concurrent transaction (the client reports exhausted retries as ValueError)."""
    return isinstance(error, gexc.Aborted) or (
        isinstance(error, ValueError) and str(error).startswith("Failed to commit transaction")
    )


LOST = ("transaction is invalid or closed", "transaction has expired", "no longer valid")
"""How the emulator and production say a transaction is gone (InvalidArgument)."""


def is_lost(error: BaseException) -> bool:
    """The transaction is gone from under its holder: the emulator restarted between its read
    and its commit ("Transaction is invalid or closed"), or production expired it ("The
    referenced transaction has expired or is no longer valid"). A new transaction can succeed."""
    text = str(error).lower()
    return isinstance(error, gexc.InvalidArgument) and any(words in text for words in LOST)


def is_retryable(error: BaseException) -> bool:
    """What ``run`` begins again: contention, or a transaction lost (``is_lost``)."""
    return is_contention(error) or is_lost(error)


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
    """Run ``body(transaction)`` in a transaction, retrying contention (and a transaction
    lost, ``is_lost``) with backoff. Before a retry, ``settled()`` may return a result that
    makes the retry unnecessary (another delivery already did the work)."""
    transactional = firestore.transactional(body)
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_random_exponential(multiplier=0.05, max=2),
        retry=tenacity.retry_if_exception(is_retryable),
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


@dataclasses.dataclass
class Begun:
    """A transaction begun by its first read (``begin_by_reading``), with what it read. Writes
    go to ``transaction`` (``create``, ``set``, ``update``, as on the client's ``Transaction``).
    It ends with ``commit`` or ``close`` (a rollback): until then it holds what it read, and a
    write to those documents waits for it (the emulator's locks; production's in pessimistic
    mode). A context manager that closes it on the way out."""

    transaction: firestore_api.Writes
    documents: dict[str, dict[str, Any] | None]
    id: bytes
    ended: bool = False

    def commit(self) -> None:
        """Commit the writes added to ``transaction``; ``gexc.Aborted`` on contention."""
        self.ended = True
        firestore_api.commit(self.id, self.transaction)

    def close(self) -> None:
        """Roll back unless it ended; a failed rollback leaves it to expire."""
        if self.ended:
            return
        self.ended = True
        with contextlib.suppress(gexc.GoogleAPICallError):
            firestore_api.rollback(self.id)

    def __enter__(self) -> Begun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def begin_by_reading(paths: Sequence[str]) -> Begun:
    """Begin a read-write transaction with the read of ``paths``: Firestore's BatchGetDocuments
    begins one (``new_transaction``) and returns its id with the documents, where the client
    library first begins it with a call of its own, one round trip more. A reply's last steps
    are round trips one after the other (the chat read again, then its post), so the post's
    transaction begins with a read made beside the chat's (``messages.read_thread``)."""
    transaction, documents = firestore_api.read_beginning(paths)
    return Begun(firestore_api.Writes(), documents, transaction)
