"""CLAUDE through the official ``anthropic`` SDK (the Messages API, anthropic-version 2026-10-21).

Mapped the way Deliberate Lab's ai-sdk.api.ts maps ModelGenerationConfig for Anthropic
(buildAnthropicOptions), with ``providerOptions.anthropic`` over it:

- structured output: a ``response`` tool whose ``input_schema`` is the stage's JSON Schema, and
  the model made to call it (Anthropic's documented JSON approach; a tool takes any JSON Schema,
  where native structured outputs refuse some of our constraints). With thinking on, a forced
  tool is refused by the API: the tool is offered (``tool_choice`` auto) and a text answer is
  parsed as JSON like any other;
- thinking: ``reasoningBudget`` (at least 1,024, Anthropic's minimum) or ``includeReasoning`` /
  a ``reasoningLevel`` turn extended thinking on; ``max_tokens`` is then the answer's allowance
  plus the budget, as the AI SDK does; thinking blocks are not the answer;
- ``reasoningLevel`` (low/medium/high) as ``output_config.effort``; ``providerOptions.anthropic``
  ``thinking``/``effort`` override, its ``cacheControl`` turns on prompt caching;
- API version 2026-10-21 refuses ``temperature``, ``top_p`` and ``top_k`` (the SDK no longer
  has them): DL's temperature and topP are not sent to Claude.

The SDK's retries are off: every attempt goes through our retry loop. We read the raw 200 body
ourselves, as for the other providers.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import anthropic

from shared.llm.base import (
    Credentials,
    Message,
    ModelError,
    ModelReply,
    ModelRequest,
    ToolCall,
    Usage,
    check_base_url,
    cut_raw,
    protocol_fault,
    timeout_of,
)
from shared.llm.retry import SdkErrors, error_for_status, retry_after

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 8192
"""The answer's allowance when maxTokens is unset (the Messages API requires one)."""
MIN_THINKING_BUDGET = 1024
RESPONSE_TOOL = "response"
_EFFORTS = {"low", "medium", "high"}
_THINKING_TYPES = {"enabled", "disabled", "adaptive"}
_LENGTH_STOPS = {"max_tokens", "model_context_window_exceeded"}
_THOUGHTS = {"thinking", "redacted_thinking"}


def _options(cfg: dict[str, Any]) -> dict[str, Any]:
    """DL's ``providerOptions.anthropic`` (an empty dict when unset or malformed)."""
    options = cfg.get("providerOptions")
    section = options.get("anthropic") if isinstance(options, dict) else None
    return section if isinstance(section, dict) else {}


def _budget(value: Any) -> int | None:
    positive = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    return int(value) if positive else None


def thinking(cfg: dict[str, Any]) -> dict[str, Any] | None:
    """The ``thinking`` parameter: DL's mapping (a budget, includeReasoning or a reasoning
    level turn it on), ``providerOptions.anthropic.thinking`` over it; None leaves the model's
    default."""
    budget = _budget(cfg.get("reasoningBudget"))
    level = cfg.get("reasoningLevel")
    override = _options(cfg).get("thinking")
    if isinstance(override, dict) and override.get("type") in _THINKING_TYPES:
        kind = override["type"]
        budget = _budget(override.get("budgetTokens")) or budget
    elif cfg.get("includeReasoning") is True or budget or (level and level != "off"):
        kind = "enabled"
    else:
        return None
    if kind != "enabled":
        return {"type": kind}
    return {"type": "enabled", "budget_tokens": max(MIN_THINKING_BUDGET, budget or 0)}


def output_config(cfg: dict[str, Any]) -> dict[str, Any] | None:
    """``effort`` from reasoningLevel (DL's mapReasoningLevelToEffort), or the override."""
    effort = _options(cfg).get("effort") or cfg.get("reasoningLevel")
    return {"effort": effort} if effort in _EFFORTS else None


def cache_control(cfg: dict[str, Any]) -> dict[str, Any] | None:
    """``providerOptions.anthropic.cacheControl`` ({type: ephemeral, ttl?: 5m|1h}) as the
    request's automatic prompt caching: the prompt up to its last block is cached."""
    cache = _options(cfg).get("cacheControl")
    if not isinstance(cache, dict) or cache.get("type") != "ephemeral":
        return None
    ttl = cache.get("ttl")
    return {"type": "ephemeral", **({"ttl": ttl} if ttl in ("5m", "1h") else {})}


