"""GEMINI and VERTEX_AI through google-genai, mapped the way Deliberate Lab's ai-sdk.api.ts does.

We ask the SDK for the raw HTTP body (``should_return_http_response``) and read the REST JSON
ourselves: the log keeps exactly what the provider sent (sanitized like DL's
sanitizeRawResponseForLogging), and a malformed body is ours to classify. The SDK still builds the
request, authenticates (API key, or Vertex application default credentials) and maps HTTP errors.
"""

from __future__ import annotations

import base64
import functools
import json
from typing import Any

import google.auth.credentials
import google.auth.exceptions
import httpx
import requests
from google import genai
from google.genai import errors, types

from shared.llm.base import (
    Credentials,
    Message,
    ModelError,
    ModelReply,
    ModelRequest,
    ToolCall,
    ToolSpec,
    Usage,
    cut_raw,
    protocol_fault,
    timeout_of,
)
from shared.llm.retry import error_for_status

_SAFETY_CATEGORIES = (
    types.HarmCategory.HARM_CATEGORY_HARASSMENT,
    types.HarmCategory.HARM_CATEGORY_DANGEROUS_CONTENT,
    types.HarmCategory.HARM_CATEGORY_HATE_SPEECH,
    types.HarmCategory.HARM_CATEGORY_SEXUALLY_EXPLICIT,
)
_REFUSAL_FINISH = {
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
}
_ROLES = {"user": "user", "assistant": "model", "tool": "user"}
_LEVELS = {
    "minimal": types.ThinkingLevel.MINIMAL,
    "low": types.ThinkingLevel.LOW,
    "medium": types.ThinkingLevel.MEDIUM,
    "high": types.ThinkingLevel.HIGH,
}
"""DL's reasoningLevel names; google-genai enums accept unknown values with a mere warning."""


def _is_set(value: Any) -> bool:
    return value is not None


def thinking_config(config: dict[str, Any], model_name: str) -> types.ThinkingConfig | None:
    """DL's buildGoogleOptions: a level (Gemini 3) and/or a positive budget (Gemini 2.5) turn
    thinking on with thoughts included; Gemini 3 always thinks, so it always includes them."""
    level = config.get("reasoningLevel")
    budget = config.get("reasoningBudget")
    include = config.get("includeReasoning")
    positive = isinstance(budget, int | float) and not isinstance(budget, bool) and budget > 0
    thinking_budget: float | None = budget if positive else None
    has_level = bool(level) and level != "off"
    if include is True or thinking_budget is not None or has_level:
        thinking = types.ThinkingConfig(include_thoughts=include is not False)
        if thinking_budget is not None:
            thinking.thinking_budget = int(thinking_budget)
        if has_level:
            if level not in _LEVELS:
                raise ModelError("CONFIG_ERROR", f"unknown reasoningLevel {level!r}")
            thinking.thinking_level = _LEVELS[level]
        return thinking
    if "gemini-3" in model_name:
        return types.ThinkingConfig(include_thoughts=True)
    return None


def _safety(cfg: dict[str, Any]) -> list[types.SafetySetting]:
    threshold = (
        types.HarmBlockThreshold.BLOCK_NONE
        if cfg.get("disableSafetyFilters")
        else types.HarmBlockThreshold.BLOCK_ONLY_HIGH
    )
    return [types.SafetySetting(category=c, threshold=threshold) for c in _SAFETY_CATEGORIES]


def google_overrides(cfg: dict[str, Any]) -> dict[str, Any]:
    """DL's ``providerOptions.google`` over the mapped options (a shallow merge, as DL's
    getProviderOptions does): ``thinkingConfig`` and ``safetySettings`` replace ours whole.
    A malformed override is a CONFIG_ERROR naming it, not a silent default."""
    options = cfg.get("providerOptions")
    google = options.get("google") if isinstance(options, dict) else None
    if not isinstance(google, dict):
        return {}
    out: dict[str, Any] = {}
    try:
        if isinstance(google.get("thinkingConfig"), dict):
            out["thinking_config"] = types.ThinkingConfig.model_validate(google["thinkingConfig"])
        if isinstance(google.get("safetySettings"), list):
            out["safety_settings"] = [
                types.SafetySetting.model_validate(item) for item in google["safetySettings"]
            ]
    except ValueError as exc:
        raise ModelError("CONFIG_ERROR", f"providerOptions.google: {exc}") from None
    return out


