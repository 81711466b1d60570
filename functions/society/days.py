"""A day's opening: the day marked open (who acts, its settings, its deadline), then one turn per
acting member over Pub/Sub; and what opens a day: the close that made its start, the watchdog, a
resume. The close is ``functions.society.close``."""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta
from typing import Any

from functions.society import close, scene
from functions.society.wire import SocietyTurn, publish_turns
from shared.models import now
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
    seen = scene.opening(s, day, members=roster is None)
    society = seen.society
    if roster is None:
        roster = Roster.of(seen.snapshots)
    acting, humans = sorted(roster.acting), sorted(roster.humans)

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
            "settings": society.settings.to_firestore(),
            "openedAt": opened,
            "deadline": opened + timedelta(seconds=society.settings.day_deadline_s),
        }

    opened = scene.change_day(s, day, decide)
    if opened is None:
        return None
    log.info("society %s: day %d open, %d acting", s, day, len(acting))
    publish(s, opened, [i for i in acting if i not in humans])
    if opened.expected == 0:
        close.check(s, day)  # nobody can act: the day closes at once
    return opened


def publish(s: str, day: Day, agents: list[int]) -> None:
    per_day = day.settings.actions_per_day if day.settings else 1
    turns = [
        SocietyTurn(society_id=s, day=day.day, agent_id=a, slot=k)
        for a in agents
        for k in range(1, per_day + 1)
    ]
    publish_turns(turns)


def opener(s: str, day: int) -> close.Then:
    """What a close does once it closed ``day``: open the next one, with who acts on it."""
    return lambda final: open_day(s, day + 1, Roster(final.acting, final.humans))


def close_and_advance(s: str, day: int) -> None:
    """Start or push on the day's sharded close (``close.run``: the watchdog, a resume); its
    finish opens the next day."""
    close.run(s, day, opener(s, day))


def resume(s: str, status: str = "running") -> None:
    """Open the society's latest day if it is ready (a resume, a raised last day); a close
    that failed gets a fresh budget once the society runs again (the researcher's fix)."""
    latest = scene.latest_day(s)
    if latest is None or status != "running":
        return
    if latest.status == "ready":
        open_day(s, latest.day)
    elif latest.status == "closing" and close.rearm(s, latest.day):
        close_and_advance(s, latest.day)
