"""OPENAI and OLLAMA through the official ``openai`` SDK (Chat Completions).

One client serves OpenAI, Azure OpenAI (``AzureOpenAI``, when the credentials carry an
``api_version``), any OpenAI-compatible server (vLLM, LM Studio, proxies: the experimenter's
``openAIApiKey.baseUrl``) and Ollama's ``/v1`` endpoint, mapped the way Deliberate Lab's
ai-sdk.api.ts maps ModelGenerationConfig and ``providerOptions.openai``/``.ollama``.

The SDK builds the request, authenticates and raises typed HTTP errors; its own retries are off
(``max_retries=0``) so that every attempt goes through our retry loop, which counts and logs it.
We read the raw 200 body ourselves (``with_raw_response``): the log keeps what the provider sent,
and a compatible server's body that is not a completion is ours to classify.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Literal

import openai

from shared.llm.base import (
    MAX_RAW_CHARS,
    Credentials,
    Message,
    ModelError,
    ModelReply,
    ModelRequest,
    ToolCall,
    ToolSpec,
    Usage,
    check_base_url,
    cut_raw,
    protocol_fault,
    timeout_of,
)
from shared.llm.retry import SdkErrors, error_for_status, retry_after

Flavour = Literal["openai", "ollama"]

__all__ = [
    "MAX_RAW_CHARS",
    "OpenAICompatClient",
    "chat_body",
    "ollama_base_url",
    "parse_response",
    "tool_calls",
]

OPENAI_BASE_URL = "https://api.openai.com/v1"
OLLAMA_URL = "http://127.0.0.1:11434"
NO_KEY = "no-key"
"""The SDK insists on a key; a keyless compatible server gets this, with the Authorization
header then left out of the request."""

_EFFORTS = {"low", "medium", "high"}
"""DL's mapReasoningLevelToEffort: 'off' and 'minimal' leave the provider default."""
_OLLAMA_SUFFIXES = ("/v1/chat/completions", "/api/chat", "/api/generate", "/api", "/v1")
_NOT_OURS = ("OpenAI-Organization", "OpenAI-Project")
"""Headers the SDK would fill from the deployment's environment (OPENAI_ORG_ID, ...): our
Credentials carry neither, and an experimenter's key must not go out with the deployment's org."""


def ollama_base_url(url: str) -> str:
    """Ollama's OpenAI-compatible base from what experimenters enter: the server root, or DL's
    native-API forms (``.../api``, ``.../api/chat``)."""
    root = url.strip().rstrip("/")
    for suffix in _OLLAMA_SUFFIXES:
        if root.endswith(suffix):
            root = root[: -len(suffix)]
            break
    return f"{root}/v1"


