"""The society's watchdog (scheduled): nothing sleeps to keep a day's time, and an invocation
may die anywhere, so on each tick every running society's unfinished work is looked at and
re-driven, each state within a tick (and a lease where a live holder may still be at it):

- no day yet: set it up (its creation's event was lost, or its invocation died);
- ready: open it (a close died before opening it, or the society was resumed);
- open: past its deadline, close it (members that never acted idle); from ``redriveS`` after it
  opened, re-publish the turns with no action and no live lease (a lost publish, a dead turn, a
  turn whose attempt failed);
- closing: run the close again; its lease coalesces this with a live closer, and takes over
  from a dead one once its lease expired (a tick and one lease after the death).

A failed society is terminal: nothing is re-driven until the researcher sets it running.
"""

from __future__ import annotations

import logging

from functions import errors
from functions.society import close, days, scene, setup, turn
from functions.society.wire import SocietyTurn
from shared.models import DocumentError, now
from shared.society.models import Day, Society

log = logging.getLogger(__name__)


def tick() -> dict[str, str]:
    """What was done per society (for the log and tests)."""
    done: dict[str, str] = {}
    for s, society in scene.societies():
        if isinstance(society, DocumentError):
            done[s] = _broken(society)
            continue
        try:
            done[s] = look_at(society)
        except DocumentError as error:
            done[s] = _broken(error)
        except Exception as error:  # nor does a failed attempt of one of its units
            log.warning("society %s: %s: %s", s, type(error).__name__, error)
            done[s] = f"attempt failed: {type(error).__name__}: {error}"
    return done


def _broken(error: DocumentError) -> str:
    """A malformed document of one society, recorded: it does not stop the others."""
    errors.record_error(errors.current_function(), error)
    return f"error: {error}"


def _close(s: str, day: int) -> str:
    """Run a day's close; an attempt that fails is counted in its lease (and recorded once, when
    the close ends), so it neither stops the tick nor makes a record per tick."""
    try:
        days.close_and_advance(s, day)
    except Exception as error:
        log.warning(
            "society %s: closing day %d failed: %s: %s", s, day, type(error).__name__, error
        )
        return f"close attempt failed: {type(error).__name__}: {error}"
    return "closing"


def look_at(society: Society) -> str:
    s = society.id
    if society.status == "failed":
        return "failed"
    latest = scene.latest_day(s)
    if latest is None:  # its creation's event was lost (an invocation died setting it up)
        setup.start(society)
        days.resume(s, society.status)
        return "started"
    if latest.status == "ready":
        return "opened" if days.open_day(s, latest.day) else "waiting"
    if latest.status == "closing":
        return _close(s, latest.day)
    if latest.status == "open":
        return _open_day(s, latest)
    return "closed"


def _open_day(s: str, day: Day) -> str:
    if day.deadline is not None and now() >= day.deadline:
        return f"at the deadline: {_close(s, day.day)}"
    redrive = day.settings.redrive_s if day.settings else 30.0
    if day.opened_at is None or (now() - day.opened_at).total_seconds() < redrive:
        close.check(s, day.day, hinted=True)  # the real count only past redriveS (below)
        return "open"
    stranded = _stranded(s, day)
    if stranded:
        days.publish(s, day, stranded)
        return f"re-published {len(stranded)} turn(s)"
    close.check(s, day.day)
    return "open"


def _stranded(s: str, day: Day) -> list[int]:
    """Members with a turn that has no action and no live lease: nobody is at it."""
    done = scene.action_ids(s, day.day)
    per_day = day.settings.actions_per_day if day.settings else 1
    missing = [
        SocietyTurn(society_id=s, day=day.day, agent_id=a, slot=k)
        for a in day.acting
        if a not in day.humans
        for k in range(1, per_day + 1)
        if f"{a}-{k}" not in done
    ]
    if not missing:
        return []
    unheld = scene.unheld({i: turn.lease(t) for i, t in enumerate(missing)})
    return sorted({missing[i].agent_id for i in unheld})
