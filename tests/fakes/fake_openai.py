"""A fake OpenAI-compatible server: ``POST /v1/chat/completions`` with OpenAI's JSON shapes, and
Azure OpenAI's ``POST /openai/deployments/{deployment}/chat/completions?api-version=...``."""

from __future__ import annotations

import re
from typing import Any

from tests.fakes import FakeServer, Step, json_step

PATH = "/v1/chat/completions"
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
        return None

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
