"""A day's life: opened (one turn per acting member over Pub/Sub), checked after each action,
and closed once everyone acted or its deadline passed."""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta
from typing import Any

from google.cloud.firestore import Increment

from functions import errors
from functions.society import closing, docs
from functions.society.wire import CloseShard, SocietyTurn, publish_turns
from shared.models import DocumentError, now
from shared.society import identity
from shared.society.models import Day, Member

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Roster:
    """Who acts on a day: the active members, and the humans among them."""

    acting: list[int]
    humans: list[int]

    @classmethod
    def of(cls, snapshots: dict[int, Member]) -> Roster:
        acting = sorted(i for i, m in snapshots.items() if m.status == "active")
        return cls(acting, sorted(i for i in acting if snapshots[i].human))


def open_day(s: str, day: int, roster: Roster | None = None) -> Day | None:
    """Open a ready day if the society runs and the day is within its last; then publish the
    turns. None if the day was not opened by this call. ``roster``: who acts, if the caller
    knows (the close that made the day's start), else read from the members' snapshots."""
    if roster is None:
        roster = Roster.of(docs.read_snapshots(s, day))
    acting, humans = sorted(roster.acting), sorted(roster.humans)

    society = docs.read_society(s)

    def decide(current: Day | None) -> dict[str, Any] | None:
        if current is None or current.status != "ready":
            return None
        if society.status != "running" or day > society.settings.days:
            return None
        opened = now()
        return {
            "status": "open",
            "acting": acting,
            "humans": humans,
            "settings": docs.model_doc(society.settings),
            "openedAt": opened,
            "deadline": opened + timedelta(seconds=society.settings.day_deadline_s),
        }

    opened = docs.change_day(s, day, decide)
    if opened is None:
        return None
    log.info("society %s: day %d open, %d acting", s, day, len(acting))
    publish(s, opened, [i for i in acting if i not in humans])
    if opened.expected == 0:
        check(s, day)  # nobody can act: the day closes at once
    return opened


def publish(s: str, day: Day, agents: list[int]) -> None:
    per_day = day.settings.actions_per_day if day.settings else 1
    turns = [
        SocietyTurn(society_id=s, day=day.day, agent_id=a, slot=k)
        for a in agents
        for k in range(1, per_day + 1)
    ]
    publish_turns(turns)


def check(s: str, day: int, *, hinted: bool = False) -> None:
    """Close the day if every expected action is in (or its deadline passed), then open the
    next one. Many deliveries may call this at once: the claim lets one close. ``hinted``: count
    only once the sharded tally says the day may be complete (the watchdog counts anyway)."""
    current = docs.open_day(s, day)
    if current is None:
        return
    late = current.deadline is not None and now() >= current.deadline
    if hinted and not late and docs.count_hint(s, day) < current.expected:
        return
    if late or docs.may_close(s, current):
        closing.start(s, day)


def action_created(s: str, day: int, path: str, data: dict[str, Any]) -> None:
    """A new document under the day's actions. An action is counted (a human's here; a turn
    counts its own in the batch that writes it) and the day checked; any other document gets
    its error record and nothing else: it must not make the day look complete."""
    current = docs.open_day(s, day)
    if current is None:
        _late(s, day, path, data)
        return
    try:
        action = identity.read(path, data, identity.Expected.of(current))
    except DocumentError as error:
        errors.record_error(errors.current_function(), error)
        return
    if data.get("source") not in ("model", "fallback"):
        docs.tally_ref(s, day, action.agent_id).set({"count": Increment(1)}, merge=True)
    check(s, day, hinted=True)


def _late(s: str, day: int, path: str, data: dict[str, Any]) -> None:
    """A document under a day that is no longer open: the close reads only the acting members'
    slots, so one that is no action gets its record here (a late action is left as it is)."""
    current = docs.read_day(s, day)
    if current is None or current.status == "ready":
        return
    try:
        identity.read(path, data, identity.Expected.of(current))
    except DocumentError as error:
        errors.record_error(errors.current_function(), error)


def _next(s: str, day: int) -> closing.Then:
    return lambda final: open_day(s, day + 1, Roster(final.acting, final.humans))


def close_and_advance(s: str, day: int) -> None:
    """Start or push on the day's sharded close (``closing.run``: the watchdog, a resume); its
    finish opens the next day."""
    closing.run(s, day, _next(s, day))


def close_shard(message: CloseShard) -> None:
    closing.run_shard(message, _next(message.society_id, message.day))


def resume(s: str, status: str = "running") -> None:
    """Open the society's latest day if it is ready (a resume, a raised last day); a close
    that failed gets a fresh budget once the society runs again (the researcher's fix)."""
    latest = docs.latest_day(s)
    if latest is None or status != "running":
        return
    if latest.status == "ready":
        open_day(s, latest.day)
    elif latest.status == "closing" and closing.rearm(s, latest.day):
        close_and_advance(s, latest.day)
