"""A unit of work: the one way every triggered piece of work runs, in every system.

An agent's move, a society turn, a debate statement, a conductor step: each runs through
``run``, which gives it three guarantees a researcher pays for.

- **Bounded attempts.** Each attempt is counted in the unit's lease document before the work
  starts, so before any model call, whatever ends it (an exception, a crash, a timeout). After
  ``DLAB_WORK_MAX_ATTEMPTS`` the unit ends: one error record naming the document and the cause,
  and the system's own terminal write (``Unit.ended``: blocked, FAILED). Code a user wrote that
  raises (``UserCodeError``) ends the unit at once: calling the model again would not fix it.
- **A short, renewed lease.** Duplicates coalesce on it; its holder renews it while it lives,
  so a dead holder's unit is taken over within one lease (``functions.leases``).
- **One record.** The record names the unit's document, the field or user function, the
  attempts and the last exception.

Work outside a unit (a chat turn, a wake) is bounded by ``bounded_delivery``, the entry point's
backstop: a retrying function's event that keeps failing is acknowledged with a record.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import Callable
from datetime import timedelta
from enum import StrEnum
from typing import Any, Generic, TypeVar

from google.cloud import firestore

from functions import errors, journal, leases, store, transactions
from functions.settings import BackboneSettings, backbone_settings
from shared.errors import HANDLING, AlreadyRecorded, BackendError, Kind, UserCodeError
from shared.errors import user_code as user_code  # where the units' user code calls it
from shared.models import DocumentError, ErrorRecord, now

T = TypeVar("T")

MAX_RUNS = 3
"""Runs one holder makes for pending requests before it hands the rest on (``on_overflow``)."""


@dataclasses.dataclass(frozen=True)
class Failure:
    """Why a unit ended: ``document``, ``field`` and ``cause`` are its error record's (the same
    record its earlier failed attempts counted in); ``reason`` is what the run shows."""

    document: str
    field: str
    attempts: int
    reason: str
    cause: str = ""

    @property
    def recorded(self) -> DocumentError:
        """The error its record was written for (``errors.error_id`` of it is the record's)."""
        return DocumentError(self.document, self.field, self.cause or self.reason)


class AttemptFailed(AlreadyRecorded):
    """A failed attempt of a unit whose budget is not spent: recorded under the unit's
    document, raised so the platform retries it."""


@dataclasses.dataclass(frozen=True)
class Unit(Generic[T]):
    lease: str
    """The lease document's path: the unit's identity."""
    document: str
    """The document an error record names (the agent, the step, the member)."""
    work: Callable[[], T]
    ended: Callable[[Failure], None] | None = None
    """The system's terminal write (blocked, FAILED), made once the unit ends; idempotent."""
    on_overflow: Callable[[], object] | None = None
    """Hands on requests that came while the holder made its ``MAX_RUNS`` runs. Without it
    the unit runs again, under a lease taken anew: a completion check (a debate's layer) whose
    last request came during the last run would otherwise never see that request's state."""


class State(StrEnum):
    RAN = "ran"
    COALESCED = "coalesced"
    """Another invocation holds the lease; it was asked to run once more."""
    ENDED = "ended"
    """The unit failed for good, now or before: its record and terminal write are made."""
    PAUSED = "paused"
    """Its run reached a spend cap (``spend.BudgetReached``, recorded on the run): the lease is
    let go and no failure counted; the system's watchdog re-drives it once the cap is raised."""


@dataclasses.dataclass(frozen=True)
class Outcome(Generic[T]):
    state: State
    result: T | None = None


def run(unit: Unit[T], settings: BackboneSettings | None = None) -> Outcome[T]:
    """Run ``unit`` under its lease, again for each batch of requests that came while it ran.
    A failed attempt is re-raised (the platform retries it) until the budget is spent; the last
    one ends the unit and returns ENDED (so nothing retries it)."""
    settings = settings or backbone_settings()
    ttl = timedelta(seconds=settings.lease_seconds)
    got = leases.acquire(unit.lease, uuid.uuid4().hex, ttl)
    if got is None:
        return Outcome(State.COALESCED)
    if isinstance(got, leases.Ended):
        return Outcome(State.ENDED)
    held = got
    if held.attempt > settings.work_max_attempts:  # counted before the causes were told apart
        cause = held.previous_error or leases.DIED
        return _end(unit, held, _ending(unit.document, "(work)", held.attempt - 1, cause))
    if held.interrupted > settings.work_max_platform_failures:
        failure = _interrupted(unit.document, held, held.interrupted, held.previous_error)
        return _end(unit, held, failure)
    try:
        result, asked_again = _run_while_asked(unit, held, ttl)
    except Exception as error:
        return _failed(unit, held, error, settings)
    if not asked_again:
        return Outcome(State.RAN, result)
    leases.let_go(held)  # its last pending mark was cleared for a run this holder won't make
    if unit.on_overflow is None:  # nobody to hand it to: run it again, never drop it
        again = run(unit, settings)
        return again if again.state != State.COALESCED else Outcome(State.RAN, result)
    unit.on_overflow()
    return Outcome(State.RAN, result)


def _run_while_asked(unit: Unit[T], held: leases.Held, ttl: timedelta) -> tuple[T, bool]:
    """Run the work, again while requests came during the run, at most ``MAX_RUNS`` times, the
    lease renewed meanwhile; the last result, and whether a request is still unanswered."""
    leases.renew_while_held(held, ttl)
    holding = leases.holding.set(held)
    again = held.attempt > 1 or held.interrupted > 0  # it may have called the model before
    try:
        for run in range(MAX_RUNS):
            with journal.revisiting(again or run > 0):
                result = unit.work()
            if not leases.still_pending(held):
                return result, False
        return result, True
    finally:
        leases.stop_renewing(held)
        leases.holding.reset(holding)


def _ending(document: str, field: str, attempts: int, cause: str) -> Failure:
    reason = f"gave up after {attempts} attempt(s); the last: {cause}"
    return Failure(document, field, attempts, reason, cause)


def _interrupted(document: str, held: leases.Held, times: int, cause: str) -> Failure:
    """The platform, not the work, kept failing: its holders died or Firestore or Pub/Sub
    failed ``DLAB_WORK_MAX_PLATFORM_FAILURES`` times (the work's own attempts were not spent)."""
    reason = (
        f"stopped after the platform interrupted it {times} time(s) (not a failure of"
        f" the work: {held.attempt} attempt(s) counted); the last: {cause or leases.DIED}"
    )
    return Failure(document, "(platform)", held.attempt, reason, cause or leases.DIED)


def _failed(unit: Unit[T], held: leases.Held, error: Exception, settings: BackboneSettings) -> Any:
    """An attempt raised: what its kind means (``shared.errors.HANDLING``) decides. The unit
    ends (user code, or the budget spent), or the error goes up to be retried, recorded under
    the unit's document, its count and text kept in the lease. Bad input keeps its own
    document and field: the entry point records it and does not retry it (a bad document does
    not fix itself), and the next event that meets it is the next attempt."""
    kind = errors.kind_of(error)
    where = document, field, cause = _where(unit, error, kind)
    if kind is Kind.PLATFORM:
        return _platform_failed(unit, held, error, cause, settings)
    if kind is Kind.PAUSE:
        leases.let_go(held)  # not a failed attempt: the next one starts a fresh count
        return Outcome(State.PAUSED)
    if HANDLING[kind].ends:
        return _end(unit, held, Failure(document, field, held.attempt, cause, cause))
    if held.attempt >= settings.work_max_attempts:
        return _end(unit, held, _ending(document, field, held.attempt, cause))
    if leases.let_go_failed(held, cause, ended=False) and unit.on_overflow is not None:
        unit.on_overflow()
    if isinstance(error, BackendError) and error.recorded:
        raise error
    if isinstance(error, DocumentError):
        raise error  # bad input: recorded by the entry point, where it belongs; not retried
    if kind is Kind.BAD_INPUT:
        raise DocumentError(*where) from error
    errors.record_error(errors.current_function(), DocumentError(document, field, cause))
    raise AttemptFailed(cause) from error


def _where(unit: Unit[T], error: Exception, kind: Kind) -> tuple[str, str, str]:
    """The document, field and cause an attempt's error is recorded under."""
    if isinstance(error, DocumentError):
        return error.document, error.field, error.reason
    if isinstance(error, UserCodeError):
        return unit.document, error.function, str(error)
    field = "(input)" if kind is Kind.BAD_INPUT else "(work)"
    return unit.document, field, f"{type(error).__name__}: {error}"


def _platform_failed(
    unit: Unit[T], held: leases.Held, error: Exception, cause: str, settings: BackboneSettings
) -> Any:
    """A transient Firestore or Pub/Sub failure: retried (the platform's redelivery backs off)
    without spending an attempt of the work, under its own, larger bound."""
    if held.interrupted + 1 > settings.work_max_platform_failures:
        failure = _interrupted(unit.document, held, held.interrupted + 1, cause)
        return _end(unit, held, failure)
    if leases.let_go_interrupted(held, cause) and unit.on_overflow is not None:
        unit.on_overflow()
    where = DocumentError(unit.document, "(platform)", cause)
    errors.record_error(errors.current_function(), where)
    raise AttemptFailed(cause) from error


def _end(unit: Unit[T], held: leases.Held, failure: Failure) -> Outcome[T]:
    """The record and the system's terminal write first, then the lease marked ended: a crash
    between them makes the next delivery end the unit again (both writes are idempotent)."""
    path = errors.record_error(errors.current_function(), failure.recorded)
    if path is not None:
        store.ref(path).update(ErrorRecord.fields(ended_after_attempts=failure.attempts))
    if unit.ended is not None:
        unit.ended(failure)
    leases.let_go_failed(held, failure.reason, ended=True)
    return Outcome(State.ENDED)


def rearm(lease: str) -> bool:
    """The cause of an ended unit was fixed: its next delivery starts a fresh budget."""
    return leases.rearm(lease)


DELIVERIES = "deliveryFailures"
"""Failed deliveries of retrying functions' events, one document per event (backend-only)."""


def delivery_failures_path(function: str, event_id: str) -> str:
    """The document counting ``event_id``'s failed deliveries to ``function``: it exists once
    a delivery of the event failed, so a delivery that finds it is a re-execution."""
    key = hashlib.sha1(f"{function}\x1f{event_id}".encode()).hexdigest()[:24]
    return f"{DELIVERIES}/{key}"


def bounded_delivery(function: str, event_id: str, settings: BackboneSettings | None = None) -> int:
    """Count one more failed delivery of ``event_id`` to ``function``; the count so far. The
    entry point acknowledges the event (with a record) once the count reaches
    ``DLAB_DELIVERY_MAX_FAILURES``, so no event is retried without bound."""
    settings = settings or backbone_settings()
    path = delivery_failures_path(function, event_id)

    def body(transaction: firestore.Transaction) -> int:
        data = store.snapshot_data(path, transaction) or {}
        count = int(data.get("failures") or 0) + 1
        fields = {"function": function, "eventId": event_id, "failures": count, "at": now()}
        transaction.set(store.ref(path), fields)
        return count

    return int(transactions.run(body))
