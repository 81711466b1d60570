"""Re-driving a debate: every state that is not terminal moves again. The watchdog re-drives
each running debate at every tick: a start whose creation event was lost, the turns of open
rounds whose statements are missing and whose units hold no live lease (a lost publish, a
killed invocation), and completion checks an invocation died before; it waits only
``DLAB_DEBATE_STALE_SECONDS`` (5) for events still on their way. A FAILED debate is left
alone; a user's touch of the debate document re-arms its ended units, sets it running and
re-drives everything, blocked rounds included."""

from __future__ import annotations

from datetime import datetime

from functions import leases, store
from functions.debate import checks, docs, failing, start
from functions.debate.messages import publish_turns
from functions.debate.settings import DebateSettings, debate_settings
from shared.debate import naming
from shared.debate.models import TERMINAL, Round
from shared.models import now


def redrive(d: str, *, touched: bool) -> int:
    """Turns published again; ``touched``: a user's write (failed and blocked work too, no
    waiting)."""
    if touched:
        failing.clear(d)
    settings = debate_settings()
    if not start.started(d):
        if touched or _start_stranded(d, settings):
            start.start(d)
        return 0
    state = store.snapshot_data(docs.debate(d), fields=["status", "paused"]) or {}
    if state.get("paused") or state.get("status") in TERMINAL:
        return 0
    published = 0
    for rnd in docs.open_rounds(d):
        published += _redrive_round(d, rnd, touched, settings)
    for layer in docs.open_layers(d):
        checks.layer_done(d, layer.index)
    return published


def _old(created: datetime | None, settings: DebateSettings) -> bool:
    return created is None or created <= now() - settings.stale_after


def _start_stranded(d: str, settings: DebateSettings) -> bool:
    """Created, never started, and nobody on it: its creation event was lost (or its
    invocation died). A paused debate's start returns at once."""
    created = store.ref(docs.debate(d)).get().create_time
    return _old(created, settings) and not _held(d, [start.START])


def _held(d: str, lease_ids: list[str]) -> set[str]:
    """The leases among ``lease_ids`` that stand for work: a live holder's, or an ended unit's
    (its record and the debate's failure are written; only a touch runs it again)."""
    snaps = store.snapshots([docs.lease(d, i) for i in lease_ids])
    held: set[str] = set()
    at = now()
    for snap in snaps.values():
        lease = leases.LeaseDoc.of(snap)
        if lease.live(at) or lease.failed:
            held.add(snap.id)
    return held


def _redrive_round(d: str, rnd: Round, touched: bool, settings: DebateSettings) -> int:
    ids = {a: naming.statement_id(rnd.id, a) for a in rnd.agents}
    made = docs.statements(d, list(ids.values()))
    missing = [a for a, i in ids.items() if made[i] is None]
    if not missing:
        checks.round_done(d, rnd.id, rnd.layer)
        return 0
    if not touched:
        if not _old(rnd.created_at, settings):
            return 0  # its turns may still be on their way
        busy = _held(d, [ids[a] for a in missing])
        missing = [a for a in missing if ids[a] not in busy]
    publish_turns(d, rnd.id, missing)
    return len(missing)
