"""One move for a participant, and the chat openings it leads to.

Progression sits below the chat, so it reports that the participant is at an unlocked chat and
the trigger asks the chat for the opening turns.
"""

from __future__ import annotations

from functions.agents.progression import Advance, Seen, advance_agent
from functions.chat import fanout


def advance(experiment_id: str, participant_id: str, seen: Seen | None = None) -> Advance:
    """``seen``: where the event saw the participant (read ahead with it, see ``Seen``)."""
    result = advance_agent(experiment_id, participant_id, seen)
    if result.chat is not None:
        entry = result.chat
        fanout.request_openings(experiment_id, entry.cohort_id, entry.stage, entry.participant)
    return result
