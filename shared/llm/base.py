"""Provider-neutral request, reply and error types; real providers implement ModelClient."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol


@dataclasses.dataclass(frozen=True)
class ModelRequest:
    prompt: str
    response_schema: dict[str, Any] | None
    """JSON Schema the reply must satisfy (None for free text)."""
    model_name: str
    seed: str
    """Stable per agent and stage, so offline runs are reproducible."""
    generation_config: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclasses.dataclass(frozen=True)
class ModelReply:
    text: str
    usage: Usage
    raw: str | None = None


class ModelError(Exception):
    """A failed call. ``status`` follows Deliberate Lab's ModelResponseStatus names."""

    def __init__(self, status: str, message: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class ModelClient(Protocol):
    def generate(self, request: ModelRequest) -> ModelReply: ...


def estimate_tokens(text: str) -> int:
    """About four characters a token, the usual rule of thumb for English text."""
    return max(1, (len(text) + 3) // 4) if text else 0
