"""One move for a participant, and the chat openings it leads to.

Progression sits below the chat, so it reports that the participant is at an unlocked chat and
the trigger asks the chat for the opening turns.
"""

from __future__ import annotations

from functions.agents.progression import Advance, advance_agent
from functions.chat import fanout


def advance(experiment_id: str, participant_id: str) -> Advance:
    result = advance_agent(experiment_id, participant_id)
    if result.chat is not None:
        entry = result.chat
        fanout.request_openings(experiment_id, entry.cohort_id, entry.stage, entry.participant)
    return result
