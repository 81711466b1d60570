"""Pydantic models for every Firestore document, with Deliberate Lab's camelCase field names."""

from shared.models._base import DocModel, DocumentError, Timestamp, now, parse_document
from shared.models.agent import (
    AgentChatSettings,
    AgentPersona,
    ProfileBase,
    PromptConfig,
    StructuredOutputConfig,
    StructuredOutputSchema,
)
from shared.models.answers import (
    AssetAllocationPublicData,
    ChatPublicData,
    CheckAnswer,
    MultipleChoiceAnswer,
    RankingPublicData,
    RankingStageAnswer,
    RolePublicData,
    ScaleAnswer,
    StageAnswer,
    SurveyAnswer,
    SurveyPerParticipantStageAnswer,
    SurveyPublicData,
    SurveyStageAnswer,
    TextAnswer,
)
from shared.models.chat import ChatMessage, MediatorProfile, MediatorStatus, UserType
from shared.models.experiment import (
    CohortConfig,
    CohortParticipantConfig,
    Experiment,
    Metadata,
)
from shared.models.logs import (
    ErrorRecord,
    ExperimenterData,
    ModelLogEntry,
    ModelResponse,
    TokenUsage,
)
from shared.models.participant import (
    ACTIVE_STATUSES,
    AgentModelSettings,
    ApiType,
    ParticipantProfile,
    ParticipantStatus,
    ProfileAgentConfig,
    ProgressTimestamps,
)
from shared.models.stages import (
    KNOWN_KINDS,
    AssetAllocationStage,
    BaseStage,
    ChatStage,
    CheckQuestion,
    ConversationStage,
    InfoStage,
    MultipleChoiceQuestion,
    OtherStage,
    PrivateChatStage,
    ProfileStage,
    ProfileType,
    RankingStage,
    RoleStage,
    ScaleQuestion,
    StageConfig,
    StageKind,
    StockInfoStage,
    SurveyPerParticipantStage,
    SurveyQuestion,
    SurveyStage,
    TextQuestion,
    TosStage,
    TransferStage,
    parse_stage,
)

__all__ = [name for name in dir() if not name.startswith("_")]
