"""OpenAICompatClient (OPENAI, OLLAMA) against a local fake Chat Completions server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from shared.llm.base import Credentials, Message, ModelError, ModelRequest
from shared.llm.openai_compat import MAX_RAW_CHARS, OpenAICompatClient, ollama_base_url
from tests.fakes import Step, json_step, malformed, slow
from tests.fakes import fake_openai as o
from tests.fakes.fake_openai import FakeOpenAI

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["a", "b"]}},
    "required": ["answer"],
}
KEY = "sk-test"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as server:
        yield server


def request(fake: FakeOpenAI, **overrides: Any) -> ModelRequest:
    fields: dict[str, Any] = {
        "prompt": "Pick a or b.",
        "response_schema": SCHEMA,
        "model_name": "gpt-5-mini",
        "seed": "agent:stage:1",
        "credentials": Credentials(api_key=KEY, base_url=fake.base_url),
        "timeout_s": 5.0,
    }
    fields.update(overrides)
    return ModelRequest(**fields)


def sent(fake: FakeOpenAI) -> dict[str, Any]:
    assert fake.requests, "no request reached the fake"
    return fake.requests[-1].body


# --- request mapping ---------------------------------------------------------------------------


def test_conversation_schema_and_key_go_over_the_wire(fake: FakeOpenAI) -> None:
    history = (Message("assistant", '{"answer": "c"}'), Message("user", "c is not allowed"))
    OpenAICompatClient().generate(request(fake, history=history))
    rec = fake.requests[-1]
    assert rec.path == "/v1/chat/completions"
    assert rec.headers["authorization"] == f"Bearer {KEY}"
    body = rec.body
    assert body["model"] == "gpt-5-mini"
    assert body["messages"] == [
        {"role": "user", "content": "Pick a or b."},
        {"role": "assistant", "content": '{"answer": "c"}'},
        {"role": "user", "content": "c is not allowed"},
    ]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": SCHEMA, "strict": False},
    }


def test_free_text_and_empty_config_send_only_model_and_messages(fake: FakeOpenAI) -> None:
    cfg = {
        "frequencyPenalty": 0,
        "presencePenalty": 0,
        "stopSequences": [],
        "reasoningLevel": "off",
    }
    OpenAICompatClient().generate(request(fake, response_schema=None, generation_config=cfg))
    assert set(sent(fake)) == {"model", "messages"}


FULL_CONFIG = {
    "temperature": 0.2,
    "topP": 0.9,
    "maxTokens": 256,
    "stopSequences": ["END"],
    "frequencyPenalty": 0.3,
    "presencePenalty": 0.1,
    "reasoningLevel": "medium",
}


def test_generation_config_is_mapped_for_openai(fake: FakeOpenAI) -> None:
    OpenAICompatClient("openai").generate(request(fake, generation_config=FULL_CONFIG))
    body = sent(fake)
    assert body["temperature"] == 0.2
    assert body["top_p"] == 0.9
    assert body["max_completion_tokens"] == 256 and "max_tokens" not in body
    assert body["stop"] == ["END"]
    assert body["frequency_penalty"] == 0.3
    assert body["presence_penalty"] == 0.1
    assert body["reasoning_effort"] == "medium"


def test_generation_config_is_mapped_for_ollama() -> None:
    with FakeOpenAI() as fake:
        creds = Credentials(base_url=fake.url)  # the Ollama server root, as experimenters enter it
        OpenAICompatClient("ollama").generate(
            request(fake, credentials=creds, generation_config=FULL_CONFIG)
        )
        rec = fake.requests[-1]
    assert rec.path == "/v1/chat/completions"
    assert "authorization" not in rec.headers
    assert rec.body["max_tokens"] == 256 and "max_completion_tokens" not in rec.body
    assert "reasoning_effort" not in rec.body  # DL maps no reasoning options for Ollama


@pytest.mark.parametrize("level", ["minimal", "off"])
def test_low_reasoning_levels_leave_the_provider_default(fake: FakeOpenAI, level: str) -> None:
    OpenAICompatClient().generate(request(fake, generation_config={"reasoningLevel": level}))
    assert "reasoning_effort" not in sent(fake)


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("http://host:11434", "http://host:11434/v1"),
        ("http://host:11434/", "http://host:11434/v1"),
        ("http://host:11434/api", "http://host:11434/v1"),
        ("http://example:80/api/chat", "http://example:80/v1"),
        ("http://host:11434/v1", "http://host:11434/v1"),
        ("https://ollama.com", "https://ollama.com/v1"),
    ],
)
def test_ollama_url_becomes_the_openai_compatible_base(url: str, base: str) -> None:
    assert ollama_base_url(url) == base


def test_ollama_api_key_is_sent_when_given() -> None:
    with FakeOpenAI(api_key="ollama-cloud") as fake:
        creds = Credentials(api_key="ollama-cloud", base_url=f"{fake.url}/api")
        reply = OpenAICompatClient("ollama").generate(request(fake, credentials=creds))
    assert reply.text == '{"ok": true}'


# --- replies ------------------------------------------------------------------------------------


def test_reply_text_usage_and_raw(fake: FakeOpenAI) -> None:
    fake.push(o.text('{"answer": "b"}', prompt_tokens=21, completion_tokens=4))
    reply = OpenAICompatClient().generate(request(fake))
    assert reply.text == '{"answer": "b"}'
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (21, 4)
    assert json.loads(reply.raw or "")["id"] == "chatcmpl-fake"


def test_raw_is_truncated(fake: FakeOpenAI) -> None:
    fake.push(o.text("x" * (MAX_RAW_CHARS * 2)))
    reply = OpenAICompatClient().generate(request(fake))
    assert len(reply.text) == MAX_RAW_CHARS * 2
    assert reply.raw is not None and len(reply.raw) < MAX_RAW_CHARS + 20


def test_empty_reply_is_not_an_error(fake: FakeOpenAI) -> None:
    fake.push(o.empty())
    assert OpenAICompatClient().generate(request(fake)).text == ""


def test_schema_violating_json_is_returned_for_the_caller_to_judge(fake: FakeOpenAI) -> None:
    fake.push(o.text('{"answer": "z"}'))
    assert OpenAICompatClient().generate(request(fake)).text == '{"answer": "z"}'


def test_truncated_text_is_returned(fake: FakeOpenAI) -> None:
    fake.push(o.text('{"ans', finish="length"))
    assert OpenAICompatClient().generate(request(fake)).text == '{"ans'


# --- faults -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "status", "retryable"),
    [
        (
            o.error(429, "Rate limit reached", "requests", "rate_limit_exceeded"),
            "QUOTA_ERROR",
            True,
        ),
        (
            o.error(
                429, "You exceeded your current quota", "insufficient_quota", "insufficient_quota"
            ),
            "QUOTA_ERROR",
            False,
        ),
        (o.error(503), "PROVIDER_UNAVAILABLE_ERROR", True),
        (o.error(500), "PROVIDER_UNAVAILABLE_ERROR", True),
        (
            Step(502, b"<html>Bad gateway</html>", content_type="text/html"),
            "PROVIDER_UNAVAILABLE_ERROR",
            True,
        ),
        (o.error(408), "PROVIDER_UNAVAILABLE_ERROR", True),
        (o.error(401, "Incorrect API key provided"), "AUTHENTICATION_ERROR", False),
        (o.error(403, "Project does not have access"), "AUTHENTICATION_ERROR", False),
        (o.error(400, "Unsupported parameter: 'max_tokens'"), "CONFIG_ERROR", False),
        (o.error(404, "The model `gpt-9` does not exist"), "CONFIG_ERROR", False),
        (malformed(), "PROVIDER_UNAVAILABLE_ERROR", True),
        (
            json_step({"object": "chat.completion", "choices": []}),
            "PROVIDER_UNAVAILABLE_ERROR",
            True,
        ),
        (o.refused(), "REFUSAL_ERROR", False),
        (o.content_filtered(), "REFUSAL_ERROR", False),
        (o.length_empty(), "LENGTH_ERROR", False),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_fault_maps_to_status_and_retryability(
    fake: FakeOpenAI, step: Step, status: str, retryable: bool
) -> None:
    fake.push(step)
    with pytest.raises(ModelError) as info:
        OpenAICompatClient().generate(request(fake))
    assert (info.value.status, info.value.retryable) == (status, retryable)


def test_error_message_comes_from_the_error_envelope(fake: FakeOpenAI) -> None:
    fake.push(o.error(400, "Invalid schema for response_format 'response'"))
    with pytest.raises(ModelError) as info:
        OpenAICompatClient().generate(request(fake))
    assert "Invalid schema for response_format" in str(info.value)
    assert info.value.http_status == 400 and info.value.raw and "invalid" in info.value.raw.lower()


def test_wrong_key_is_an_authentication_error(fake: FakeOpenAI) -> None:
    creds = Credentials(api_key="sk-wrong", base_url=fake.base_url)
    with pytest.raises(ModelError) as info:
        OpenAICompatClient().generate(request(fake, credentials=creds))
    assert info.value.status == "AUTHENTICATION_ERROR"


def test_timeout_is_honoured(fake: FakeOpenAI) -> None:
    fake.push(slow(o.text("late"), 60.0))  # the fake wakes it at close
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        OpenAICompatClient().generate(request(fake, timeout_s=0.3))
    assert time.monotonic() - started < 15.0  # far below the reply's 60 s, even on a loaded machine
    assert (info.value.status, info.value.retryable) == ("PROVIDER_UNAVAILABLE_ERROR", True)


def test_base_url_without_scheme_is_a_config_error() -> None:
    req = ModelRequest("hi", None, "m", "s", credentials=Credentials("k", "localhost:1234/v1"))
    with pytest.raises(ModelError) as info:
        OpenAICompatClient().generate(req)
    assert (info.value.status, info.value.retryable) == ("CONFIG_ERROR", False)


# --- the SDK: options, Azure, the environment -------------------------------------------------


def test_system_prompt_goes_first(fake: FakeOpenAI) -> None:
    OpenAICompatClient().generate(request(fake, system="Answer tersely."))
    assert sent(fake)["messages"][:2] == [
        {"role": "system", "content": "Answer tersely."},
        {"role": "user", "content": "Pick a or b."},
    ]


def test_provider_options_override_the_mapped_reasoning_effort(fake: FakeOpenAI) -> None:
    cfg = {"reasoningLevel": "low", "providerOptions": {"openai": {"reasoningEffort": "high"}}}
    OpenAICompatClient().generate(request(fake, generation_config=cfg))
    assert sent(fake)["reasoning_effort"] == "high"


def test_ollama_num_predict_is_max_tokens_when_max_tokens_is_unset() -> None:
    with FakeOpenAI() as fake:
        options = {"providerOptions": {"ollama": {"numPredict": 77, "numCtx": 8192}}}
        creds = Credentials(base_url=fake.url)
        OpenAICompatClient("ollama").generate(
            request(fake, credentials=creds, generation_config=options)
        )
        assert fake.requests[-1].body["max_tokens"] == 77
        both = {**options, "maxTokens": 5}
        OpenAICompatClient("ollama").generate(
            request(fake, credentials=creds, generation_config=both)
        )
        assert fake.requests[-1].body["max_tokens"] == 5


def test_the_sdk_does_not_retry_on_its_own(fake: FakeOpenAI) -> None:
    fake.push(o.error(503), o.text("never asked"))
    with pytest.raises(ModelError):
        OpenAICompatClient().generate(request(fake))
    assert len(fake.requests) == 1
    assert fake.requests[0].headers["x-stainless-retry-count"] == "0"


def test_the_sdk_takes_nothing_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A keyless compatible server gets no Authorization (not the deployment's OPENAI_API_KEY),
    and no request carries the deployment's organization or project."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-deployment")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-deployment")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-deployment")
    with FakeOpenAI() as fake:
        OpenAICompatClient().generate(
            request(fake, credentials=Credentials(base_url=fake.base_url))
        )
        headers = fake.requests[-1].headers
    assert not {"authorization", "openai-organization", "openai-project"} & set(headers)


AZURE_KEY = "azure-key"


def test_azure_openai_through_its_deployment_route() -> None:
    with FakeOpenAI(api_key=AZURE_KEY, azure=True) as fake:
        fake.push(o.text('{"answer": "a"}'))
        creds = Credentials(api_key=AZURE_KEY, base_url=fake.url, api_version="2024-10-21")
        reply = OpenAICompatClient().generate(request(fake, credentials=creds))
        rec = fake.requests[-1]
    assert reply.text == '{"answer": "a"}'
    assert rec.path == "/openai/deployments/gpt-5-mini/chat/completions?api-version=2024-10-21"
    assert rec.headers["api-key"] == AZURE_KEY and "authorization" not in rec.headers
    assert rec.body["response_format"]["type"] == "json_schema"


def test_azure_errors_map_like_openai_errors() -> None:
    with FakeOpenAI(api_key=AZURE_KEY, azure=True) as fake:
        creds = Credentials(api_key="wrong", base_url=fake.url, api_version="2024-10-21")
        with pytest.raises(ModelError) as info:
            OpenAICompatClient().generate(request(fake, credentials=creds))
    assert info.value.status == "AUTHENTICATION_ERROR"
