"""GeminiClient against a local fake speaking the Gemini/Vertex REST protocol (google-genai runs
unchanged: request building, auth headers, error mapping)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import google.oauth2.credentials
import pytest

from shared.llm.base import Credentials, Message, ModelError, ModelRequest
from shared.llm.gemini import GeminiClient, sanitize, thinking_config
from tests.fakes import Step, malformed, slow
from tests.fakes import fake_gemini as g
from tests.fakes.fake_gemini import FakeGemini

SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "enum": ["a", "b"]},
        "why": {"type": "string", "minLength": 3, "maxLength": 200},
    },
    "required": ["answer", "why"],
}
KEY = "test-gemini-key"


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with FakeGemini(api_key=KEY) as server:
        yield server


def request(fake: FakeGemini, **overrides: Any) -> ModelRequest:
    fields: dict[str, Any] = {
        "prompt": "Pick a or b.",
        "response_schema": SCHEMA,
        "model_name": "gemini-2.5-flash",
        "seed": "agent:stage:1",
        "credentials": Credentials(api_key=KEY, base_url=fake.url),
        "timeout_s": 5.0,
    }
    fields.update(overrides)
    return ModelRequest(**fields)


def field(obj: dict[str, Any], camel: str) -> Any:
    """A wire field by its REST (camelCase) name; google-genai sends nested config objects such as
    thinkingConfig with proto snake_case names, which the real API also accepts."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return obj.get(camel, obj.get(snake))


def sent(fake: FakeGemini) -> dict[str, Any]:
    assert fake.requests, "no request reached the fake"
    return fake.requests[-1].body


# --- request mapping ---------------------------------------------------------------------------


def test_conversation_schema_and_key_go_over_the_wire(fake: FakeGemini) -> None:
    history = (Message("assistant", '{"answer": "c"}'), Message("user", "c is not allowed"))
    GeminiClient().generate(request(fake, history=history))
    rec = fake.requests[-1]
    assert rec.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert rec.headers["x-goog-api-key"] == KEY
    body = rec.body
    assert [(c["role"], c["parts"][0]["text"]) for c in body["contents"]] == [
        ("user", "Pick a or b."),
        ("model", '{"answer": "c"}'),
        ("user", "c is not allowed"),
    ]
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == SCHEMA  # sent natively, unchanged
    assert "responseSchema" not in config


def test_free_text_sends_no_schema(fake: FakeGemini) -> None:
    GeminiClient().generate(request(fake, response_schema=None))
    config = sent(fake).get("generationConfig", {})
    assert "responseMimeType" not in config and "responseJsonSchema" not in config


def test_generation_config_is_mapped(fake: FakeGemini) -> None:
    cfg = {
        "temperature": 0.4,
        "topP": 0.8,
        "maxTokens": 300,
        "stopSequences": ["END"],
        "frequencyPenalty": 0.5,
        "presencePenalty": -0.25,
        "reasoningLevel": "high",
    }
    GeminiClient().generate(request(fake, generation_config=cfg, model_name="gemini-3-flash"))
    config = sent(fake)["generationConfig"]
    assert config["temperature"] == 0.4
    assert config["topP"] == 0.8
    assert config["maxOutputTokens"] == 300
    assert config["stopSequences"] == ["END"]
    assert config["frequencyPenalty"] == 0.5
    assert config["presencePenalty"] == -0.25
    thinking = config["thinkingConfig"]
    assert field(thinking, "thinkingLevel") == "HIGH"
    assert field(thinking, "includeThoughts") is True


def test_unset_and_neutral_keys_are_not_sent(fake: FakeGemini) -> None:
    cfg = {"frequencyPenalty": 0, "presencePenalty": 0, "stopSequences": [], "topP": None}
    GeminiClient().generate(request(fake, generation_config=cfg, response_schema=None))
    config = sent(fake).get("generationConfig", {})
    assert config == {}


@pytest.mark.parametrize(
    ("disable", "threshold"), [(False, "BLOCK_ONLY_HIGH"), (True, "BLOCK_NONE")]
)
def test_safety_settings_as_deliberate_lab(fake: FakeGemini, disable: bool, threshold: str) -> None:
    cfg = {"disableSafetyFilters": True} if disable else {}
    GeminiClient().generate(request(fake, generation_config=cfg))
    settings = sent(fake)["safetySettings"]
    assert {s["category"] for s in settings} == {
        "HARM_CATEGORY_HARASSMENT",
        "HARM_CATEGORY_DANGEROUS_CONTENT",
        "HARM_CATEGORY_HATE_SPEECH",
        "HARM_CATEGORY_SEXUALLY_EXPLICIT",
    }
    assert {s["threshold"] for s in settings} == {threshold}


