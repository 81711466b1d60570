"""The society's watchdog (scheduled): nothing sleeps to keep a day's time, and an invocation
may die anywhere, so on each tick every running society's unfinished day is looked at:

- none yet: set it up (its creation's delivery died);
- ready: open it (a close died before opening it, or the society was resumed);
- open: past its deadline, close it (members that never acted idle); past ``redriveS``,
  re-publish the turns of members with no action yet (a lost publish or a dead turn);
- closing, its claim expired: take the close over (it writes the same documents again).
"""

from __future__ import annotations

import logging

from functions import errors, store
from functions.society import days, docs, setup
from shared.models import DocumentError, now
from shared.society.models import Day

log = logging.getLogger(__name__)


def tick() -> dict[str, str]:
    """What was done per society (for the log and tests)."""
    done: dict[str, str] = {}
    for snap in store.db().collection("societies").stream():
        try:
            done[snap.id] = look_at(snap.id)
        except DocumentError as error:  # one broken society does not stop the others
            errors.record_error(errors.current_function(), error)
            done[snap.id] = f"error: {error}"
    return done


def look_at(s: str) -> str:
    latest = docs.latest_day(s)
    if latest is None:  # its creation's event was lost (an invocation died setting it up)
        society = docs.read_society(s)
        setup.start(society)
        days.resume(s)
        return "started"
    if latest.status == "ready":
        return "opened" if days.open_day(s, latest.day) else "waiting"
    if latest.status == "closing":
        expired = latest.closing_expires is None or latest.closing_expires <= now()
        if expired:
            days.close_and_advance(s, latest.day, takeover=True)
            return "took over the close"
        return "closing"
    if latest.status == "open":
        return _open_day(s, latest)
    return "closed"


def _open_day(s: str, day: Day) -> str:
    if day.deadline is not None and now() >= day.deadline:
        days.close_and_advance(s, day.day)
        return "closed at the deadline"
    redrive = day.settings.redrive_s if day.settings else 30.0
    if day.opened_at is None or (now() - day.opened_at).total_seconds() < redrive:
        days.check(s, day.day, hinted=True)  # the real count only past redriveS (below)
        return "open"
    done = {snap.id for snap in docs.actions_collection(s, day.day).stream()}
    per_day = day.settings.actions_per_day if day.settings else 1
    missing = sorted(
        {
            a
            for a in day.acting
            if a not in day.humans
            for k in range(1, per_day + 1)
            if f"{a}-{k}" not in done
        }
    )
    if missing:
        days.publish(s, day, missing)
        return f"re-published {len(missing)} turn(s)"
    days.check(s, day.day)
    return "open"
