"""The lease of a unit of work: who works on it now, and how many attempts it has had.

The first delivery takes the lease by atomic create; concurrent ones mark it ``pending`` and
return at once, and the holder runs the work again for them. The lease is short and renewed in
the background while its holder lives, so a holder that dies (a crash, a timeout, a killed
runtime) stops nobody for longer than one lease. The lease document also counts the unit's
attempts: taking it is the attempt's first write, so the count goes up before any model call
whatever happens next; a success deletes it (the next unit starts from zero), a failure keeps
it with its error. ``functions.work`` decides what a count means.
"""

from __future__ import annotations

import contextvars
import dataclasses
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import firestore

from functions import store
from shared.models import DocModel, Timestamp, now

DIED = "its invocation ended while holding the lease (a crash, a timeout or a killed runtime)"
"""The error a taken-over lease stands for when its holder left none."""


class Expiring(DocModel):
    """What every lease-like document has (a unit's lease, a chat's lock): who holds it, and
    until when unless renewed. ``live`` is the one rule for "someone holds this now"."""

    token: str = ""
    """The holder's; '' once let go after a failure (the document stays for its count)."""
    expires_at: Timestamp | None = None

    def live(self, at: datetime) -> bool:
        return bool(self.token) and self.expires_at is not None and self.expires_at > at


class LeaseDoc(Expiring):
    """A unit of work's lease document (``functions.work``)."""

    pending: bool = False
    """A request came while it was held: the holder runs the work once more."""
    attempts: int = 0
    interrupted: int = 0
    last_error: str = ""
    failed: bool = False
    """The unit ended: no attempt follows until a fix re-arms it (``rearm``)."""

    @classmethod
    def of(cls, snap: firestore.DocumentSnapshot) -> LeaseDoc:
        """The lease a snapshot holds (an absent one: a lease nobody holds). Written only by
        this module, so it is read without the error path of a console-edited document."""
        return cls.model_validate(snap.to_dict() or {}) if snap.exists else cls()


LIVENESS_FIELDS = ["token", "expiresAt"]
"""What ``live`` reads: a watchdog asking only that reads only these (``field_paths``)."""


def live(snap: firestore.DocumentSnapshot, at: datetime | None = None) -> bool:
    """Someone holds the lease in ``snap`` now."""
    return LeaseDoc.of(snap).live(at or now())


@dataclasses.dataclass
class Held:
    """Our lease as we last wrote it: its update time, unless someone wrote it since."""

    path: str
    token: str
    attempt: int
    """This attempt's number, counted in the lease document (1 for a fresh unit)."""
    previous_error: str = ""
    """What ended the attempt before this one, when there was one."""
    interrupted: int = 0
    """Times the platform interrupted the unit so far (a holder that died with the lease, a
    transient Firestore or Pub/Sub error): not the work's failures, so not in ``attempt``."""
    written: Any = None
    released: bool = False
    """Deleted in the batch of the work's own write (``release_with``)."""
    renewer: threading.Event | None = None


@dataclasses.dataclass(frozen=True)
class Ended:
    """The unit ended before: its lease says failed, with the attempts it had and why."""

    attempts: int
    error: str


def acquire(path: str, token: str, ttl: timedelta) -> Held | Ended | None:
    """Take the lease (a new attempt), or mark the live holder's lease pending (None), or find
    the unit ended. Loops only while the lease changes hands under us."""
    ref = store.ref(path)
    for _ in range(5):
        try:
            fresh = LeaseDoc(token=token, expires_at=now() + ttl, attempts=1)
            result = ref.create(fresh.to_firestore())
            return Held(path, token, 1, written=result.update_time)
        except gexc.AlreadyExists:
            pass
        snap = ref.get()
        if not snap.exists:
            continue
        lease = LeaseDoc.of(snap)
        if lease.failed:
            return Ended(lease.attempts, lease.last_error)
        option = store.db().write_option(last_update_time=snap.update_time)
        try:
            if not lease.live(now()):
                return _take_over(ref, option, lease, token, ttl)
            ref.update(LeaseDoc.fields(pending=True), option=option)
            return None
        except (gexc.FailedPrecondition, gexc.NotFound):
            continue
    return None  # the lease is changing hands fast: others are on it


