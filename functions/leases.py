"""Leases that coalesce work on one thing (one participant's moves) across deliveries.

Duplicate, concurrent and retried deliveries for one participant used to queue on transactions
of its document (eight wakes each waiting 35 s, then failing) and to call the model twice at a
barrier (the agent's own update and the unlock wake). Now the first delivery takes the lease by
atomic create; the others mark it ``pending`` and return at once; the holder, before it lets
go, runs the work again for them. A lease has an expiry, so an invocation that dies holding it
(timeout, out of memory, a killed runtime) stops nobody: the next delivery or the watchdog takes
it over.
"""

from __future__ import annotations

import contextvars
import dataclasses
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Generic, TypeVar

from google.api_core import exceptions as gexc

from functions import store
from shared.models import now

T = TypeVar("T")
MAX_RUNS = 3
"""Runs one holder makes for pending requests before it hands the rest on (``on_overflow``)."""


class Held(StrEnum):
    RAN = "ran"
    COALESCED = "coalesced"
    """Another invocation holds the lease; it was asked to run once more."""


@dataclasses.dataclass(frozen=True)
class Coalesced(Generic[T]):
    held: Held
    result: T | None = None


def coalesce(
    path: str,
    work: Callable[[], T],
    *,
    ttl: timedelta,
    on_overflow: Callable[[], object] | None = None,
) -> Coalesced[T]:
    """Run ``work`` under the lease at ``path``, again for each batch of requests that came
    while it ran (at most ``MAX_RUNS`` times, then ``on_overflow`` hands the rest on). If
    another invocation holds a live lease, ask it to run again and return COALESCED."""
    token = uuid.uuid4().hex
    held = _acquire(path, token, ttl)
    if held is None:
        return Coalesced(Held.COALESCED)
    held.path = path
    result: T | None = None
    holding = _holding.set(held)
    try:
        for _ in range(MAX_RUNS):
            result = work()
            if not _still_pending(path, token, held):
                return Coalesced(Held.RAN, result)
        pending = True  # cleared for a run this holder will not make
    except BaseException:
        pending = _let_go(path, token, held)
        if pending and on_overflow is not None:
            on_overflow()
        raise
    finally:
        _holding.reset(holding)
    pending = _let_go(path, token, held) or pending
    if pending and on_overflow is not None:
        on_overflow()
    return Coalesced(Held.RAN, result)


@dataclasses.dataclass
class _Held:
    """Our lease as we last wrote it: its update time, unless someone wrote it since."""

    written: Any = None
    path: str = ""
    released: bool = False
    """Deleted in the batch of the work's own write (``release_with``)."""


_holding: contextvars.ContextVar[_Held | None] = contextvars.ContextVar("lease", default=None)


def release_with(batch: Any, path: str) -> Callable[[], None] | None:
    """Add the deletion of the lease at ``path``, which this invocation holds, to ``batch``
    (the work's last write): the lease then costs no round trip of its own to let go. The
    deletion is conditional on the lease being as we wrote it, so a request marked pending
    meanwhile fails the whole batch, and the caller writes again without it (the lease is
    then let go as usual, and the work runs again for that request). Returns what to call
    once the batch committed, or None when the lease cannot go with it (not held here, or
    written by someone since we took it)."""
    held = _holding.get()
    if held is None or held.path != path or held.written is None or held.released:
        return None
    batch.delete(store.ref(path), option=store.db().write_option(last_update_time=held.written))

    def committed() -> None:
        held.released = True

    return committed


def commit_letting_go(path: str, batch_for: Callable[[], Any | None]) -> bool:
    """Commit the batch ``batch_for`` builds with the lease at ``path`` let go in it, when this
    invocation holds it (``release_with``): the work's write and the release in one round trip.
    A request marked pending meanwhile fails that batch; it is then built and committed again
    without the release, which ``coalesce`` makes as usual (and runs the work again for that
    request). False if ``batch_for`` found nothing to write (None). Raises what the commit
    raises, whether or not the lease went with it (a precondition of the work's own fails
    both attempts)."""
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


def _acquire(path: str, token: str, ttl: timedelta) -> _Held | None:
    """Take the lease, or mark the live holder's lease pending (None). Loops only while the
    lease changes hands under us (released or expired meanwhile)."""
    ref = store.ref(path)
    for _ in range(5):
        try:
            result = ref.create({"token": token, "expiresAt": now() + ttl, "pending": False})
            return _Held(result.update_time)
        except gexc.AlreadyExists:
            pass
        snap = ref.get()
        if not snap.exists:
            continue
        data = snap.to_dict() or {}
        option = store.db().write_option(last_update_time=snap.update_time)
        try:
            if _expired(data):  # its holder died: take it over
                ref.update(
                    {"token": token, "expiresAt": now() + ttl, "pending": False}, option=option
                )
                return _Held()
            ref.update({"pending": True}, option=option)
            return None
        except (gexc.FailedPrecondition, gexc.NotFound):
            continue
    return None  # the lease is changing hands fast: others are on it


def _expired(data: dict[str, Any]) -> bool:
    expires = data.get("expiresAt")
    return not isinstance(expires, datetime) or expires <= now()


def _still_pending(path: str, token: str, held: _Held) -> bool:
    """Clear a pending mark (True: run again) or let go of the lease (False), atomically with
    respect to new marks: both writes are conditional on the lease being as we read it. When
    nobody wrote the lease since we did (the usual case), it is deleted without reading it."""
    if held.released:
        return False  # let go with the work's own write: nobody asked meanwhile
    ref = store.ref(path)
    if held.written is not None:
        try:
            ref.delete(option=store.db().write_option(last_update_time=held.written))
            return False
        except (gexc.FailedPrecondition, gexc.NotFound):
            held.written = None  # marked pending (or taken over) since: read it
    while True:
        snap = ref.get()
        data = (snap.to_dict() or {}) if snap.exists else {}
        if data.get("token") != token:
            return False  # taken over after expiry: the new holder runs for everyone
        option = store.db().write_option(last_update_time=snap.update_time)
        try:
            if data.get("pending"):
                held.written = ref.update({"pending": False}, option=option).update_time
                return True
            ref.delete(option=option)
            return False
        except (gexc.FailedPrecondition, gexc.NotFound):
            continue


def _let_go(path: str, token: str, held: _Held) -> bool:
    """Delete our lease whatever it holds; True if requests were pending on it."""
    if held.released:
        return False  # it went with the work's own write, before anyone asked again
    ref = store.ref(path)
    while True:
        snap = ref.get()
        data = (snap.to_dict() or {}) if snap.exists else {}
        if data.get("token") != token:
            return False
        try:
            ref.delete(option=store.db().write_option(last_update_time=snap.update_time))
        except (gexc.FailedPrecondition, gexc.NotFound):
            continue
        return bool(data.get("pending"))
