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
from google.api_core import gapic_v1
from google.cloud import firestore
from google.cloud.firestore_v1 import client as client_module

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


@dataclasses.dataclass
class Begun:
    """A transaction begun by its first read (``begin_by_reading``), with what it read. It ends
    with ``commit`` or ``close`` (a rollback): until then it holds what it read, and a write
    to those documents waits for it (the emulator's locks; production's in pessimistic mode).
    A context manager that closes it on the way out."""

    transaction: Any
    documents: dict[str, dict[str, Any] | None]
    ended: bool = False

    def commit(self) -> None:
        """Commit the writes added to ``transaction``; ``gexc.Aborted`` on contention."""
        self.ended = True
        self.transaction._commit()

    def close(self) -> None:
        """Roll back unless it ended; a failed rollback leaves it to expire."""
        if self.ended:
            return
        self.ended = True
        with contextlib.suppress(gexc.GoogleAPICallError):
            self.transaction._rollback()

    def __enter__(self) -> Begun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def begin_by_reading(paths: Sequence[str]) -> Begun:
    """Begin a read-write transaction with the read of ``paths``: Firestore's BatchGetDocuments
    begins one (``new_transaction``) and returns its id with the documents, where the client
    library first begins it with a call of its own, one round trip more. A reply's last steps
    are round trips one after the other (the chat read again, then its post), so the post's
    transaction begins with a read made beside the chat's (``messages.read_thread``). The
    client's ``Transaction`` then commits it as its own (its id is all it needs)."""
    client = store.db()
    request, references, kwargs = client._prep_get_all(
        [store.ref(path) for path in paths], None, None, gapic_v1.method.DEFAULT, None
    )
    del request["transaction"]
    request["new_transaction"] = {"read_write": {}}
    transaction = client.transaction(max_attempts=1)
    documents: dict[str, dict[str, Any] | None] = {}
    responses = client._firestore_api.batch_get_documents(
        request=request, metadata=client._rpc_metadata, **kwargs
    )
    for response in responses:
        if response.transaction:
            transaction._id = response.transaction
        if response._pb.WhichOneof("result") is None:
            continue  # the response that only carries the transaction's id
        snap = client_module._parse_batch_get(response, references, client)
        documents[snap.reference.path] = store.data_of(snap)
    if transaction._id is None:
        raise RuntimeError(f"Firestore began no transaction reading {list(paths)}")
    return Begun(transaction, documents)
