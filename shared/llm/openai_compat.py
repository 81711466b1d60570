"""OPENAI and OLLAMA through the OpenAI-compatible Chat Completions API (plain httpx).

One small HTTP client serves OpenAI, any OpenAI-compatible server (vLLM, LM Studio, proxies: the
experimenter's ``openAIApiKey.baseUrl``) and Ollama's ``/v1`` endpoint, mapped the way Deliberate
Lab's ai-sdk.api.ts maps ModelGenerationConfig.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import httpx

from shared.llm.base import ModelError, ModelReply, ModelRequest, Usage, protocol_fault
from shared.llm.retry import error_for_status

Flavour = Literal["openai", "ollama"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
OLLAMA_URL = "http://127.0.0.1:11434"
DEFAULT_TIMEOUT_S = 300.0
"""Per-call timeout when the request names none (tools, local runs)."""
MAX_RAW_CHARS = 32_000
"""Raw responses are logged to Firestore (1 MiB documents); longer ones are cut."""

_EFFORTS = {"low", "medium", "high"}
"""DL's mapReasoningLevelToEffort: 'off' and 'minimal' leave the provider default."""
_OLLAMA_SUFFIXES = ("/v1/chat/completions", "/api/chat", "/api/generate", "/api", "/v1")


def ollama_base_url(url: str) -> str:
    """Ollama's OpenAI-compatible base from what experimenters enter: the server root, or DL's
    native-API forms (``.../api``, ``.../api/chat``)."""
    root = url.strip().rstrip("/")
    for suffix in _OLLAMA_SUFFIXES:
        if root.endswith(suffix):
            root = root[: -len(suffix)]
            break
    return f"{root}/v1"


def chat_body(request: ModelRequest, flavour: Flavour) -> dict[str, Any]:
    """The Chat Completions request; unset ModelGenerationConfig keys are not sent."""
    cfg = request.generation_config
    body: dict[str, Any] = {
        "model": request.model_name,
        "messages": [{"role": m.role, "content": m.text} for m in request.messages],
    }
    if request.response_schema is not None:
        # strict=false: OpenAI's strict mode rejects schemas without additionalProperties=false
        # and all-required properties; our stage schemas are validated on our side anyway.
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": request.response_schema, "strict": False},
        }
    if cfg.get("temperature") is not None:
        body["temperature"] = cfg["temperature"]
    if cfg.get("topP") is not None:
        body["top_p"] = cfg["topP"]
    if cfg.get("maxTokens") is not None:
        # OpenAI's reasoning models (DL's default gpt-5-mini) reject max_tokens; Ollama documents
        # only max_tokens.
        field = "max_completion_tokens" if flavour == "openai" else "max_tokens"
        body[field] = cfg["maxTokens"]
    if cfg.get("stopSequences"):
        body["stop"] = list(cfg["stopSequences"])
    if cfg.get("frequencyPenalty"):
        body["frequency_penalty"] = cfg["frequencyPenalty"]
    if cfg.get("presencePenalty"):
        body["presence_penalty"] = cfg["presencePenalty"]
    if flavour == "openai" and cfg.get("reasoningLevel") in _EFFORTS:
        body["reasoning_effort"] = cfg["reasoningLevel"]
    return body


def _cut(text: str) -> str:
    return text if len(text) <= MAX_RAW_CHARS else text[:MAX_RAW_CHARS] + "…[truncated]"


def _http_error(response: httpx.Response) -> ModelError:
    raw = _cut(response.text)
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict):
        message, code = str(error.get("message") or raw), error.get("code")
    else:
        message, code = (str(error) if error else raw[:500]) or response.reason_phrase, None
    mapped = error_for_status(response.status_code, message, raw)
    if code == "insufficient_quota":
        mapped.retryable = False  # out of credit: waiting does not help
    return mapped


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
        raise protocol_fault(f"an error body with HTTP 200: {message}", _cut(body))
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelError(
            "PROVIDER_UNAVAILABLE_ERROR", "malformed response body", True, 200, _cut(body)
        )
    assert isinstance(data, dict)
    return data, choices[0]


def parse_response(body: str) -> ModelReply:
    """A 200 Chat Completions body as a reply; refusals and empty truncations as ModelErrors."""
    data, choice = _completion(body)
    raw = _cut(body)
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
    if finish == "length" and not text.strip():
        raise ModelError("LENGTH_ERROR", "generation stopped at maxTokens with no text", raw=raw)
    return ModelReply(text=text, usage=usage, raw=raw)


class OpenAICompatClient:
    """ModelClient for OPENAI (``flavour="openai"``) or OLLAMA (``flavour="ollama"``).

    ``credentials.base_url`` is the API base (OpenAI: ``.../v1``; Ollama: the server URL);
    ``transport`` lets tests swap the network out."""

    def __init__(
        self, flavour: Flavour = "openai", transport: httpx.BaseTransport | None = None
    ) -> None:
        self.flavour = flavour
        self._http = httpx.Client(transport=transport, follow_redirects=False)

    def url(self, base_url: str | None) -> str:
        if self.flavour == "ollama":
            base = ollama_base_url(base_url or OLLAMA_URL)
        else:
            base = (base_url or OPENAI_BASE_URL).rstrip("/")
        return f"{base}/chat/completions"

    def generate(self, request: ModelRequest) -> ModelReply:
        creds = request.credentials
        timeout_s = DEFAULT_TIMEOUT_S if request.timeout_s is None else request.timeout_s
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if creds.api_key:
            headers["Authorization"] = f"Bearer {creds.api_key}"
        try:
            response = self._http.post(
                self.url(creds.base_url),
                json=chat_body(request, self.flavour),
                headers=headers,
                timeout=max(timeout_s, 0.001),
            )
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise ModelError("CONFIG_ERROR", f"invalid base URL: {exc}") from exc
        except httpx.TimeoutException as exc:
            raise ModelError(
                "PROVIDER_UNAVAILABLE_ERROR", f"no reply within {timeout_s:.1f}s", True
            ) from exc
        except httpx.TransportError as exc:
            raise ModelError(
                "PROVIDER_UNAVAILABLE_ERROR", f"connection failed: {exc}", True
            ) from exc
        if response.status_code != 200:
            raise _http_error(response)
        return parse_response(response.text)
