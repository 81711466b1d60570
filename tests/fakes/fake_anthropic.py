"""A fake Anthropic Messages API: ``POST /v1/messages`` with Anthropic's JSON shapes, headers and
error envelopes, and the request checks the real API makes before it answers (a missing
``anthropic-version``, ``max_tokens``, a thinking budget under 1,024 or not under
``max_tokens``, a forced tool with thinking on), so a client that sends what the real API
refuses fails here too."""

from __future__ import annotations

from typing import Any

from tests.fakes import FakeServer, Step, json_step

PATH = "/v1/messages"
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
"""Anthropic's error ``type`` by HTTP status."""
MIN_THINKING_BUDGET = 1024
REMOVED_IN_2026_10_21 = ("temperature", "top_p", "top_k")
"""Sampling parameters API version 2026-10-21 refuses (400), even at their defaults."""


def _usage(input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> dict:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
    }


def message(
    content: list[dict[str, Any]],
    stop_reason: str = "end_turn",
    input_tokens: int = 17,
    output_tokens: int = 8,
    cache_read: int = 0,
    cache_write: int = 0,
) -> Step:
    """A Message object with these content blocks."""
    return json_step(
        {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": "claude-fake",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": _usage(input_tokens, output_tokens, cache_read, cache_write),
        },
        headers={"request-id": "req_fake"},
    )


