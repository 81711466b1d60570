"""Participant document triggers: start agents and move them one step per update."""

from __future__ import annotations

from functions._events import FirestoreEvent
from functions.agents.progression import advance_agent


def on_participant_created(event: FirestoreEvent) -> None:
    advance_agent(event.params["experimentId"], event.params["participantId"])


def on_participant_updated(event: FirestoreEvent) -> None:
    advance_agent(event.params["experimentId"], event.params["participantId"])