def _provider_options(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    """DL's ``providerOptions.{name}`` overrides (an empty dict when unset or malformed)."""
    options = cfg.get("providerOptions")
    section = options.get(name) if isinstance(options, dict) else None
    return section if isinstance(section, dict) else {}


def _reasoning_effort(cfg: dict[str, Any]) -> str | None:
    """DL's buildOpenAIOptions: reasoningLevel as reasoning_effort, providerOptions.openai's
    reasoningEffort over it."""
    effort = _provider_options(cfg, "openai").get("reasoningEffort") or cfg.get("reasoningLevel")
    return effort if effort in _EFFORTS else None


def _max_tokens(cfg: dict[str, Any], flavour: Flavour) -> dict[str, Any]:
    """OpenAI's reasoning models (DL's default gpt-5-mini) reject max_tokens; Ollama documents
    only max_tokens, and takes providerOptions.ollama.numPredict as it when maxTokens is unset."""
    if flavour == "openai":
        most = cfg.get("maxTokens")
        return {} if most is None else {"max_completion_tokens": most}
    most = cfg.get("maxTokens")
    if most is None:
        most = _provider_options(cfg, "ollama").get("numPredict")
    return {} if most is None else {"max_tokens": most}


def _turns(message: Message) -> list[dict[str, Any]]:
    """One neutral turn as Chat Completions messages: an assistant turn's tool calls as
    ``tool_calls`` (arguments as JSON text), each tool result as a ``tool`` message."""
    if message.role == "tool":
        return [
            {"role": "tool", "tool_call_id": r.call_id, "content": r.content}
            for r in message.tool_results
        ]
    turn: dict[str, Any] = {"role": message.role, "content": message.text}
    if message.tool_calls:
        turn["content"] = message.text or None
        turn["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in message.tool_calls
        ]
    return [turn]


def _messages(request: ModelRequest) -> list[dict[str, Any]]:
    system = [{"role": "system", "content": request.system}] if request.system else []
    return [*system, *(turn for m in request.messages for turn in _turns(m))]


def tools_param(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """OpenAI's ``tools``: one ``function`` each (non-strict, like the response format)."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def chat_body(request: ModelRequest, flavour: Flavour) -> dict[str, Any]:
    """The Chat Completions request; unset ModelGenerationConfig keys are not sent."""
    cfg = request.generation_config
    body: dict[str, Any] = {"model": request.model_name, "messages": _messages(request)}
    if request.response_schema is not None:
        # strict=false: OpenAI's strict mode rejects schemas without additionalProperties=false
        # and all-required properties; our stage schemas are validated on our side anyway.
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": request.response_schema, "strict": False},
        }
    if request.tools:
        body["tools"] = tools_param(request.tools)
    if cfg.get("temperature") is not None:
        body["temperature"] = cfg["temperature"]
    if cfg.get("topP") is not None:
        body["top_p"] = cfg["topP"]
    body.update(_max_tokens(cfg, flavour))
    if cfg.get("stopSequences"):
        body["stop"] = list(cfg["stopSequences"])
    if cfg.get("frequencyPenalty"):
        body["frequency_penalty"] = cfg["frequencyPenalty"]
    if cfg.get("presencePenalty"):
        body["presence_penalty"] = cfg["presencePenalty"]
    effort = _reasoning_effort(cfg) if flavour == "openai" else None
    if effort:
        body["reasoning_effort"] = effort
    return body


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts, from some compatible servers
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _completion(body: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The body and its first choice, or a retryable protocol fault: an HTML page, prose, a cut
    stream or an error body sent with a 200 comes from a proxy or an outage, not the model."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        message = str(data["error"].get("message") or "")[:300]
        raise protocol_fault(f"an error body with HTTP 200: {message}", cut_raw(body))
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelError(
            "PROVIDER_UNAVAILABLE_ERROR", "malformed response body", True, 200, cut_raw(body)
        )
    assert isinstance(data, dict)
    return data, choices[0]


def parse_response(body: str) -> ModelReply:
    """A 200 Chat Completions body as a reply; refusals and empty truncations as ModelErrors."""
    data, choice = _completion(body)
    raw = cut_raw(body)
    usage_data = data.get("usage") or {}
    usage = Usage(
        prompt_tokens=int(usage_data.get("prompt_tokens") or 0),
        completion_tokens=int(usage_data.get("completion_tokens") or 0),
    )
    message = choice.get("message") or {}
    text = _text(message.get("content"))
    finish = choice.get("finish_reason")
    if message.get("refusal"):
        raise ModelError("REFUSAL_ERROR", f"model refused: {message['refusal']}", raw=raw)
    if finish == "content_filter":
        raise ModelError("REFUSAL_ERROR", "generation stopped: content_filter", raw=raw)
    calls = tool_calls(message.get("tool_calls"))
    if finish == "length" and not text.strip() and not calls:
        raise ModelError("LENGTH_ERROR", "generation stopped at maxTokens with no text", raw=raw)
    return ModelReply(text=text, usage=usage, raw=raw, tool_calls=calls)


def tool_calls(items: Any) -> tuple[ToolCall, ...]:
    """The message's ``function`` tool calls; arguments that are not a JSON object make the
    call ``malformed`` (the model is told, no tool runs)."""
    calls: list[ToolCall] = []
    for item in items if isinstance(items, list) else []:
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict):
            continue
        text = function.get("arguments") or "{}"
        try:
            arguments = json.loads(text)
        except ValueError:
            arguments = None
        problem = "" if isinstance(arguments, dict) else f"arguments are not a JSON object: {text}"
        calls.append(
            ToolCall(
                id=str(item.get("id") or ""),
                name=str(function.get("name") or ""),
                arguments=arguments if isinstance(arguments, dict) else {},
                malformed=problem[:500],
            )
        )
    return tuple(calls)


@functools.lru_cache(maxsize=32)
def sdk_client(flavour: Flavour, credentials: Credentials) -> openai.OpenAI:
    """One SDK client (and connection pool) per key and endpoint; our retry loop, not the
    SDK's. Every setting is passed, so the SDK takes nothing from the environment."""
    key = credentials.api_key or NO_KEY
    if flavour == "ollama":
        base = ollama_base_url(credentials.base_url or OLLAMA_URL)
        return openai.OpenAI(api_key=key, base_url=check_base_url(base), max_retries=0)
    if credentials.api_version:
        if not credentials.base_url:
            raise ModelError("CONFIG_ERROR", "Azure OpenAI needs its endpoint as the base URL")
        return openai.AzureOpenAI(
            api_key=key,
            azure_endpoint=check_base_url(credentials.base_url),
            api_version=credentials.api_version,
            max_retries=0,
        )
    base = check_base_url((credentials.base_url or OPENAI_BASE_URL).rstrip("/"))
    return openai.OpenAI(api_key=key, base_url=base, max_retries=0)


def _headers(credentials: Credentials) -> dict[str, Any]:
    left_out: dict[str, Any] = dict.fromkeys(_NOT_OURS, openai.omit)
    if not credentials.api_key:
        left_out["Authorization"] = openai.omit
    return left_out


def _status_error(exc: openai.APIStatusError) -> ModelError:
    raw = cut_raw(exc.response.text)
    body = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str) or not message:
        message = str(body)[:500] if body else (raw[:500] or exc.response.reason_phrase)
    mapped = error_for_status(exc.status_code, message, raw, retry_after(exc.response.headers))
    if exc.code == "insufficient_quota":
        mapped.retryable = False  # out of credit: waiting does not help
        mapped.retry_after_s = None
    return mapped


_ERRORS = SdkErrors(
    openai.APIStatusError,
    _status_error,
    openai.APITimeoutError,
    openai.APIConnectionError,
    (openai.OpenAIError, ValueError),
)


class OpenAICompatClient:
    """ModelClient for OPENAI (``flavour="openai"``: OpenAI, Azure OpenAI, compatible servers)
    or OLLAMA (``flavour="ollama"``).

    ``credentials.base_url`` is the API base (OpenAI: ``.../v1``; Azure: the resource endpoint;
    Ollama: the server URL)."""

    def __init__(self, flavour: Flavour = "openai") -> None:
        self.flavour: Flavour = flavour

    def generate(self, request: ModelRequest) -> ModelReply:
        timeout_s = timeout_of(request)
        body = chat_body(request, self.flavour)
        client = sdk_client(self.flavour, request.credentials)
        try:
            response = client.chat.completions.with_raw_response.create(
                **body,
                timeout=max(timeout_s, 0.001),
                extra_headers=_headers(request.credentials),
            )
            text = response.text
        except Exception as exc:
            raise _ERRORS.model_error(exc, timeout_s) from exc
        return parse_response(text)
