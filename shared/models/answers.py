"""Stage answers (``participants/{p}/stageData/{s}``) and public stage data per kind."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from shared.models._base import DocModel, Timestamp


class TextAnswer(DocModel):
    id: str
    kind: Literal["text"] = "text"
    answer: str


class CheckAnswer(DocModel):
    id: str
    kind: Literal["check"] = "check"
    is_checked: bool


class MultipleChoiceAnswer(DocModel):
    id: str
    kind: Literal["mc"] = "mc"
    choice_id: str


class ScaleAnswer(DocModel):
    id: str
    kind: Literal["scale"] = "scale"
    value: int


SurveyAnswer = Annotated[
    TextAnswer | CheckAnswer | MultipleChoiceAnswer | ScaleAnswer, Field(discriminator="kind")
]


class SurveyStageAnswer(DocModel):
    id: str
    kind: Literal["survey"] = "survey"
    answer_map: dict[str, SurveyAnswer] = {}


class SurveyPerParticipantStageAnswer(DocModel):
    id: str
    kind: Literal["surveyPerParticipant"] = "surveyPerParticipant"
    # question id -> participant public id -> answer
    answer_map: dict[str, dict[str, SurveyAnswer]] = {}


class RankingStageAnswer(DocModel):
    id: str
    kind: Literal["ranking"] = "ranking"
    ranking_list: list[str] = []


StageAnswer = SurveyStageAnswer | SurveyPerParticipantStageAnswer | RankingStageAnswer


class SurveyPublicData(DocModel):
    id: str
    kind: Literal["survey"] = "survey"
    participant_answer_map: dict[str, dict[str, SurveyAnswer]] = {}


class RankingPublicData(DocModel):
    id: str
    kind: Literal["ranking"] = "ranking"
    winner_id: str = ""
    participant_answer_map: dict[str, list[str]] = {}


class ChatPublicData(DocModel):
    """A group chat's shared state (DL's ChatStagePublicData). Turn-based chats add DL's turn
    fields and our ``turnMessageId``: the message that last moved the turn, so a duplicate
    delivery of it does not move the turn again. A private chat has none; its start is its
    first message."""

    model_config = ConfigDict(frozen=True)  # read as a snapshot; writes go by field path

    id: str
    kind: Literal["chat"] = "chat"
    current_discussion_id: str | None = None
    discussion_timestamp_map: dict[str, dict[str, Any]] = {}
    discussion_start_timestamp: Timestamp | None = None
    discussion_checkpoint_timestamp: Timestamp | None = None
    discussion_end_timestamp: Timestamp | None = None
    turn_order: list[str] = []
    current_turn_participant_id: str | None = None
    cycle_index: int = 0
    turn_message_id: str | None = None


class RolePublicData(DocModel):
    id: str
    kind: Literal["role"] = "role"
    participant_map: dict[str, str] = {}


class AssetAllocationPublicData(DocModel):
    id: str
    kind: Literal["assetAllocation"] = "assetAllocation"
    participant_allocations: dict[str, Any] = {}
