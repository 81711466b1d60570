"""Participant document triggers: start agents and move them one step per update."""

from __future__ import annotations

from functions import store, work
from functions._events import FirestoreEvent
from functions.agents.model_call import ProviderUnavailable
from functions.agents.progression import BLOCKED_FIELD, Seen
from functions.triggers.advance import advance
from functions.wire import publish_wakes


def _advance(event: FirestoreEvent) -> None:
    """One move; a move stopped by a failing provider goes to onAgentWake, which is retried
    (these triggers are not: DL's are not, and a retry would repeat every side effect)."""
    experiment_id, participant_id = event.params["experimentId"], event.params["participantId"]
    try:
        advance(experiment_id, participant_id, Seen.of(event.after))
    except ProviderUnavailable as error:
        publish_wakes(experiment_id, f"retry: {error}", participant_id)


def on_participant_created(event: FirestoreEvent) -> None:
    _advance(event)


def on_participant_updated(event: FirestoreEvent) -> None:
    if _only_marked_blocked(event):
        return  # our own note of what stops the agent: nothing changed to move it
    if (event.after or {}).get(BLOCKED_FIELD):  # touched while blocked: a fix, try again
        params = event.params
        work.rearm(store.move_lease_path(params["experimentId"], params["participantId"]))
    _advance(event)


def _only_marked_blocked(event: FirestoreEvent) -> bool:
    """The update only set or cleared ``agentBlockedOn`` (the backend's mark): handling it
    would meet the same error again and count it twice."""
    before, after = event.before or {}, event.after or {}
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    return changed == {BLOCKED_FIELD}
