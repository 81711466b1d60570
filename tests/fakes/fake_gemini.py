"""A fake Gemini endpoint: ``POST /v1beta/models/{model}:generateContent`` (Gemini API) and
``POST /v1beta1/[projects/{p}/locations/{l}/]publishers/google/models/{model}:generateContent``
(Vertex AI), answering with the REST JSON google-genai parses."""

from __future__ import annotations

import re
from typing import Any

from tests.fakes import FakeServer, Step, json_step

_PATH = re.compile(
    r"^/(?P<version>v1beta1?|v1)/(?P<scope>(?:projects/[^/]+/locations/[^/]+/)?"
    r"(?:publishers/google/)?)models/(?P<model>[^/:]+):generateContent(?:\?.*)?$"
)


def text(
    reply: str,
    finish: str = "STOP",
    prompt_tokens: int = 11,
    output_tokens: int = 7,
    thoughts_tokens: int = 0,
    thought: str | None = None,
) -> Step:
    """A candidate with ``reply`` (and, if given, a thought part before it)."""
    parts: list[dict[str, Any]] = []
    if thought is not None:
        parts.append({"text": thought, "thought": True})
    parts.append({"text": reply, "thoughtSignature": "c2lnbmF0dXJl" * 20})
    usage: dict[str, Any] = {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": prompt_tokens + output_tokens + thoughts_tokens,
    }
    if thoughts_tokens:
        usage["thoughtsTokenCount"] = thoughts_tokens
    return json_step(
        {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}
            ],
            "usageMetadata": usage,
            "modelVersion": "gemini-fake",
            "responseId": "fake-response",
        }
    )


def function_calls(*calls: tuple[str, dict[str, Any]], ids: bool = False) -> Step:
    """The model calling functions: ``functionCall`` parts (Gemini 3 signs the first), no
    ids unless ``ids`` (the Gemini API usually sends none)."""
    parts: list[dict[str, Any]] = []
    for i, (name, args) in enumerate(calls):
        call: dict[str, Any] = {"name": name, "args": args}
        if ids:
            call["id"] = f"fc_fake{i}"
        part: dict[str, Any] = {"functionCall": call}
        if i == 0:
            part["thoughtSignature"] = "c2lnbmF0dXJl" * 4
        parts.append(part)
    return json_step(
        {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 5},
        }
    )


def _parts(content: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [p for p in content.get("parts") or [] if isinstance(p, dict) and key in p]


def invalid_tool_turns(model: str, body: Any) -> str | None:
    """The API's checks of function calling: a JSON response type refused beside function
    declarations before Gemini 3, a function response turn right after its call turn with as
    many response parts as call parts."""
    if not isinstance(body, dict):
        return None
    declared = any(t.get("functionDeclarations") for t in body.get("tools") or [])
    mime = (body.get("generationConfig") or {}).get("responseMimeType")
    if declared and mime == "application/json" and "gemini-3" not in model:
        return "Function calling with a response mime type: 'application/json' is unsupported"
    contents = body.get("contents") or []
    for n, content in enumerate(contents):
        responses = _parts(content, "functionResponse")
        if not responses:
            continue
        calls = _parts(contents[n - 1], "functionCall") if n else []
        if not calls:
            return (
                "Please ensure that function response turn comes immediately after a function "
                "call turn."
            )
        if len(calls) != len(responses):
            return (
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn."
            )
    return None


def error(
    status: int,
    message: str = "scripted failure",
    grpc: str | None = None,
    reason: str | None = None,
) -> Step:
    """Google's error envelope: ``{"error": {"code", "message", "status", "details"}}``."""
    names = {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }
    payload: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": grpc or names.get(status, "UNKNOWN"),
    }
    if reason:
        payload["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "googleapis.com",
            }
        ]
    return json_step({"error": payload}, status)


def bad_api_key() -> Step:
    """What the real Gemini API answers to a wrong key: 400 (not 401) with API_KEY_INVALID."""
    return error(400, "API key not valid. Please pass a valid API key.", reason="API_KEY_INVALID")


def empty() -> Step:
    """A candidate with no parts at all (the model said nothing)."""
    return json_step(
        {
            "candidates": [{"content": {"role": "model"}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5},
        }
    )


def prompt_blocked(reason: str = "SAFETY") -> Step:
    """The prompt itself was blocked: no candidates, promptFeedback.blockReason."""
    return json_step(
        {
            "promptFeedback": {"blockReason": reason},
            "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5},
        }
    )


def output_blocked() -> Step:
    """Generation stopped by the safety filter (finishReason SAFETY, no text)."""
    return json_step(
        {
            "candidates": [
                {
                    "content": {"role": "model"},
                    "finishReason": "SAFETY",
                    "safetyRatings": [
                        {"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH"}
                    ],
                }
            ],
            "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5},
        }
    )


def max_tokens_empty(thoughts_tokens: int = 64) -> Step:
    """Thinking used the whole budget: MAX_TOKENS and no answer text."""
    return json_step(
        {
            "candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}],
            "usageMetadata": {
                "promptTokenCount": 5,
                "thoughtsTokenCount": thoughts_tokens,
                "totalTokenCount": 5 + thoughts_tokens,
            },
        }
    )


class FakeGemini(FakeServer):
    """Answers generateContent on the Gemini API and Vertex AI paths; other paths get 404.

    With ``api_key`` set, a request whose ``x-goog-api-key`` differs gets what Google sends
    (``bad_api_key()``)."""

    def __init__(self, api_key: str | None = None, default: Step | None = None) -> None:
        super().__init__(default or text('{"ok": true}'))
        self.api_key = api_key

    def route(self, method: str, path: str, headers: dict[str, str], body: Any) -> Step | None:
        if method != "POST" or not _PATH.match(path):
            return error(404, f"no such method: {method} {path}")
        if self.api_key is not None and headers.get("x-goog-api-key") != self.api_key:
            return bad_api_key()
        reason = invalid_tool_turns(self.model_of(path), body)
        return error(400, reason) if reason else None

    @staticmethod
    def model_of(path: str) -> str:
        match = _PATH.match(path)
        assert match, path
        return match["model"]