def generate_config(request: ModelRequest, timeout_s: float) -> types.GenerateContentConfig:
    """DL's ModelGenerationConfig as google-genai options; unset keys are not sent."""
    cfg = request.generation_config
    options: dict[str, Any] = {
        "safety_settings": _safety(cfg),
        "should_return_http_response": True,
        # We run the tools ourselves (recorded, once each); this also silences the SDK's
        # per-call "AFC is enabled" log line.
        "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
        # HttpOptions.timeout is in milliseconds; 0 would mean "no timeout".
        "http_options": types.HttpOptions(timeout=max(1, round(timeout_s * 1000))),
    }
    if _is_set(cfg.get("temperature")):
        options["temperature"] = cfg["temperature"]
    if _is_set(cfg.get("topP")):
        options["top_p"] = cfg["topP"]
    if _is_set(cfg.get("maxTokens")):
        options["max_output_tokens"] = cfg["maxTokens"]
    if cfg.get("stopSequences"):
        options["stop_sequences"] = list(cfg["stopSequences"])
    if cfg.get("frequencyPenalty"):
        options["frequency_penalty"] = cfg["frequencyPenalty"]
    if cfg.get("presencePenalty"):
        options["presence_penalty"] = cfg["presencePenalty"]
    thinking = thinking_config(cfg, request.model_name)
    if thinking is not None:
        options["thinking_config"] = thinking
    if request.system:
        options["system_instruction"] = request.system
    if request.tools:
        options["tools"] = [function_declarations(request.tools)]
    if request.response_schema is not None and json_with_tools(request):
        # responseJsonSchema takes JSON Schema as is; responseSchema wants the OpenAPI subset.
        options["response_mime_type"] = "application/json"
        options["response_json_schema"] = request.response_schema
    options.update(google_overrides(cfg))
    return types.GenerateContentConfig(**options)


def json_with_tools(request: ModelRequest) -> bool:
    """Whether the JSON response schema may go with the request: before Gemini 3 the API
    refuses function calling with a JSON response type, so with tools the schema is asked in
    the prompt only (our parser and validation check the answer either way)."""
    return not request.tools or "gemini-3" in request.model_name


def function_declarations(tools: tuple[ToolSpec, ...]) -> types.Tool:
    """The offered functions; ``parametersJsonSchema`` takes JSON Schema as is."""
    return types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name=t.name, description=t.description, parameters_json_schema=t.parameters
            )
            for t in tools
        ]
    )


def _call_part(call: ToolCall) -> types.Part:
    signature = base64.b64decode(call.signature) if call.signature else None
    return types.Part(
        function_call=types.FunctionCall(name=call.name, args=call.arguments, id=call.id or None),
        thought_signature=signature,
    )


def _parts(message: Message) -> list[types.Part]:
    """A neutral turn's parts: results as ``functionResponse`` ({output} or {error}, as
    Google's docs name them), calls as ``functionCall`` parts with their thought signatures."""
    if message.role == "tool":
        return [
            types.Part(
                function_response=types.FunctionResponse(
                    name=r.name,
                    id=r.call_id or None,
                    response={"error" if r.is_error else "output": r.content},
                )
            )
            for r in message.tool_results
        ]
    text = [types.Part(text=message.text)] if message.text.strip() else []
    if message.tool_calls:
        return [*text, *(_call_part(c) for c in message.tool_calls)]
    return text or [types.Part(text=" ")]  # Gemini rejects empty parts


def contents(request: ModelRequest) -> list[types.Content]:
    """The conversation (function responses go in a user turn)."""
    return [types.Content(role=_ROLES[m.role], parts=_parts(m)) for m in request.messages]