def _structured(schema: dict[str, Any] | None, thinks: bool) -> dict[str, Any]:
    """The response tool (input schemas must be objects; another schema is asked in the
    prompt only)."""
    if schema is None or schema.get("type") != "object":
        return {}
    tool = {
        "name": RESPONSE_TOOL,
        "description": "Give your answer: call this with the answer as its input.",
        "input_schema": schema,
    }
    choice = {"type": "auto"} if thinks else {"type": "tool", "name": RESPONSE_TOOL}
    return {"tools": [tool], "tool_choice": choice}


def _tools(request: ModelRequest, thinks: bool) -> dict[str, Any]:
    """The offered functions beside the response tool. The model must be free to pick one of
    them or the answer, so a forced response tool becomes ``any`` (``auto`` with thinking on,
    which refuses a forced choice)."""
    structured = _structured(request.response_schema, thinks)
    if not request.tools:
        return structured
    if any(t.name == RESPONSE_TOOL for t in request.tools):
        raise ModelError("CONFIG_ERROR", f"a tool may not be named {RESPONSE_TOOL!r} for Claude")
    offered = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters}
        for t in request.tools
    ]
    choice = {"type": "auto"} if thinks else {"type": "any"}
    return {"tools": [*structured.get("tools", []), *offered], "tool_choice": choice}


def _content(message: Message) -> str | list[dict[str, Any]]:
    """A neutral turn as Messages content: tool calls as ``tool_use`` blocks after the text,
    results as ``tool_result`` blocks (in a user turn); empty text (refused) as one space."""
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": r.call_id,
                "content": r.content or " ",
                **({"is_error": True} if r.is_error else {}),
            }
            for r in message.tool_results
        ]
    if not message.tool_calls:
        return message.text or " "
    signed = message.tool_calls[0].signature
    thoughts: list[dict[str, Any]] = json.loads(signed) if signed else []
    text = [{"type": "text", "text": message.text}] if message.text.strip() else []
    calls = [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
        for c in message.tool_calls
    ]
    return [*thoughts, *text, *calls]


def message_params(request: ModelRequest) -> dict[str, Any]:
    """The Messages API request; unset ModelGenerationConfig keys are not sent."""
    cfg = request.generation_config
    think = thinking(cfg)
    most = cfg.get("maxTokens") or DEFAULT_MAX_TOKENS
    if think and think["type"] == "enabled":
        most += think["budget_tokens"]  # the budget counts toward max_tokens
    params: dict[str, Any] = {
        "model": request.model_name,
        "max_tokens": most,
        "messages": [
            {"role": "user" if m.role == "tool" else m.role, "content": _content(m)}
            for m in request.messages
        ],
    }
    if request.system:
        params["system"] = request.system
    if cfg.get("stopSequences"):
        params["stop_sequences"] = list(cfg["stopSequences"])
    for name, value in (
        ("thinking", think),
        ("output_config", output_config(cfg)),
        ("cache_control", cache_control(cfg)),
    ):
        if value is not None:
            params[name] = value
    thinks = think is not None and think["type"] != "disabled"
    params.update(_tools(request, thinks))
    return params