def thinking_block(thought: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": thought, "signature": "c2lnbmF0dXJl" * 10}


def text(reply: str, thought: str | None = None, **kwargs: Any) -> Step:
    """A text answer (after a thinking block when ``thought`` is given)."""
    blocks = [thinking_block(thought)] if thought is not None else []
    return message([*blocks, {"type": "text", "text": reply}], **kwargs)


def tool_use(value: Any, name: str = "response", thought: str | None = None, **kwargs: Any) -> Step:
    """The model calling tool ``name`` with ``value`` as its input (stop_reason tool_use)."""
    blocks = [thinking_block(thought)] if thought is not None else []
    call = {"type": "tool_use", "id": "toolu_fake", "name": name, "input": value}
    kwargs.setdefault("stop_reason", "tool_use")
    return message([*blocks, call], **kwargs)


def tool_uses(*calls: tuple[str, dict[str, Any]], thought: str | None = None) -> Step:
    """The model calling several tools in one turn (ids ``toolu_fake0``, ``toolu_fake1``...)."""
    blocks = [thinking_block(thought)] if thought is not None else []
    uses = [
        {"type": "tool_use", "id": f"toolu_fake{i}", "name": name, "input": value}
        for i, (name, value) in enumerate(calls)
    ]
    return message([*blocks, *uses], stop_reason="tool_use")


def _blocks(message_: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    content = message_.get("content")
    blocks = content if isinstance(content, list) else []
    return [b for b in blocks if isinstance(b, dict) and b.get("type") == kind]


def invalid_tool_turns(messages: list[dict[str, Any]]) -> str | None:
    """The API's checks of tool turns: every ``tool_use`` answered by a ``tool_result`` in the
    very next (user) message, and no ``tool_result`` for a call that was not made."""
    for n, current in enumerate(messages):
        asked = {b.get("id") for b in _blocks(current, "tool_use")}
        following = messages[n + 1] if n + 1 < len(messages) else None
        answered = {b.get("tool_use_id") for b in _blocks(following or {}, "tool_result")}
        if asked and following is not None and asked - answered:
            missing = ", ".join(sorted(str(i) for i in asked - answered))
            return (
                f"messages.{n + 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {missing}. Each `tool_use` block must have a corresponding "
                "`tool_result` block in the next message."
            )
        previous = messages[n - 1] if n else {}
        made = {b.get("id") for b in _blocks(previous, "tool_use")}
        stray = {b.get("tool_use_id") for b in _blocks(current, "tool_result")} - made
        if stray:
            return (
                f"messages.{n}.content.0: unexpected `tool_use_id` found in `tool_result` "
                f"blocks: {', '.join(sorted(str(i) for i in stray))}. Each `tool_result` block "
                "must have a corresponding `tool_use` block in the previous message."
            )
    return None


def refusal() -> Step:
    """Claude's streaming classifiers stopped the answer: stop_reason ``refusal``."""
    return message([], stop_reason="refusal", output_tokens=0)


def length_empty() -> Step:
    """Thinking used every token: stop_reason ``max_tokens`` and no answer block."""
    return message([thinking_block("...")], stop_reason="max_tokens", output_tokens=256)


def error(status: int, message_: str = "scripted failure", retry_after: int | None = None) -> Step:
    """Anthropic's error envelope: ``{"type": "error", "error": {"type", "message"}}``."""
    headers = {"request-id": "req_fake_error"}
    if retry_after is not None:
        headers["retry-after"] = str(retry_after)
    body = {
        "type": "error",
        "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message_},
        "request_id": "req_fake_error",
    }
    return json_step(body, status, headers=headers)


def rate_limited(retry_after: int = 7) -> Step:
    return error(
        429, "Number of request tokens has exceeded your per-minute rate limit", retry_after
    )


def overloaded() -> Step:
    return error(529, "Overloaded")


def _check_thinking(body: dict[str, Any]) -> str | None:
    thinking = body.get("thinking") or {}
    if thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < MIN_THINKING_BUDGET:
        return f"thinking.enabled.budget_tokens: Input should be >= {MIN_THINKING_BUDGET}"
    if budget >= body["max_tokens"]:
        return "`max_tokens` must be greater than `thinking.budget_tokens`"
    if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
        return "Thinking may not be enabled when tool_choice forces tool use."
    return None


def invalid_request(body: Any) -> str | None:
    """What the real API answers 400 for, among the mistakes a client could make."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    for field in ("model", "messages", "max_tokens"):
        if field not in body:
            return f"{field}: Field required"
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return "max_tokens: Input should be a valid integer greater than or equal to 1"
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if any(m.get("role") not in ("user", "assistant") for m in messages):
        return "messages: roles must be 'user' or 'assistant' (the system prompt is `system`)"
    if any(m.get("content") == "" for m in messages):
        return "messages: text content blocks must be non-empty"
    for removed in REMOVED_IN_2026_10_21:
        if removed in body:
            return f"{removed}: Extra inputs are not permitted"
    for tool in body.get("tools") or []:
        if (tool.get("input_schema") or {}).get("type") != "object":
            return "tools.0.custom.input_schema.type: Input should be 'object'"
    names = [t.get("name") for t in body.get("tools") or []]
    if len(names) != len(set(names)):
        return "tools: Tool names must be unique."
    return invalid_tool_turns(messages) or _check_thinking(body)


def _keys(headers: dict[str, str]) -> set[str]:
    bearer = headers.get("authorization", "")
    return {headers.get("x-api-key", ""), bearer.removeprefix("Bearer ")} - {""}


class FakeAnthropic(FakeServer):
    """Answers ``POST /v1/messages``; other paths get 404. With ``api_key`` set, a request that
    carries it neither as ``x-api-key`` nor as ``Authorization: Bearer`` (what SDK 2.x sends)
    gets Anthropic's 401."""

    def __init__(self, api_key: str | None = None, default: Step | None = None) -> None:
        super().__init__(default or text('{"ok": true}'))
        self.api_key = api_key

    def route(self, method: str, path: str, headers: dict[str, str], body: Any) -> Step | None:
        if method != "POST" or path.split("?")[0] != PATH:
            return error(404, f"Not found: {method} {path}")
        if self.api_key is not None and self.api_key not in _keys(headers):
            return error(401, "invalid x-api-key")
        if not headers.get("anthropic-version"):
            return error(400, "anthropic-version: header is required")
        reason = invalid_request(body)
        return error(400, reason) if reason else None

    @property
    def base_url(self) -> str:
        """What goes in claudeApiKey.baseUrl (the SDK appends ``/v1/messages``)."""
        return self.url
