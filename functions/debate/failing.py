"""A debate's units of work and its terminal failure.

Every piece of a debate (its start, each statement, each completion check) runs as a unit of
work (``functions.work``): its attempts are counted before any model call, and a unit that ends
(a user function raised, the model never answered validly, the budget spent) makes the debate
FAILED with a ``failure`` naming the document, the field or user function, the reason and the
attempts. The watchdog leaves a failed debate alone; a user's touch (``clear``) re-arms its
ended units and sets it running again, so fixing the input wakes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from functions import errors, leases, store, transactions, work
from functions.debate import docs
from shared.debate import naming
from shared.debate.models import Debate, DebateFailure, DebateStatus
from shared.models import DocumentError, now

T = TypeVar("T")


def run(d: str, lease_id: str, document: str, job: Callable[[], T]) -> work.Outcome[T]:
    """Run ``job`` as a unit of the debate: ended, it fails the debate."""
    return work.run(work.Unit(docs.lease(d, lease_id), document, job, ended=ended(d)))


def ended(d: str) -> Callable[[work.Failure], None]:
    return lambda failure: fail(d, failure)


def attempt() -> int:
    """The running unit's attempt number (1 outside a unit)."""
    held = leases.holding.get()
    return held.attempt if held is not None else 1


def fail(d: str, failure: work.Failure) -> None:
    """The debate FAILED with ``failure``, unless it is done (idempotent: the first failure
    stays until a touch clears it)."""
    shown = DebateFailure(
        document=failure.document,
        field=failure.field,
        reason=failure.reason[:2000],
        attempts=failure.attempts,
        at=now(),
    )

    def body(transaction: store.Transaction) -> None:
        data = store.snapshot_data(docs.debate(d), transaction, fields=["status"])
        if data is None or data.get("status") in (DebateStatus.DONE, DebateStatus.FAILED):
            return
        fields = {"status": DebateStatus.FAILED.value, "failure": shown.to_firestore()}
        transaction.update(store.ref(docs.debate(d)), fields)

    transactions.run(body)


def refuse(d: str, error: DocumentError) -> None:
    """A document the debate cannot run with (its settings, its user functions' names): one
    record and FAILED at once, since running it again would meet the same error."""
    errors.record_error(errors.current_function(), error)
    fail(d, work.Failure(error.document, error.field, attempt(), error.reason))


def clear(d: str) -> bool:
    """A user's touch: the ended units re-armed, a FAILED debate running again (or waiting to
    start). True if it was FAILED."""
    for lease in docs.ended_leases(d):
        work.rearm(lease)
    started = store.ref(docs.layer(d, naming.layer_id(1))).get().exists

    def body(transaction: store.Transaction) -> bool:
        data = store.snapshot_data(docs.debate(d), transaction, fields=["status"])
        if data is None or data.get("status") != DebateStatus.FAILED:
            return False
        status = DebateStatus.RUNNING.value if started else store.DELETE_FIELD
        transaction.update(
            store.ref(docs.debate(d)), Debate.fields(status=status, failure=store.DELETE_FIELD)
        )
        return True

    return bool(transactions.run(body))