def _take_over(
    ref: firestore.DocumentReference, option: Any, lease: LeaseDoc, token: str, ttl: timedelta
) -> Held:
    """Take an expired lease. Let go after a failure of the work: its next attempt. Held by an
    invocation that died: the same attempt again, the interruption counted apart (the work
    did not fail; the platform stopped it)."""
    died = bool(lease.token)
    interrupted = lease.interrupted + 1 if died else lease.interrupted
    attempts = max(lease.attempts if died else lease.attempts + 1, 1)
    fields = LeaseDoc.fields(
        token=token,
        expires_at=now() + ttl,
        pending=False,
        attempts=attempts,
        interrupted=interrupted,
    )
    written = ref.update(fields, option=option)
    error = DIED if died else lease.last_error
    return Held(ref.path, token, attempts, error, interrupted, written.update_time)


def renew_while_held(held: Held, ttl: timedelta) -> None:
    """Push the lease's expiry forward every third of ``ttl`` until ``stop_renewing``. A renewal
    that finds the lease changed (a pending mark) renews on what it read and makes the holder
    read the lease again before letting go, so no mark is lost."""
    stop = threading.Event()
    held.renewer = stop
    every = ttl.total_seconds() / 3

    def loop() -> None:
        while not stop.wait(every):
            if not _renew(held, ttl):
                return

    threading.Thread(target=loop, name=f"lease {held.path}", daemon=True).start()


def stop_renewing(held: Held) -> None:
    if held.renewer is not None:
        held.renewer.set()


def _renew(held: Held, ttl: timedelta) -> bool:
    ref = store.ref(held.path)
    written = held.written
    try:
        if written is not None:
            option = store.db().write_option(last_update_time=written)
            result = ref.update(LeaseDoc.fields(expires_at=now() + ttl), option=option)
            if held.written is written:
                held.written = result.update_time
            return True
        snap = ref.get()
        if LeaseDoc.of(snap).token != held.token:
            return False  # let go, or taken over: nothing of ours to renew
        option = store.db().write_option(last_update_time=snap.update_time)
        ref.update(LeaseDoc.fields(expires_at=now() + ttl), option=option)
        return True
    except (gexc.FailedPrecondition, gexc.NotFound):
        held.written = None  # written by someone since: read it next time
        return True
    except gexc.GoogleAPICallError:
        return True  # a lost renewal only shortens the lease; the next one may pass


holding: contextvars.ContextVar[Held | None] = contextvars.ContextVar("lease", default=None)
"""The lease the running unit of work holds (set by ``functions.work``)."""


def release_with(batch: firestore.WriteBatch, path: str) -> Callable[[], None] | None:
    """Add the deletion of the lease at ``path``, which this invocation holds, to ``batch`` (the
    work's last write): the lease then costs no round trip of its own to let go. The deletion
    is conditional on the lease being as we wrote it, so a request marked pending meanwhile
    fails the whole batch, and the caller writes again without it. Returns what to call once
    the batch committed, or None when the lease cannot go with it (not held here, or written
    by someone since we took it)."""
    held = holding.get()
    if held is None or held.path != path or held.written is None or held.released:
        return None
    batch.delete(store.ref(path), option=store.db().write_option(last_update_time=held.written))

    def committed() -> None:
        held.released = True
        stop_renewing(held)

    return committed


def commit_letting_go(path: str, batch_for: Callable[[], Any | None]) -> bool:
    """Commit the batch ``batch_for`` builds with the lease at ``path`` let go in it, when this
    invocation holds it (``release_with``): the work's write and the release in one round trip.
    A request marked pending meanwhile fails that batch; it is then built and committed again
    without the release (the unit then runs again for that request). False if ``batch_for``
    found nothing to write (None). Raises what the commit raises."""
    for letting_go in (True, False):
        batch = batch_for()
        if batch is None:
            return False
        released = release_with(batch, path) if letting_go else None
        try:
            batch.commit()
        except (gexc.FailedPrecondition, gexc.NotFound):
            if released is None:
                raise
            continue
        if released is not None:
            released()
        return True
    raise AssertionError("unreachable: the attempt without the release returns or raises")


