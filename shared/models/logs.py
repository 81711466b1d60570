"""Model call logs, experimenter data (API keys) and the backend's error records."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from shared.models._base import DocModel, Timestamp


class TokenUsage(DocModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ModelResponse(DocModel):
    status: str = "OK"
    raw_response: str | None = None
    text: str | None = None
    parsed_response: Any = None
    error_message: str | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)


class ModelLogEntry(DocModel):
    """One model call attempt: ``experiments/{e}/logs/{id}`` (DL fields plus our accounting)."""

    id: str
    type: str = "model"
    experiment_id: str
    cohort_id: str = ""
    participant_id: str = ""
    stage_id: str = ""
    public_id: str = ""
    private_id: str = ""
    agent_id: str = ""
    description: str = ""
    prompt: str = ""
    response: ModelResponse = Field(default_factory=ModelResponse)
    api_type: str = ""
    model_name: str = ""
    attempt: int = 1
    latency_ms: float = 0
    created_timestamp: Timestamp | None = None
    query_timestamp: Timestamp | None = None
    response_timestamp: Timestamp | None = None


class ExperimenterData(DocModel):
    id: str
    email: str = ""
    api_keys: dict[str, Any] = {}
    viewed_experiments: list[str] = []


class ErrorRecord(DocModel):
    """Why the backend could not act on a document: ``experiments/{e}/errors/{id}``."""

    id: str
    function: str
    document: str
    field: str
    reason: str
    severity: str = "error"
    event_id: str = ""
    occurrences: int = 1
    first_seen: Timestamp | None = None
    last_seen: Timestamp | None = None
