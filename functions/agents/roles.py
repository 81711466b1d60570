"""Deliberate Lab's treatment roles (their PR #1171) on the participant documents: the
treatment hoisted for the participant's round, the private chats a round skips.

The variables are read from the participant's ``variableMap`` as the PR reads them
(``shared/treatment.py``); the hoisted fields are written on the participant when it arrives at
a stage whose round gives other values, so the console, the API and the export show them and
the chat reads them without the stage list.
"""

from __future__ import annotations

from typing import Any

from functions import errors, reads, store
from shared import treatment
from shared.models import DocumentError, Experiment, ParticipantProfile, StageConfig
from shared.treatment import Treatment, TreatmentError


def stages_of(experiment: Experiment) -> list[StageConfig]:
    """The experiment's stages in order, read in one round trip (each once per invocation)."""
    reads.batch([store.stage_path(experiment.id, s) for s in experiment.stage_ids])
    return [store.read_stage(experiment.id, s) for s in experiment.stage_ids]


def uses_treatment(p: ParticipantProfile) -> bool:
    """The participant's variables use a reserved key: only then is the stage list read."""
    return treatment.mentions_reserved(p.variable_map)


def current(p: ParticipantProfile, experiment_id: str = "") -> Treatment:
    """The treatment as the participant's document holds it (its hoisted fields); a count set
    there that cannot be used is recorded (with ``experiment_id``) and counts as none."""
    data = p.to_firestore()
    try:
        return Treatment.of_fields(data)
    except TreatmentError as error:
        if experiment_id:
            path = store.participant_path(experiment_id, p.private_id)
            reason = f"{error.reason}: no agents are added for it"
            error_doc = DocumentError(path, error.variable, reason)
            errors.record_error(errors.current_function(), error_doc)
        return Treatment.of_fields({**data, "otherAgentGeneration": None})


def for_round(experiment_id: str, p: ParticipantProfile, stages: list[StageConfig]) -> Treatment:
    """The treatment of the round the participant is in, from its variables; a value that cannot
    be used is recorded once (naming the variable) and the round's treatment is the document's."""
    index = treatment.round_of(stages, p.current_stage_id)
    try:
        return treatment.hoisted(p.variable_map, index, current(p, experiment_id))
    except TreatmentError as error:
        path = store.participant_path(experiment_id, p.private_id)
        field = f"variableMap.{error.variable}"
        errors.record_error(errors.current_function(), DocumentError(path, field, error.reason))
        return current(p, experiment_id)


def hoist(experiment: Experiment, p: ParticipantProfile) -> Treatment:
    """Write the round's hoisted fields on the participant if they differ; the treatment."""
    if not uses_treatment(p):
        return current(p, experiment.id)
    wanted = for_round(experiment.id, p, stages_of(experiment))
    if wanted != current(p):
        store.ref(store.participant_path(experiment.id, p.private_id)).update(wanted.fields())
    return wanted


def next_stage_id(p: ParticipantProfile, experiment: Experiment) -> str | None:
    """Deliberate Lab's next stage, skipping each private chat the participant's treatment
    skips for that chat's round (PR #1171); None past the last stage."""
    following = experiment.next_stage_id(p.current_stage_id)
    if following is None or not uses_treatment(p):
        return following
    stages = stages_of(experiment)
    by_id = {s.id: s for s in stages}
    while following is not None and by_id[following].kind == "privateChat":
        if not treatment.skips_private_chat(p.variable_map, stages, following):
            break
        following = experiment.next_stage_id(following)
    return following


def is_observer(data: dict[str, Any] | ParticipantProfile) -> bool:
    """A human who watches the group chats of this round (hoisted ``isObserver``)."""
    if isinstance(data, ParticipantProfile):
        return data.agent_config is None and data.is_observer is True
    return not data.get("agentConfig") and data.get("isObserver") is True


def is_inactive(data: dict[str, Any] | ParticipantProfile) -> bool:
    """An inactive persona: present, never chats, never moves, never counts for an unlock."""
    if isinstance(data, ParticipantProfile):
        return bool(data.agent_config and data.agent_config.is_inactive_persona)
    return bool((data.get("agentConfig") or {}).get("isInactivePersona"))


def is_representative(data: dict[str, Any] | ParticipantProfile) -> bool:
    if isinstance(data, ParticipantProfile):
        return bool(data.agent_config and data.agent_config.representative_of)
    return bool((data.get("agentConfig") or {}).get("representativeOf"))


def counts_for_unlock(member: ParticipantProfile) -> bool:
    """Inactive personas never count toward (or block) a stage's unlock (the PR); nor do
    representatives (ours): each stands in for its observer, who counts, and leaves the
    experiment after its chat."""
    return not (is_inactive(member) or is_representative(member))


def takes_part(member: dict[str, Any] | ParticipantProfile) -> bool:
    """Takes part in a chat: neither an observer (watches, cannot post) nor an inactive
    persona (never chats)."""
    return not (is_observer(member) or is_inactive(member))
