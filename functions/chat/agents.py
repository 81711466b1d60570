"""Who takes part in a chat: agent participants at the stage and the cohort's active mediators
that have a prompt for it; and each one's chat prompt config."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from google.cloud import firestore

from functions import documents, errors, reads, store
from functions.agents import roles
from shared import paths
from shared.models import (
    AgentChatSettings,
    DocumentError,
    MediatorProfile,
    MediatorStatus,
    ParticipantProfile,
    ParticipantStatus,
    PromptConfig,
    StageConfig,
    parse_document,
)
from shared.prompts import default_participant_prompt

AgentType = Literal["participant", "mediator"]


@dataclasses.dataclass(frozen=True)
class ChatAgent:
    type: AgentType
    profile: ParticipantProfile | MediatorProfile
    config: PromptConfig
    config_path: str | None

    @property
    def private_id(self) -> str:
        return self.profile.private_id

    @property
    def public_id(self) -> str:
        return self.profile.public_id

    @property
    def settings(self) -> AgentChatSettings:
        return self.config.chat_settings or AgentChatSettings()


_read_with_profile = reads.Guesses()
"""What an agent's last turn at a stage read once its profile was read (its persona's prompt,
the creator's keys), by (experiment, prompt pattern, agent, stage)."""
_mediator_prompts = reads.Guesses()
"""The prompts ``mediators_of`` last found for a cohort's stage, by (experiment, cohort,
stage)."""


def documents_of(
    experiment_id: str, agent_type: str, private_id: str, stage_id: str
) -> tuple[str, ...]:
    """What loading the agent at the stage reads: its profile, and what it read after the
    profile the last time on this instance (its prompt, the creator's keys), so that one
    round trip can read them all."""
    key = (experiment_id, _prompt_pattern(agent_type), private_id, stage_id)
    return (profile_path(experiment_id, agent_type, private_id), *_read_with_profile.of(key))


def _prompt_pattern(agent_type: str) -> str:
    if agent_type == "mediator":
        return paths.AGENT_MEDIATOR_PROMPT
    return paths.AGENT_PARTICIPANT_PROMPT


def mediator_path(experiment_id: str, mediator_id: str) -> str:
    return paths.build(paths.MEDIATOR, experimentId=experiment_id, mediatorId=mediator_id)


def _prompt_doc(
    pattern: str,
    experiment_id: str,
    agent: ParticipantProfile | MediatorProfile,
    stage: StageConfig,
    read_with: Sequence[str] = (),
) -> tuple[PromptConfig | None, str | None]:
    """The persona's prompt for the stage; ``read_with``: documents the caller reads next, read
    in the same round trip (``reads.batch``), unless read ahead with the profile already
    (``documents_of``). A read of the same prompt adds to the guess: the fan-out and the quiet
    and conductor paths read a prompt without the keys a turn reads with it."""
    persona_id = agent.agent_config.agent_id if agent.agent_config else ""
    if not persona_id:
        return None, None
    path = paths.build(pattern, experimentId=experiment_id, personaId=persona_id, stageId=stage.id)
    reads.batch([path, *read_with])
    _read_with_profile.remember(
        (experiment_id, pattern, agent.private_id, stage.id), [path, *read_with]
    )
    data = store.snapshot_data(path)
    if data is None:
        return None, None
    return parse_document(PromptConfig, path, {"id": stage.id, "type": stage.kind, **data}), path


def participant_agent(
    experiment_id: str, private_id: str, stage: StageConfig, read_with: Sequence[str] = ()
) -> ChatAgent | None:
    """The agent participant, with its persona's chat prompt or the default; None if human or
    an inactive persona (it never chats, whatever asked for its turn)."""
    profile = store.read(ParticipantProfile, store.participant_path(experiment_id, private_id))
    if not profile.is_agent or roles.is_inactive(profile):
        return None
    pattern = paths.AGENT_PARTICIPANT_PROMPT
    config, path = _prompt_doc(pattern, experiment_id, profile, stage, read_with)
    return ChatAgent("participant", profile, config or default_participant_prompt(stage), path)


def mediator_agent(
    experiment_id: str, private_id: str, stage: StageConfig, read_with: Sequence[str] = ()
) -> ChatAgent | None:
    """The mediator, if it is active and its persona has a prompt for this stage (mediators
    have no default prompt: without one they are silent, as in DL)."""
    profile = store.read(MediatorProfile, mediator_path(experiment_id, private_id))
    if profile.current_status != MediatorStatus.ACTIVE or profile.agent_config is None:
        return None
    if profile.active_stage_map.get(stage.id) is False:
        return None  # swapped out of this stage (docs/AGENTS.md, treatment roles)
    pattern = paths.AGENT_MEDIATOR_PROMPT
    config, path = _prompt_doc(pattern, experiment_id, profile, stage, read_with)
    return ChatAgent("mediator", profile, config, path) if config else None