@pytest.mark.parametrize(
    ("cfg", "model", "expected"),
    [
        ({}, "gemini-2.5-flash", None),
        ({"reasoningLevel": "off"}, "gemini-2.5-flash", None),
        ({}, "gemini-3-flash-preview", {"include_thoughts": True}),
        (
            {"reasoningLevel": "minimal"},
            "m",
            {"include_thoughts": True, "thinking_level": "MINIMAL"},
        ),
        ({"reasoningBudget": 512}, "m", {"include_thoughts": True, "thinking_budget": 512}),
        ({"reasoningBudget": 0}, "gemini-2.5-flash", None),
        (
            {"reasoningLevel": "low", "includeReasoning": False},
            "m",
            {"include_thoughts": False, "thinking_level": "LOW"},
        ),
        ({"includeReasoning": True}, "m", {"include_thoughts": True}),
    ],
)
def test_thinking_config_follows_deliberate_lab(
    cfg: dict[str, Any], model: str, expected: dict[str, Any] | None
) -> None:
    thinking = thinking_config(cfg, model)
    dumped = None if thinking is None else thinking.model_dump(mode="json", exclude_none=True)
    assert dumped == expected


def test_system_prompt_is_the_system_instruction(fake: FakeGemini) -> None:
    GeminiClient().generate(request(fake, system="Answer tersely."))
    assert sent(fake)["systemInstruction"]["parts"][0]["text"] == "Answer tersely."


def test_provider_options_google_replace_the_mapped_options(fake: FakeGemini) -> None:
    """DL's getProviderOptions: providerOptions.google spread over the mapped options."""
    google = {
        "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": False},
        "safetySettings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}],
    }
    cfg = {"reasoningLevel": "high", "providerOptions": {"google": google}}
    GeminiClient().generate(request(fake, generation_config=cfg))
    body = sent(fake)
    # (google-genai writes this field's keys in snake case; the API takes both)
    assert body["generationConfig"]["thinkingConfig"] == {
        "include_thoughts": False,
        "thinking_budget": 2048,
    }
    assert body["safetySettings"] == google["safetySettings"]


def test_a_malformed_google_option_is_a_config_error(fake: FakeGemini) -> None:
    cfg = {"providerOptions": {"google": {"thinkingConfig": {"thinkingBudget": "lots"}}}}
    with pytest.raises(ModelError) as info:
        GeminiClient().generate(request(fake, generation_config=cfg))
    assert info.value.status == "CONFIG_ERROR" and "providerOptions.google" in str(info.value)
    assert fake.requests == []


def test_unknown_reasoning_level_is_a_config_error(fake: FakeGemini) -> None:
    with pytest.raises(ModelError) as info:
        GeminiClient().generate(request(fake, generation_config={"reasoningLevel": "extreme"}))
    assert info.value.status == "CONFIG_ERROR" and not fake.requests


# --- replies ------------------------------------------------------------------------------------


def test_reply_text_usage_and_sanitized_raw(fake: FakeGemini) -> None:
    fake.push(
        g.text('{"answer": "a", "why": "because"}', thought="let me think", thoughts_tokens=40)
    )
    reply = GeminiClient().generate(request(fake))
    assert reply.text == '{"answer": "a", "why": "because"}'  # thoughts are not the answer
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (11, 7 + 40)
    raw = json.loads(reply.raw or "")
    parts = raw["candidates"][0]["content"]["parts"]
    assert parts[1]["thoughtSignature"] == "[THOUGHT SIGNATURE]"
    assert parts[0]["text"] == "let me think"  # thoughts stay in the log


def test_sanitize_replaces_blobs_like_deliberate_lab() -> None:
    raw = {"parts": [{"inlineData": {"data": "A" * 500, "mimeType": "image/png"}}, {"data": "x"}]}
    assert sanitize(raw) == {
        "parts": [{"inlineData": {"data": "[IMAGE DATA]", "mimeType": "image/png"}}, {"data": "x"}]
    }


def test_empty_reply_is_not_an_error(fake: FakeGemini) -> None:
    fake.push(g.empty())
    reply = GeminiClient().generate(request(fake))
    assert reply.text == "" and reply.usage.prompt_tokens == 5


def test_schema_violating_json_is_returned_for_the_caller_to_judge(fake: FakeGemini) -> None:
    fake.push(g.text('{"answer": "z"}'))
    assert GeminiClient().generate(request(fake)).text == '{"answer": "z"}'