def sanitize(value: Any) -> Any:
    """DL's sanitizeRawResponseForLogging: long base64 ``data`` and thought signatures become
    placeholders, so logs stay small and carry no opaque blobs."""
    if isinstance(value, list):
        return [sanitize(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "data" and isinstance(item, str) and len(item) > 100:
            out[key] = "[IMAGE DATA]"
        elif key == "thoughtSignature" and isinstance(item, str):
            out[key] = "[THOUGHT SIGNATURE]"
        else:
            out[key] = sanitize(item)
    return out


def _envelope(body: str) -> dict[str, Any]:
    """The body as a generateContent response, or a retryable protocol fault: an HTML page, prose,
    a cut-off body or an error body sent with a 200 comes from a proxy or an outage."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ModelError(
            "PROVIDER_UNAVAILABLE_ERROR", "malformed response body", True, 200, cut_raw(body)
        )
    if isinstance(data.get("error"), dict):
        message = str(data["error"].get("message") or "")[:300]
        raise protocol_fault(f"an error body with HTTP 200: {message}", cut_raw(body))
    if "candidates" not in data and "promptFeedback" not in data:
        raise protocol_fault("no candidates and no promptFeedback", cut_raw(body))
    return data


def _usage(data: dict[str, Any]) -> Usage:
    meta = data.get("usageMetadata") or {}
    return Usage(
        prompt_tokens=int(meta.get("promptTokenCount") or 0),
        completion_tokens=int(meta.get("candidatesTokenCount") or 0)
        + int(meta.get("thoughtsTokenCount") or 0),
    )


def _answer_text(candidate: dict[str, Any]) -> str:
    """The answer parts' text; thoughts are not the answer."""
    parts = (candidate.get("content") or {}).get("parts") or []
    return "".join(
        p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")
    )


def tool_calls(candidate: dict[str, Any]) -> tuple[ToolCall, ...]:
    """The candidate's ``functionCall`` parts (Gemini may give no ids; the signature goes back
    with the call, as Gemini 3 requires)."""
    parts = (candidate.get("content") or {}).get("parts") or []
    return tuple(
        _tool_call(p)
        for p in parts
        if isinstance(p, dict) and isinstance(p.get("functionCall"), dict)
    )


def _tool_call(part: dict[str, Any]) -> ToolCall:
    call = part["functionCall"]
    args = call.get("args")
    signature = part.get("thoughtSignature")
    return ToolCall(
        id=str(call.get("id") or ""),
        name=str(call.get("name") or ""),
        arguments=args if isinstance(args, dict) else {},
        signature=signature if isinstance(signature, str) else None,
        malformed="" if isinstance(args, dict | None) else "args is not a JSON object",
    )


def _check_finish(finish: Any, text: str, raw: str) -> None:
    if finish in _REFUSAL_FINISH:
        raise ModelError("REFUSAL_ERROR", f"generation stopped: {finish}", raw=raw)
    if finish == "MAX_TOKENS" and not text.strip():
        raise ModelError("LENGTH_ERROR", "generation stopped at maxTokens with no text", raw=raw)


def parse_response(body: str) -> ModelReply:
    """A generateContent REST body as a reply; refusals and empty truncations as ModelErrors."""
    data = _envelope(body)
    raw = cut_raw(json.dumps(sanitize(data), ensure_ascii=False))
    usage = _usage(data)
    block = (data.get("promptFeedback") or {}).get("blockReason")
    if block:
        raise ModelError("REFUSAL_ERROR", f"prompt blocked by provider: {block}", raw=raw)
    candidates = data.get("candidates") or []
    if not candidates:
        return ModelReply(text="", usage=usage, raw=raw)
    candidate = candidates[0]
    if not isinstance(candidate, dict):
        raise ModelError("PROVIDER_UNAVAILABLE_ERROR", "malformed candidate", True, 200, raw)
    text = _answer_text(candidate)
    calls = tool_calls(candidate)
    if not calls:
        _check_finish(candidate.get("finishReason"), text, raw)
    return ModelReply(text=text, usage=usage, raw=raw, tool_calls=calls)


@functools.lru_cache(maxsize=32)
def _sdk_client(
    vertex: bool,
    credentials: Credentials,
    google_credentials: google.auth.credentials.Credentials | None,
) -> genai.Client:
    """One SDK client (and connection pool) per key or project; our retry loop, not the SDK's."""
    http = types.HttpOptions(
        base_url=credentials.base_url, retry_options=types.HttpRetryOptions(attempts=1)
    )
    if credentials.api_key:
        return genai.Client(vertexai=vertex, api_key=credentials.api_key, http_options=http)
    if vertex and credentials.project:
        return genai.Client(
            vertexai=True,
            project=credentials.project,
            location=credentials.location or "us-central1",
            credentials=google_credentials,
            http_options=http,
        )
    need = "an API key or project+location" if vertex else "an API key"
    raise ModelError("CONFIG_ERROR", f"{'Vertex AI' if vertex else 'Gemini'} needs {need}")


def _reasons(details: Any) -> set[str]:
    """google.rpc.ErrorInfo reasons in an error body, e.g. API_KEY_INVALID."""
    error = details.get("error", details) if isinstance(details, dict) else {}
    items = error.get("details") if isinstance(error, dict) else None
    return {d["reason"] for d in items or [] if isinstance(d, dict) and "reason" in d}


def _error(exc: Exception, timeout_s: float) -> ModelError:
    """SDK, transport and auth failures as ModelErrors (see retry.error_for_status)."""
    if isinstance(exc, errors.APIError):
        raw = cut_raw(json.dumps(exc.details, ensure_ascii=False, default=str))
        message = exc.message or str(exc)
        if any(r.startswith("API_KEY_") for r in _reasons(exc.details)):
            # The Gemini API answers a wrong key with 400 INVALID_ARGUMENT, not 401.
            return ModelError("AUTHENTICATION_ERROR", message, False, exc.code, raw)
        return error_for_status(exc.code or 0, message, raw)
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return ModelError("CONFIG_ERROR", f"invalid base URL: {exc}")
    if isinstance(exc, httpx.TimeoutException | requests.Timeout):
        return ModelError("PROVIDER_UNAVAILABLE_ERROR", f"no reply within {timeout_s:.1f}s", True)
    if isinstance(exc, httpx.TransportError | requests.ConnectionError):
        return ModelError("PROVIDER_UNAVAILABLE_ERROR", f"connection failed: {exc}", True)
    if isinstance(exc, google.auth.exceptions.DefaultCredentialsError):
        return ModelError("CONFIG_ERROR", f"no Google Cloud credentials for Vertex AI: {exc}")
    if isinstance(exc, google.auth.exceptions.TransportError):
        return ModelError("PROVIDER_UNAVAILABLE_ERROR", f"token refresh failed: {exc}", True)
    if isinstance(exc, google.auth.exceptions.RefreshError):
        if getattr(exc, "retryable", False):
            return ModelError("PROVIDER_UNAVAILABLE_ERROR", f"token refresh failed: {exc}", True)
        return ModelError("AUTHENTICATION_ERROR", f"Google Cloud credentials rejected: {exc}")
    if isinstance(exc, ValueError):
        return ModelError("CONFIG_ERROR", str(exc))
    return ModelError("INTERNAL_ERROR", f"{type(exc).__name__}: {exc}")


class GeminiClient:
    """ModelClient for the Gemini API (``vertex=False``) or Vertex AI (``vertex=True``).

    ``google_credentials`` replaces application default credentials for Vertex project mode."""

    def __init__(
        self,
        vertex: bool = False,
        google_credentials: google.auth.credentials.Credentials | None = None,
    ) -> None:
        self.vertex = vertex
        self.google_credentials = google_credentials

    def generate(self, request: ModelRequest) -> ModelReply:
        timeout_s = timeout_of(request)
        config = generate_config(request, timeout_s)
        try:
            client = _sdk_client(self.vertex, request.credentials, self.google_credentials)
            response = client.models.generate_content(
                model=request.model_name, contents=contents(request), config=config
            )
        except ModelError:
            raise
        except Exception as exc:
            raise _error(exc, timeout_s) from exc
        body = response.sdk_http_response.body if response.sdk_http_response else None
        return parse_response(body or "")
