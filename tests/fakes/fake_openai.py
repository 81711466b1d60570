"""A fake OpenAI-compatible server: ``POST /v1/chat/completions`` with OpenAI's JSON shapes, and
Azure OpenAI's ``POST /openai/deployments/{deployment}/chat/completions?api-version=...``."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fakes import FakeServer, Step, json_step

PATH = "/v1/chat/completions"
FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
AZURE_PATH = re.compile(
    r"^/openai/deployments/(?P<deployment>[^/?]+)/chat/completions\?(?P<query>.*)$"
)


def text(
    reply: str | None,
    finish: str = "stop",
    prompt_tokens: int = 13,
    completion_tokens: int = 9,
    refusal: str | None = None,
) -> Step:
    """One choice whose message content is ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply, "refusal": refusal}
    return json_step(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def tool_calls(*calls: tuple[str, dict[str, Any]], ids: tuple[str, ...] = ()) -> Step:
    """The model calling functions: ``tool_calls`` (arguments as JSON text), content null,
    finish_reason ``tool_calls``."""
    made = [
        {
            "id": ids[i] if i < len(ids) else f"call_fake{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for i, (name, arguments) in enumerate(calls)
    ]
    step = text(None, finish="tool_calls")
    body = json.loads(step.body)
    body["choices"][0]["message"]["tool_calls"] = made
    return json_step(body)


def invalid_tool_turns(body: Any) -> str | None:
    """What the real API answers 400 for in a conversation with tools: a tool message that
    answers no preceding call, a call left without its tool message, an unnamed function."""
    if not isinstance(body, dict):
        return None
    for tool in body.get("tools") or []:
        name = (tool.get("function") or {}).get("name") or ""
        if tool.get("type") != "function" or not FUNCTION_NAME.match(name):
            return f"Invalid 'tools': function name {name!r} must match {FUNCTION_NAME.pattern}"
    waiting: list[str] = []
    for message in [*(body.get("messages") or []), {"role": "end"}]:
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in waiting:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            waiting.remove(message["tool_call_id"])
            continue
        if waiting:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(waiting)}"
            )
        waiting = [c.get("id") for c in message.get("tool_calls") or []]
    return None


def error(
    status: int,
    message: str = "scripted failure",
    type_: str = "api_error",
    code: str | None = None,
) -> Step:
    """OpenAI's error envelope: ``{"error": {"message", "type", "param", "code"}}``."""
    return json_step(
        {"error": {"message": message, "type": type_, "param": None, "code": code}}, status
    )


def empty() -> Step:
    return text("")


def refused() -> Step:
    """Structured outputs' refusal: content null, message.refusal set."""
    return text(None, refusal="I can't help with that.")


def content_filtered() -> Step:
    return text(None, finish="content_filter")


def length_empty() -> Step:
    """Reasoning used every token: finish_reason length and no content."""
    return text("", finish="length", completion_tokens=256)


class FakeOpenAI(FakeServer):
    """Answers ``POST /v1/chat/completions``; other paths get 404. With ``api_key`` set, a
    request without ``Authorization: Bearer {api_key}`` gets OpenAI's 401.

    ``azure=True``: Azure OpenAI's deployment route instead, which wants an ``api-version``
    query and the key in an ``api-key`` header."""

    def __init__(
        self, api_key: str | None = None, default: Step | None = None, azure: bool = False
    ) -> None:
        super().__init__(default or text('{"ok": true}'))
        self.api_key = api_key
        self.azure = azure

    def route(self, method: str, path: str, headers: dict[str, str], body: Any) -> Step | None:
        if self.azure:
            return self._azure(method, path, headers)
        if method != "POST" or path != PATH:
            return error(404, f"Unknown request URL: {method} {path}", "invalid_request_error")
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return error(
                401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
            )
        reason = invalid_tool_turns(body)
        return error(400, reason, "invalid_request_error") if reason else None

    def _azure(self, method: str, path: str, headers: dict[str, str]) -> Step | None:
        found = AZURE_PATH.match(path)
        if method != "POST" or not found:
            return error(404, "Resource not found", "invalid_request_error", "404")
        if "api-version=" not in found["query"]:
            return error(404, "Resource not found", "invalid_request_error", "404")
        if self.api_key is not None and headers.get("api-key") != self.api_key:
            return error(401, "Access denied due to invalid subscription key.", code="401")
        return None

    @property
    def base_url(self) -> str:
        """What goes in openAIApiKey.baseUrl (or the Ollama server URL, minus ``/v1``)."""
        return f"{self.url}/v1"