def sanitize(value: Any) -> Any:
    """Thinking signatures and redacted thinking become placeholders (as DL's
    sanitizeRawResponseForLogging does for Gemini): opaque blobs have no place in a log."""
    if isinstance(value, list):
        return [sanitize(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: sanitize(v) for k, v in value.items()}
    if isinstance(out.get("signature"), str):
        out["signature"] = "[THOUGHT SIGNATURE]"
    if out.get("type") == "redacted_thinking" and isinstance(out.get("data"), str):
        out["data"] = "[REDACTED THINKING]"
    return out


def _envelope(body: str) -> dict[str, Any]:
    """The body as a Message, or a retryable protocol fault (an HTML page, a cut-off body or an
    error envelope sent with a 200 holds no answer to correct)."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("type") == "error":
        error = data.get("error")
        message = str(error.get("message") or "")[:300] if isinstance(error, dict) else ""
        raise protocol_fault(f"an error body with HTTP 200: {message}", cut_raw(body))
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise ModelError(
            "PROVIDER_UNAVAILABLE_ERROR", "malformed response body", True, 200, cut_raw(body)
        )
    return data


def _usage(data: dict[str, Any]) -> Usage:
    """Input tokens include the cached ones (Anthropic counts them apart): all were sent."""
    usage = data.get("usage") or {}
    prompt = sum(
        int(usage.get(name) or 0)
        for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return Usage(prompt_tokens=prompt, completion_tokens=int(usage.get("output_tokens") or 0))


def _answer(content: list[Any]) -> str:
    """The response tool's input as JSON text, else the text blocks (thinking is not the
    answer)."""
    for block in content:
        is_use = isinstance(block, dict) and block.get("type") == "tool_use"
        if is_use and block.get("name") == RESPONSE_TOOL:
            return json.dumps(block.get("input"), ensure_ascii=False)
    return _text_blocks(content)


def tool_calls(content: list[Any]) -> tuple[ToolCall, ...]:
    """The ``tool_use`` blocks, when one calls an offered function (not just the response
    tool): all of them, since each needs its ``tool_result`` in the next turn (an answer
    given beside tool calls gets "not found" and is asked again)."""
    uses = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
    if all(b.get("name") == RESPONSE_TOOL for b in uses):
        return ()
    thoughts = [b for b in content if isinstance(b, dict) and b.get("type") in _THOUGHTS]
    # the API wants the turn's thinking blocks back before its tool_use blocks
    signature = json.dumps(thoughts) if thoughts else None
    return tuple(_tool_call(b, signature if not i else None) for i, b in enumerate(uses))


def _tool_call(block: dict[str, Any], signature: str | None) -> ToolCall:
    given = block.get("input")
    return ToolCall(
        id=str(block.get("id") or ""),
        name=str(block.get("name") or ""),
        arguments=given if isinstance(given, dict) else {},
        signature=signature,
        malformed="" if isinstance(given, dict) else "input is not a JSON object",
    )


def _text_blocks(content: list[Any]) -> str:
    return "".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def parse_response(body: str) -> ModelReply:
    """A 200 Messages body as a reply; refusals and empty truncations as ModelErrors."""
    data = _envelope(body)
    raw = cut_raw(json.dumps(sanitize(data), ensure_ascii=False))
    calls = tool_calls(data["content"])
    text = _text_blocks(data["content"]) if calls else _answer(data["content"])
    stop = data.get("stop_reason")
    if stop == "refusal":
        raise ModelError("REFUSAL_ERROR", "generation stopped: refusal", raw=raw)
    if stop in _LENGTH_STOPS and not text.strip() and not calls:
        raise ModelError("LENGTH_ERROR", f"generation stopped at {stop} with no text", raw=raw)
    return ModelReply(text=text, usage=_usage(data), raw=raw, tool_calls=calls)


@functools.lru_cache(maxsize=32)
def sdk_client(credentials: Credentials) -> anthropic.Anthropic:
    """One SDK client (and connection pool) per key and endpoint; our retry loop, not the
    SDK's. The key and base URL are always passed, so the SDK reads neither from the
    environment (nor a profile from disk)."""
    if not credentials.api_key:
        raise ModelError("CONFIG_ERROR", "Claude needs an API key")
    base = check_base_url(credentials.base_url or ANTHROPIC_BASE_URL)
    return anthropic.Anthropic(api_key=credentials.api_key, base_url=base, max_retries=0)


def _status_error(exc: anthropic.APIStatusError) -> ModelError:
    raw = cut_raw(exc.response.text)
    message = exc.api_message or raw[:500] or exc.response.reason_phrase
    mapped = error_for_status(exc.status_code, message, raw, retry_after(exc.response.headers))
    if exc.type == "billing_error" or exc.status_code == 402:
        mapped.status, mapped.retryable = "QUOTA_ERROR", False  # out of credit: waiting won't do
    return mapped


_ERRORS = SdkErrors(
    anthropic.APIStatusError,
    _status_error,
    anthropic.APITimeoutError,
    anthropic.APIConnectionError,
    (anthropic.AnthropicError, ValueError, TypeError),
)


class ClaudeClient:
    """ModelClient for CLAUDE (Anthropic's API, or a compatible endpoint: ``base_url``)."""

    def generate(self, request: ModelRequest) -> ModelReply:
        timeout_s = timeout_of(request)
        params = message_params(request)
        client = sdk_client(request.credentials)
        try:
            response = client.messages.with_raw_response.create(
                **params, timeout=max(timeout_s, 0.001)
            )
            text = response.text()
        except Exception as exc:
            raise _ERRORS.model_error(exc, timeout_s) from exc
        return parse_response(text)
