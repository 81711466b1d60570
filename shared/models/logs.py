"""Model call logs, experimenter data (API keys) and the backend's error records."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from shared.models._base import DocModel, Timestamp

TRUNCATED = "…[truncated: {dropped:,} more bytes]"
"""The marker at the end of a text cut to fit a Firestore document (1 MiB)."""


def cut_to_bytes(text: str, limit: int) -> str:
    """``text`` within ``limit`` UTF-8 bytes, marked when cut: a log or record too long for
    Firestore must be written shortened, never fail the write (and with it the function)."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    return kept + TRUNCATED.format(dropped=len(data) - len(kept.encode("utf-8", "surrogatepass")))


def _bounded(limit: int) -> AfterValidator:
    return AfterValidator(lambda v: v if v is None else cut_to_bytes(v, limit))


def _bounded_json(value: Any, limit: int = 100_000) -> Any:
    """A parsed reply too large to store as a map is kept as (cut) JSON text."""
    if value is None or isinstance(value, bool | int | float):
        return value
    text = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text.encode()) <= limit else cut_to_bytes(text, limit)


# Byte budgets per field: together well under Firestore's 1 MiB document limit.
PromptText = Annotated[str, _bounded(400_000)]
RawText = Annotated[str | None, _bounded(200_000)]
ReplyText = Annotated[str | None, _bounded(150_000)]
ShortText = Annotated[str | None, _bounded(20_000)]


class TokenUsage(DocModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ModelResponse(DocModel):
    status: str = "OK"
    raw_response: RawText = None
    text: ReplyText = None
    parsed_response: Annotated[Any, AfterValidator(_bounded_json)] = None
    error_message: ShortText = None
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
    prompt: PromptText = ""
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
    field: Annotated[str, _bounded(2_000)]
    reason: Annotated[str, _bounded(20_000)]
    severity: str = "error"
    event_id: str = ""
    occurrences: int = 1
    first_seen: Timestamp | None = None
    last_seen: Timestamp | None = None
    ended_after_attempts: int | None = None
    """Set when the error ended a unit of work: the attempts it had."""
    resolved_at: Timestamp | None = None
    """Set when the backend saw the cause fixed (the agent it stopped moved on); cleared when
    the error happens again."""