def test_truncated_text_is_returned(fake: FakeGemini) -> None:
    fake.push(g.text('{"answer": "a", "wh', finish="MAX_TOKENS"))
    assert GeminiClient().generate(request(fake)).text == '{"answer": "a", "wh'


# --- faults -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "status", "retryable"),
    [
        (g.error(429), "QUOTA_ERROR", True),
        (g.error(503), "PROVIDER_UNAVAILABLE_ERROR", True),
        (g.error(500), "PROVIDER_UNAVAILABLE_ERROR", True),
        (g.error(401), "AUTHENTICATION_ERROR", False),
        (g.error(403), "AUTHENTICATION_ERROR", False),
        (g.bad_api_key(), "AUTHENTICATION_ERROR", False),
        (g.error(400, "Unknown name"), "CONFIG_ERROR", False),
        (g.error(404, "models/x is not found"), "CONFIG_ERROR", False),
        (malformed(), "PROVIDER_UNAVAILABLE_ERROR", True),
        (
            Step(200, b"<html>proxy error</html>", content_type="text/html"),
            "PROVIDER_UNAVAILABLE_ERROR",
            True,
        ),
        (g.prompt_blocked(), "REFUSAL_ERROR", False),
        (g.output_blocked(), "REFUSAL_ERROR", False),
        (g.max_tokens_empty(), "LENGTH_ERROR", False),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_fault_maps_to_status_and_retryability(
    fake: FakeGemini, step: Step, status: str, retryable: bool
) -> None:
    fake.push(step)
    with pytest.raises(ModelError) as info:
        GeminiClient().generate(request(fake))
    assert (info.value.status, info.value.retryable) == (status, retryable)
    assert len(fake.requests) == 1  # google-genai did not retry on its own


def test_wrong_key_is_an_authentication_error(fake: FakeGemini) -> None:
    with pytest.raises(ModelError) as info:
        GeminiClient().generate(request(fake, credentials=Credentials("wrong", fake.url)))
    assert info.value.status == "AUTHENTICATION_ERROR" and info.value.http_status == 400


def test_timeout_is_honoured(fake: FakeGemini) -> None:
    fake.push(slow(g.text("late"), 60.0))  # the fake wakes it at close
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        GeminiClient().generate(request(fake, timeout_s=0.3))
    assert time.monotonic() - started < 15.0  # far below the reply's 60 s, even on a loaded machine
    assert (info.value.status, info.value.retryable) == ("PROVIDER_UNAVAILABLE_ERROR", True)
    assert fake.requests[-1].headers["x-server-timeout"] == "1"


def test_connection_refused_is_retryable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    creds = Credentials(api_key=KEY, base_url=f"http://127.0.0.1:{port}")
    req = ModelRequest("hi", None, "gemini-2.5-flash", "s", credentials=creds, timeout_s=2)
    with pytest.raises(ModelError) as info:
        GeminiClient().generate(req)
    assert (info.value.status, info.value.retryable) == ("PROVIDER_UNAVAILABLE_ERROR", True)


@pytest.mark.parametrize("vertex", [False, True])
def test_missing_credentials_is_a_config_error(vertex: bool) -> None:
    req = ModelRequest("hi", None, "gemini-2.5-flash", "s", credentials=Credentials())
    with pytest.raises(ModelError) as info:
        GeminiClient(vertex=vertex).generate(req)
    assert info.value.status == "CONFIG_ERROR" and not info.value.retryable


# --- Vertex AI ----------------------------------------------------------------------------------


def test_vertex_express_mode_uses_the_api_key(fake: FakeGemini) -> None:
    GeminiClient(vertex=True).generate(request(fake))
    rec = fake.requests[-1]
    assert rec.path == "/v1beta1/publishers/google/models/gemini-2.5-flash:generateContent"
    assert rec.headers["x-goog-api-key"] == KEY
    assert rec.body["generationConfig"]["responseJsonSchema"] == SCHEMA


def test_vertex_project_mode_uses_oauth_and_the_project_path() -> None:
    token = google.oauth2.credentials.Credentials(token="ya29.test")  # type: ignore[no-untyped-call]
    with FakeGemini() as fake:
        creds = Credentials(project="my-proj", location="europe-west4", base_url=fake.url)
        reply = GeminiClient(vertex=True, google_credentials=token).generate(
            request(fake, credentials=creds)
        )
        rec = fake.requests[-1]
    assert reply.text == '{"ok": true}'
    assert rec.path == (
        "/v1beta1/projects/my-proj/locations/europe-west4/publishers/google/models/"
        "gemini-2.5-flash:generateContent"
    )
    assert rec.headers["authorization"] == "Bearer ya29.test"
    assert "x-goog-api-key" not in rec.headers
