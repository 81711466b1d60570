"""Stage handlers for agent participants: what to do at each stage kind, and how to answer."""

from __future__ import annotations

from shared.models import ProfileStage, ProfileType, StageConfig, StageKind
from shared.stages.base import (
    AgentAction,
    AnswerContext,
    AnswerSpec,
    AnswerValidationError,
    Peer,
)
from shared.stages.profile import ProfileSpec
from shared.stages.ranking import RankingSpec
from shared.stages.survey import SurveyPerParticipantSpec, SurveySpec

ANSWER_SPECS: dict[str, AnswerSpec] = {
    StageKind.SURVEY: SurveySpec(),
    StageKind.SURVEY_PER_PARTICIPANT: SurveyPerParticipantSpec(),
    StageKind.RANKING: RankingSpec(),
    StageKind.PROFILE: ProfileSpec(),
}

_WAIT_KINDS = {StageKind.CHAT, StageKind.PRIVATE_CHAT, StageKind.TRANSFER}
_MODEL_PROFILE_TYPES = {ProfileType.DEFAULT, ProfileType.DEFAULT_GENDERED}


def agent_action(stage: StageConfig) -> AgentAction:
    """Deliberate Lab's getAgentParticipantActionsForStage, as one decision."""
    if stage.kind in _WAIT_KINDS:
        return AgentAction.WAIT
    if isinstance(stage, ProfileStage):
        return (
            AgentAction.ANSWER
            if stage.profile_type in _MODEL_PROFILE_TYPES
            else AgentAction.ADVANCE
        )
    return AgentAction.ANSWER if stage.kind in ANSWER_SPECS else AgentAction.ADVANCE


__all__ = [
    "ANSWER_SPECS",
    "AgentAction",
    "AnswerContext",
    "AnswerSpec",
    "AnswerValidationError",
    "Peer",
    "agent_action",
]
