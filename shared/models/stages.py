"""Stage configs (``experiments/{e}/stages/{s}``) by kind, as in DL's utils/src/stages."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from shared.models._base import Count, DocModel, Positive, parse_document


class StageKind(StrEnum):
    INFO = "info"
    TOS = "tos"
    PROFILE = "profile"
    CHAT = "chat"
    CHIP = "chip"
    COMPREHENSION = "comprehension"
    FLIPCARD = "flipcard"
    RANKING = "ranking"
    PAYOUT = "payout"
    PRIVATE_CHAT = "privateChat"
    REVEAL = "reveal"
    SALESPERSON = "salesperson"
    STOCKINFO = "stockinfo"
    ASSET_ALLOCATION = "assetAllocation"
    MULTI_ASSET_ALLOCATION = "multiAssetAllocation"
    ROLE = "role"
    NEGOTIATION_PROFILE = "negotiationProfile"
    NEGOTIATION_PAYOUT = "negotiationPayout"
    SURVEY = "survey"
    SURVEY_PER_PARTICIPANT = "surveyPerParticipant"
    TRANSFER = "transfer"


class StageText(DocModel):
    primary_text: str = ""
    info_text: str = ""
    help_text: str = ""


class StageProgress(DocModel):
    min_participants: Count = 0
    wait_for_all_participants: bool = False
    show_participant_progress: bool = True


class BaseStage(DocModel):
    id: str
    kind: str
    name: str = ""
    descriptions: StageText = Field(default_factory=StageText)
    progress: StageProgress = Field(default_factory=StageProgress)


class TosStage(BaseStage):
    kind: Literal["tos"] = "tos"
    tos_lines: list[str] = []


class InfoStage(BaseStage):
    kind: Literal["info"] = "info"
    info_lines: list[str] = []
    youtube_video_id: str | None = None


class ProfileType(StrEnum):
    DEFAULT = "DEFAULT"
    DEFAULT_GENDERED = "DEFAULT_GENDERED"
    ANONYMOUS_ANIMAL = "ANONYMOUS_ANIMAL"
    ANONYMOUS_PARTICIPANT = "ANONYMOUS_PARTICIPANT"


class ProfileStage(BaseStage):
    kind: Literal["profile"] = "profile"
    profile_type: ProfileType = ProfileType.DEFAULT


class TextQuestion(DocModel):
    id: str
    kind: Literal["text"] = "text"
    question_title: str = ""
    min_char_count: Count | None = None
    max_char_count: Count | None = None

    @field_validator("max_char_count")
    @classmethod
    def _not_below_min(cls, value: int | None, info: ValidationInfo) -> int | None:
        low = info.data.get("min_char_count")
        if value is not None and low is not None and value < low:
            raise ValueError(f"maxCharCount {value} is below minCharCount {low}")
        return value


class CheckQuestion(DocModel):
    id: str
    kind: Literal["check"] = "check"
    question_title: str = ""
    is_required: bool = False


class MultipleChoiceItem(DocModel):
    id: str
    image_id: str = ""
    text: str = ""


class MultipleChoiceQuestion(DocModel):
    id: str
    kind: Literal["mc"] = "mc"
    question_title: str = ""
    options: list[MultipleChoiceItem] = Field(min_length=1)
    correct_answer_id: str | None = None


class ScaleQuestion(DocModel):
    id: str
    kind: Literal["scale"] = "scale"
    question_title: str = ""
    lower_value: int = 0
    upper_value: int = 10
    lower_text: str = ""
    upper_text: str = ""
    middle_text: str | None = None
    step_size: Positive | None = None

    @field_validator("upper_value")
    @classmethod
    def _not_below_lower(cls, value: int, info: ValidationInfo) -> int:
        """Checked here: an inverted scale has no valid answer, so no model could ever answer."""
        low = info.data.get("lower_value")
        if low is not None and value < low:
            raise ValueError(f"upperValue {value} is below lowerValue {low}")
        return value


SurveyQuestion = Annotated[
    TextQuestion | CheckQuestion | MultipleChoiceQuestion | ScaleQuestion,
    Field(discriminator="kind"),
]


class SurveyStage(BaseStage):
    kind: Literal["survey"] = "survey"
    questions: list[SurveyQuestion] = []


class SurveyPerParticipantStage(BaseStage):
    kind: Literal["surveyPerParticipant"] = "surveyPerParticipant"
    questions: list[SurveyQuestion] = []
    enable_self_survey: bool = False


class RankingItem(DocModel):
    id: str
    image_id: str = ""
    text: str = ""


class RankingStage(BaseStage):
    kind: Literal["ranking"] = "ranking"
    ranking_type: Literal["items", "participants"] = "items"
    strategy: Literal["none", "condorcet"] = "none"
    ranking_items: list[RankingItem] = []
    enable_self_voting: bool = False


class ChatDiscussion(DocModel):
    id: str
    type: str = "DEFAULT"
    description: str = ""


class _ChatBase(BaseStage):
    """What group and private chats share."""

    time_limit_in_minutes: Count | None = None
    time_minimum_in_minutes: Count | None = None
    readiness_query: bool = False
    """Ours: after each turn, ask an agent participant whether it is ready to end in a second
    model call (the seed's checkReadyToEndChat) instead of reading the structured
    ``readyToEndChat`` field of its reply."""


class ChatStage(_ChatBase):
    kind: Literal["chat"] = "chat"
    discussions: list[ChatDiscussion] = []
    is_turn_based: bool = False
    enable_reactions_and_replies: bool = False
    election_policy: Literal["race", "claim", "conductor"] = "race"
    """Ours: who answers a message. race (DL): every eligible agent calls its model, the first
    to post wins; claim: agents are asked one at a time in a seeded order; conductor: one
    conductor call picks the agent to ask (functions/chat/conducted.py)."""


class PrivateChatStage(_ChatBase):
    kind: Literal["privateChat"] = "privateChat"
    is_turn_based_chat: bool = True
    min_number_of_turns: Count = 0
    max_number_of_turns: Positive | None = None
    prevent_cancellation: bool = False


ConversationStage = ChatStage | PrivateChatStage


class TransferStage(BaseStage):
    kind: Literal["transfer"] = "transfer"
    enable_timeout: bool = False
    timeout_seconds: float = Field(default=0, ge=0)
    auto_transfer_config: dict[str, Any] | None = None
    treatment_index: int | None = None
    """Deliberate Lab's (PR #1171): the round of the participants' treatment variables from this
    transfer on (``shared/treatment.py``)."""


class Role(DocModel):
    id: str
    name: str = ""
    display_lines: list[str] = []
    min_participants: Count = 0
    max_participants: Count | None = None  # None is unlimited (DL compares `count < null`)


class RoleStage(BaseStage):
    kind: Literal["role"] = "role"
    roles: list[Role] = []


class StockInfoStage(BaseStage):
    kind: Literal["stockinfo"] = "stockinfo"
    stocks: list[dict[str, Any]] = []
    initial_investment: float = 1000
    currency: str = "USD"


class AssetAllocationStage(BaseStage):
    kind: Literal["assetAllocation"] = "assetAllocation"
    stock_config: dict[str, Any] = {}


class OtherStage(BaseStage):
    """Any other kind, kept as is; agents take no action there and advance."""


StageConfig = (
    TosStage
    | InfoStage
    | ProfileStage
    | SurveyStage
    | SurveyPerParticipantStage
    | RankingStage
    | ChatStage
    | PrivateChatStage
    | TransferStage
    | RoleStage
    | StockInfoStage
    | AssetAllocationStage
    | OtherStage
)

STAGE_MODELS: dict[str, type[BaseStage]] = {
    model.model_fields["kind"].default: model
    for model in (
        TosStage,
        InfoStage,
        ProfileStage,
        SurveyStage,
        SurveyPerParticipantStage,
        RankingStage,
        ChatStage,
        PrivateChatStage,
        TransferStage,
        RoleStage,
        StockInfoStage,
        AssetAllocationStage,
    )
}

KNOWN_KINDS = frozenset(kind.value for kind in StageKind)


def parse_stage(path: str, data: dict[str, Any] | None) -> StageConfig:
    """Validate a stage document by its kind; unknown kinds parse as OtherStage."""
    kind = (data or {}).get("kind")
    model = STAGE_MODELS.get(kind, OtherStage) if isinstance(kind, str) else OtherStage
    return parse_document(model, path, data)  # type: ignore[return-value]
