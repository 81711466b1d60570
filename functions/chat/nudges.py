"""Idle nudges, bounded: an agent idle in a quiet chat is asked (a readiness-only turn, a model
call) at most ``limit`` times until the chat gets a new message.

Without a bound, a chat whose agents wait for something else (a lease to expire, a human who
left) cost one model call per agent per watchdog tick. The count lives in one small document per
agent and chat (``{chat}/nudges/{agent}``: the message it counts after, and how many), so no
document is written by every agent; a new message resets it, which re-opens the allowance. An
agent whose allowance is spent counts as ready (the watchdog marks it, no model call): it said no
that many times to a conversation nobody added to, and a chat must not wait on it for ever.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from functions import store
from functions.rooms import Room
from shared.models import now

COLLECTION = "nudges"


@dataclasses.dataclass(frozen=True)
class Candidate:
    """An idle agent the watchdog would nudge, and the last message of its chat ('' if none)."""

    room: Room
    agent_id: str
    after: str
    nudge: int = 0
    """Which nudge since ``after`` this is (1 for the first), once counted (``allowed``)."""

    @property
    def nonce(self) -> str:
        """What names this nudge (its readiness turn's nonce, so its question and lock): the
        same quiet chat nudged the same way asks the same question whenever the tick comes."""
        return f"{self.after}-{self.nudge}"


def path(candidate: Candidate) -> str:
    return f"{candidate.room.base_path}/{COLLECTION}/{candidate.agent_id}"


def allowed(candidates: list[Candidate], limit: int) -> tuple[list[Candidate], list[Candidate]]:
    """(the candidates still within their allowance since the chat's last message, each counted;
    those whose allowance is spent): one read of all their counts, one batch of the new ones.
    Two watchdog ticks at once may each count one: the bound is then passed by at most the
    ticks in flight."""
    if not candidates:
        return [], []
    refs = [store.ref(path(c)) for c in candidates]
    counts = {snap.reference.path: snap.to_dict() or {} for snap in store.db().get_all(refs)}
    batch, passed, spent = store.db().batch(), [], []
    for candidate, ref in zip(candidates, refs, strict=True):
        count = _count(counts.get(ref.path) or {}, candidate.after)
        if count >= limit:
            spent.append(candidate)
            continue
        batch.set(ref, {"after": candidate.after, "count": count + 1, "at": now()})
        passed.append(dataclasses.replace(candidate, nudge=count + 1))
    if passed:
        batch.commit()
    return passed, spent


def _count(data: dict[str, Any], after: str) -> int:
    """Nudges so far since ``after``; a count kept for an older message is spent no more."""
    if data.get("after") != after:
        return 0
    return int(data.get("count") or 0)
