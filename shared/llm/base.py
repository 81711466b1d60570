"""Provider-neutral request, reply and error types; real providers implement ModelClient."""

from __future__ import annotations

import dataclasses
import urllib.parse
from typing import Any, Literal, Protocol

from shared.errors import WorkError

Role = Literal["user", "assistant", "tool"]


@dataclasses.dataclass(frozen=True)
class ToolSpec:
    """A function the model may call (provider-native tool calling): its name, what it does,
    and its arguments as a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class ToolCall:
    """The model asking to call a tool. ``id`` is the provider's (OpenAI, Anthropic; '' when
    Gemini gives none); ``malformed`` says why the arguments could not be read (the call's
    result is then that error, not a run)."""

    id: str
    name: str
    arguments: dict[str, Any]
    signature: str | None = None
    """An opaque token the provider wants back with the call (Gemini's thoughtSignature)."""
    malformed: str = ""


@dataclasses.dataclass(frozen=True)
class ToolResult:
    """What a tool call came to, sent back to the model (an error is sent as one too)."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclasses.dataclass(frozen=True)
class Message:
    """One turn. An assistant turn may carry tool calls; a ``tool`` turn carries their results
    (each provider encodes both in its own way)."""

    role: Role
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()


@dataclasses.dataclass(frozen=True)
class Credentials:
    """Where and as whom to call a provider; from the experiment creator's experimenterData."""

    api_key: str | None = None
    base_url: str | None = None
    """OpenAI-compatible or Ollama server; for Gemini, an endpoint override (local fakes)."""
    project: str | None = None
    """Vertex AI project (with ``location``), when no API key is used."""
    location: str | None = None
    api_version: str | None = None
    """Azure OpenAI's ``api-version``: set, the OpenAI key and ``base_url`` (the resource's
    endpoint) are Azure's."""


@dataclasses.dataclass(frozen=True)
class ModelRequest:
    prompt: str
    """The first user turn: the rendered structured prompt."""
    response_schema: dict[str, Any] | None
    """JSON Schema the reply must satisfy (None for free text)."""
    model_name: str
    seed: str
    """Stable per agent and stage, so offline runs are reproducible."""
    generation_config: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Deliberate Lab's ModelGenerationConfig (camelCase keys): temperature, maxTokens, topP,
    stopSequences, reasoningLevel, ... Unset keys are not sent."""
    history: tuple[Message, ...] = ()
    """Turns after the prompt, e.g. a rejected reply and the corrective message."""
    credentials: Credentials = dataclasses.field(default_factory=Credentials)
    timeout_s: float | None = None
    """Per-call timeout (the caller bounds it by the function's remaining time)."""
    system: str | None = None
    """Instructions sent as the provider's system prompt (DL's system messages), if any."""
    tools: tuple[ToolSpec, ...] = ()
    """Functions offered to the model; a reply may then be tool calls instead of an answer."""

    @property
    def messages(self) -> tuple[Message, ...]:
        return (Message("user", self.prompt), *self.history)


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
    tool_calls: tuple[ToolCall, ...] = ()
    """The model's tool calls (only when the request offered tools): run them, then ask again."""


class ModelError(WorkError):
    """A failed call. ``status`` follows Deliberate Lab's ModelResponseStatus names:
    AUTHENTICATION_ERROR, QUOTA_ERROR (429), PROVIDER_UNAVAILABLE_ERROR (5xx, timeouts),
    CONFIG_ERROR, REFUSAL_ERROR, LENGTH_ERROR, INTERNAL_ERROR. ``retryable`` says whether trying
    again later can help (429, 5xx, timeouts, connection failures)."""

    def __init__(
        self,
        status: str,
        message: str,
        retryable: bool = False,
        http_status: int | None = None,
        raw: str | None = None,
        field: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.http_status = http_status
        self.raw = raw
        self.field = field
        """The participant field to fix, when the error is about the agent's configuration."""
        self.retry_after_s = retry_after_s
        """How long the provider asked us to wait (its ``retry-after`` header), if it said."""


class ProviderFailing(ModelError):
    """The provider kept failing (outage, rate limit, or a body that is not its protocol: no
    completion in it, an error envelope sent with a 200) until the attempts or the deadline ran
    out. Not the model's wrong answer (a completion whose text is wrong is corrected, see
    ``shared.llm.protocol``): the agent must wait and be retried, never move on without an
    answer because of it."""

    def __init__(self, attempts: int, last: ModelError) -> None:
        super().__init__(
            last.status,  # QUOTA_ERROR or PROVIDER_UNAVAILABLE_ERROR: which kind of failing
            f"provider failing after {attempts} attempt(s): {last}",
            True,
            last.http_status,
            last.raw,
            last.field,
        )
        self.attempts = attempts
        self.last = last


def protocol_fault(message: str, raw: str | None = None) -> ModelError:
    """A 200 body that is not the provider's protocol (no completion in it: an outage page in
    place of the envelope, an error envelope): retryable, like a 5xx, since it holds no model
    answer to correct."""
    return ModelError("PROVIDER_UNAVAILABLE_ERROR", f"not a model reply: {message}", True, 200, raw)


class ModelClient(Protocol):
    def generate(self, request: ModelRequest) -> ModelReply: ...


MAX_RAW_CHARS = 32_000
"""Raw responses are logged to Firestore (1 MiB documents); longer ones are cut."""
DEFAULT_TIMEOUT_S = 300.0
"""Per-call timeout when the request names none (tools, local runs)."""


def timeout_of(request: ModelRequest) -> float:
    """The request's own timeout, else DEFAULT_TIMEOUT_S."""
    return DEFAULT_TIMEOUT_S if request.timeout_s is None else request.timeout_s


def cut_raw(text: str) -> str:
    """A raw response as logged: at most MAX_RAW_CHARS, marked when cut."""
    return text if len(text) <= MAX_RAW_CHARS else text[:MAX_RAW_CHARS] + "…[truncated]"


def check_base_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host; CONFIG_ERROR naming it otherwise (the SDK
    would report a connection failure, which would be retried for ever)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ModelError("CONFIG_ERROR", f"invalid base URL {url!r}: expected http(s)://host/...")
    return url


def estimate_tokens(text: str) -> int:
    """About four characters a token, the usual rule of thumb for English text."""
    return max(1, (len(text) + 3) // 4) if text else 0
