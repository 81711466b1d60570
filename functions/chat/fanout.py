"""Which agents get a turn: on each new chat message, and when a chat starts (openings)."""

from __future__ import annotations

import random

from functions import store
from functions.chat import agents
from functions.chat.turn_request import Turn, publish
from shared.models import ChatMessage, ChatStage


def fan_out(experiment_id: str, cohort_id: str, stage: ChatStage, message: ChatMessage) -> int:
    """Race (DL's default): a turn for every eligible agent. Claim: one turn per agent type for
    the first agent of a seeded order; it passes the message on if it declines."""
    if message.is_error:
        return 0
    groups = {
        "participant": agents.participants_at(experiment_id, cohort_id, stage.id),
        "mediator": agents.mediators_of(experiment_id, cohort_id, stage),
    }
    published = 0
    for agent_type, ids in groups.items():
        if not ids:
            continue
        if stage.election_policy == "claim":
            order = list(ids)
            random.Random(message.id).shuffle(order)
            targets, order_t = [order[0]], tuple(order)
        else:
            targets, order_t = ids, ()
        for agent_id in targets:
            publish(
                Turn(experiment_id, cohort_id, stage.id, message.id, agent_type, agent_id, order_t)
            )
            published += 1
    return published


def request_openings(
    experiment_id: str, cohort_id: str, stage: ChatStage, participant_ids: list[str] | None = None
) -> int:
    """Opening turns: for the cohort's mediators, and for the given agent participants (each
    agent opens at most once per cohort and stage: the turn takes a lock)."""
    turns = [
        Turn(experiment_id, cohort_id, stage.id, "", "mediator", m)
        for m in agents.mediators_of(experiment_id, cohort_id, stage)
    ]
    turns += [
        Turn(experiment_id, cohort_id, stage.id, "", "participant", p)
        for p in participant_ids or []
    ]
    for turn in turns:
        publish(turn)
    return len(turns)


def stage_if_unlocked_chat(experiment_id: str, cohort_id: str, stage_id: str) -> ChatStage | None:
    data = store.snapshot_data(store.cohort_path(experiment_id, cohort_id)) or {}
    if not (data.get("stageUnlockMap") or {}).get(stage_id):
        return None
    stage = store.read_stage(experiment_id, stage_id)
    return stage if isinstance(stage, ChatStage) else None