def load(
    experiment_id: str,
    agent_type: str,
    private_id: str,
    stage: StageConfig,
    read_with: Sequence[str] = (),
) -> ChatAgent | None:
    """The chat agent; ``read_with``: documents read with its prompt (see ``_prompt_doc``)."""
    if agent_type == "mediator":
        return mediator_agent(experiment_id, private_id, stage, read_with)
    return participant_agent(experiment_id, private_id, stage, read_with)


def profile_path(experiment_id: str, agent_type: str, private_id: str) -> str:
    """Where the agent's profile is."""
    if agent_type == "mediator":
        return mediator_path(experiment_id, private_id)
    return store.participant_path(experiment_id, private_id)


class Present(NamedTuple):
    """Private ids of the participants IN_PROGRESS at a stage in a cohort, by kind."""

    agents: list[str]
    humans: list[str]


def present_at(experiment_id: str, cohort_id: str, stage_id: str) -> Present:
    """The agent and the human participants IN_PROGRESS at the stage in the cohort, in one
    query (a caller that needs both reads them once)."""
    query = (
        store.participants(experiment_id)
        .where(filter=firestore.FieldFilter("currentCohortId", "==", cohort_id))
        .where(filter=firestore.FieldFilter("currentStageId", "==", stage_id))
        .where(
            filter=firestore.FieldFilter("currentStatus", "==", ParticipantStatus.IN_PROGRESS.value)
        )
    )
    present = Present([], [])
    for snap in query.select(["agentConfig", "isObserver"]).get():
        data = snap.to_dict() or {}
        if not roles.takes_part(data):
            continue  # an observer watches, an inactive persona never chats
        (present.agents if data.get("agentConfig") else present.humans).append(snap.id)
    return Present(sorted(present.agents), sorted(present.humans))


def participants_at(
    experiment_id: str, cohort_id: str, stage_id: str, *, humans: bool = False
) -> list[str]:
    """Private ids of the agent participants (or, with ``humans``, the human ones)
    IN_PROGRESS at the stage in the cohort."""
    present = present_at(experiment_id, cohort_id, stage_id)
    return present.humans if humans else present.agents


def active_mediators(experiment_id: str, cohort_id: str) -> list[MediatorProfile]:
    """The cohort's active mediators (a broken profile is recorded and left out)."""
    col = store.db().collection(paths.collection_of(paths.MEDIATOR, experimentId=experiment_id))
    query = col.where(filter=firestore.FieldFilter("currentCohortId", "==", cohort_id)).where(
        filter=firestore.FieldFilter("currentStatus", "==", MediatorStatus.ACTIVE.value)
    )
    return list(documents.valid(query.get(), _parse_mediator, id_field="privateId"))


def mediators_of(
    experiment_id: str,
    cohort_id: str,
    stage: StageConfig,
    active: Sequence[MediatorProfile] | None = None,
) -> list[str]:
    """Private ids of the cohort's active mediators whose persona has a prompt for the stage;
    ``active``: those mediators, read already (``active_mediators``)."""
    ids, prompts = [], []
    if active is None:
        active = active_mediators(experiment_id, cohort_id)
    for mediator in active:
        if mediator.active_stage_map.get(stage.id) is False:
            continue  # swapped out of this stage
        try:
            prompt, path = _prompt_doc(paths.AGENT_MEDIATOR_PROMPT, experiment_id, mediator, stage)
        except DocumentError as error:  # one broken mediator silences only itself
            errors.record_error(errors.current_function(), error)
            continue
        if prompt is not None and path is not None:
            ids.append(mediator.private_id)
            prompts.append(path)
    _mediator_prompts.remember((experiment_id, cohort_id, stage.id), prompts, add=False)
    return sorted(ids)


def mediator_documents(experiment_id: str, cohort_id: str, stage_id: str) -> tuple[str, ...]:
    """The prompts ``mediators_of`` will read for the stage, as far as this instance knows."""
    return _mediator_prompts.of((experiment_id, cohort_id, stage_id))


def _parse_mediator(path: str, data: dict[str, Any]) -> MediatorProfile:
    return parse_document(MediatorProfile, path, data)
