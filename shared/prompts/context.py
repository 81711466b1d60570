"""Everything a prompt is built from, gathered by the caller (no Firestore access here)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from shared.models import (
    ChatMessage,
    CohortConfig,
    Experiment,
    MediatorProfile,
    ParticipantProfile,
    StageConfig,
    StageKind,
)
from shared.prompts.constants import PROFILE_SET_BY_STAGE_ID_MARKER

Agent = ParticipantProfile | MediatorProfile


@dataclasses.dataclass(frozen=True)
class PromptContext:
    """The documents one prompt needs.

    ``answers`` is keyed like the agent's own reads: for a participant, stage id -> its
    stageData document; for a mediator, participant publicId -> stage id -> stageData.
    ``context_participant_ids`` is DL's contextParticipantIds (public ids): whose answers and
    private chat the prompt shows; by default the agent itself, or every participant for a
    mediator. ``private_messages`` holds the one private conversation the prompt is about.
    """

    experiment: Experiment
    cohort: CohortConfig | None
    agent: Agent
    stage: StageConfig
    stages: Mapping[str, StageConfig]
    answers: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    public_data: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    chat_messages: Mapping[str, Sequence[ChatMessage]] = dataclasses.field(default_factory=dict)
    private_messages: Mapping[str, Sequence[ChatMessage]] = dataclasses.field(default_factory=dict)
    participants: Sequence[ParticipantProfile] = ()
    is_turn_based: bool = False
    context_participant_ids: Sequence[str] | None = None

    @property
    def agent_is_participant(self) -> bool:
        return isinstance(self.agent, ParticipantProfile)

    def answer_participants(self) -> list[ParticipantProfile]:
        """Whose answers the prompt may show (DL's answerParticipants)."""
        if self.context_participant_ids:
            by_id = {p.public_id: p for p in self.participants}
            if isinstance(self.agent, ParticipantProfile):
                by_id.setdefault(self.agent.public_id, self.agent)
            return [by_id[pid] for pid in self.context_participant_ids if pid in by_id]
        if isinstance(self.agent, ParticipantProfile):
            return [self.agent]
        return list(self.participants)

    def answer_of(self, participant: ParticipantProfile, stage_id: str) -> dict[str, Any] | None:
        """``participant``'s stageData for ``stage_id``, if the caller gathered it."""
        if isinstance(self.agent, ParticipantProfile):
            if participant.public_id != self.agent.public_id:
                return None
            answer = self.answers.get(stage_id)
        else:
            answer = (self.answers.get(participant.public_id) or {}).get(stage_id)
        return answer if isinstance(answer, dict) else None

    def variable_participant(self) -> ParticipantProfile | None:
        """Whose variables and seed apply: the agent participant itself, or the one participant a
        mediator talks to in a private chat (DL's participantForVariables)."""
        if isinstance(self.agent, ParticipantProfile):
            return self.agent
        if self.stage.kind == StageKind.PRIVATE_CHAT:
            partners = self.answer_participants()
            return partners[0] if len(partners) == 1 else None
        return None


def profile_set_id(stage_id: str) -> str:
    """DL's legacy hack: a stage id naming a profile set shows that anonymous profile."""
    lowered = stage_id.lower()
    return next((s for m, s in PROFILE_SET_BY_STAGE_ID_MARKER.items() if m in lowered), "")


MAX_NAME_SHOWN = 200
"""Of a name (an avatar, pronouns) shown to another participant's prompt: one participant's
1 MB name must not push everyone else's prompts over the model's limit (issue 28 row 6). Its
owner's own prompt shows it whole, and fails on it (``functions.agents.prompting``)."""


def bounded(text: str, limit: int) -> str:
    """``text``, or its start with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut: {len(text) - limit:,} more characters]"


def display_name(
    profile: ParticipantProfile,
    set_id: str = "",
    *,
    avatar: bool = True,
    pronouns: bool = False,
    limit: int | None = MAX_NAME_SHOWN,
) -> str:
    """DL's getParticipantDisplayName: ``[avatar ]name[ (pronouns)]``, else the public id; each
    part ``bounded`` by ``limit`` (None: whole, for the agent's own profile)."""
    anonymous = profile.anonymous_profiles.get(set_id) if set_id else None
    source = anonymous if isinstance(anonymous, dict) else {}
    name = source.get("name") if set_id else profile.name
    icon = source.get("avatar") if set_id else profile.avatar
    if not name:
        return profile.public_id
    cut = (lambda text: text) if limit is None else (lambda text: bounded(str(text), limit))
    prefix = f"{cut(icon)} " if avatar and icon else ""
    suffix = f" ({cut(profile.pronouns)})" if pronouns and profile.pronouns else ""
    return f"{prefix}{cut(name)}{suffix}"


def shown_name(profile: ParticipantProfile) -> str:
    """``name (publicId)`` of another participant, the name bounded (``MAX_NAME_SHOWN``)."""
    return f"{bounded(profile.name or profile.public_id, MAX_NAME_SHOWN)} ({profile.public_id})"