def still_pending(held: Held) -> bool:
    """Clear a pending mark (True: run again) or let go of the lease (False), atomically with
    respect to new marks: both writes are conditional on the lease being as we read it. When
    nobody wrote the lease since we did (the usual case), it is deleted without reading it."""
    if held.released:
        return False  # let go with the work's own write: nobody asked meanwhile
    ref = store.ref(held.path)
    if held.written is not None:
        try:
            ref.delete(option=store.db().write_option(last_update_time=held.written))
            held.released = True
            return False
        except (gexc.FailedPrecondition, gexc.NotFound):
            held.written = None  # marked pending (or renewed, or taken over) since: read it
    while True:
        snap = ref.get()
        lease = LeaseDoc.of(snap)
        if lease.token != held.token:
            return False  # taken over after expiry: the new holder runs for everyone
        option = store.db().write_option(last_update_time=snap.update_time)
        try:
            if lease.pending:
                written = ref.update(LeaseDoc.fields(pending=False), option=option)
                held.written = written.update_time
                return True
            ref.delete(option=option)
            held.released = True
            return False
        except (gexc.FailedPrecondition, gexc.NotFound):
            continue


def let_go(held: Held) -> bool:
    """Delete our lease whatever it holds (the work is done); True if requests were pending."""
    return _give_up(held, lambda ref, option: ref.delete(option=option))


def let_go_failed(held: Held, error: str, *, ended: bool) -> bool:
    """Give the lease up after a failed attempt, keeping its count and error: expired at once,
    so the next delivery is the next attempt; ``ended``: no attempt follows. True if requests
    were pending on it."""
    fields = _let_go_fields(error, failed=ended)
    return _give_up(held, lambda ref, option: ref.update(fields, option=option))


def let_go_interrupted(held: Held, error: str) -> bool:
    """Give the lease up after the platform failed the attempt (a transient Firestore or Pub/Sub
    error): the attempt is not counted against the work (the next take counts it again) and the
    interruption is. True if requests were pending on it."""
    fields = _let_go_fields(error, failed=False)
    fields |= LeaseDoc.fields(attempts=held.attempt - 1, interrupted=held.interrupted + 1)
    return _give_up(held, lambda ref, option: ref.update(fields, option=option))


def _let_go_fields(error: str, *, failed: bool) -> dict[str, Any]:
    """Nobody holds it (expired at once, so the next delivery takes it); its error kept."""
    return LeaseDoc.fields(
        token="", expires_at=now(), pending=False, last_error=error[:2000], failed=failed
    )


def _give_up(held: Held, write: Callable[[Any, Any], object]) -> bool:
    """``write(ref, option)`` our lease away, conditional on the version read, unless someone
    took it over meanwhile (that holder has the unit now); True if requests were pending."""
    if held.released:
        return False
    ref = store.ref(held.path)
    while True:
        snap = ref.get()
        lease = LeaseDoc.of(snap)
        if lease.token != held.token:
            return False
        try:
            write(ref, store.db().write_option(last_update_time=snap.update_time))
        except (gexc.FailedPrecondition, gexc.NotFound):
            continue
        held.released = True
        return lease.pending


def rearm(path: str) -> bool:
    """Forget an ended unit's attempts (its cause was fixed): the next delivery runs it anew.
    True if there was an ended lease to forget."""
    ref = store.ref(path)
    snap = ref.get()
    if not LeaseDoc.of(snap).failed:
        return False
    try:
        ref.delete(option=store.db().write_option(last_update_time=snap.update_time))
    except (gexc.FailedPrecondition, gexc.NotFound):
        return False
    return True
