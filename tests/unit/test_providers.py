"""The provider registry, and each real provider end to end: credentials_for -> client_for ->
generate against a local fake of its protocol."""

from __future__ import annotations

import pytest

from shared.llm.base import ModelError, ModelRequest
from shared.llm.claude import ClaudeClient
from shared.llm.credentials import credentials_for
from shared.llm.gemini import GeminiClient
from shared.llm.openai_compat import OpenAICompatClient
from shared.llm.providers import client_for, registered
from shared.llm.scripted import ScriptedModel
from shared.models import ApiType
from tests.fakes import fake_anthropic as a
from tests.fakes import fake_gemini as g
from tests.fakes import fake_openai as o
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.fake_openai import FakeOpenAI

SCHEMA = {"type": "object", "properties": {"vote": {"type": "string"}}, "required": ["vote"]}


@pytest.fixture(autouse=True)
def _no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE", raising=False)


def test_every_provider_is_registered() -> None:
    assert {t.value for t in ApiType} == registered()


@pytest.mark.parametrize(
    ("api_type", "kind", "detail"),
    [
        ("GEMINI", GeminiClient, False),
        ("VERTEX_AI", GeminiClient, True),
        ("OPENAI", OpenAICompatClient, "openai"),
        ("OLLAMA", OpenAICompatClient, "ollama"),
        ("CLAUDE", ClaudeClient, None),
    ],
)
def test_client_for_each_api_type(api_type: str, kind: type, detail: object) -> None:
    client = client_for(api_type)
    assert isinstance(client, kind)
    assert getattr(client, "vertex", getattr(client, "flavour", None)) == detail


def test_unknown_api_type() -> None:
    with pytest.raises(ModelError) as info:
        client_for("BANANA")
    assert info.value.status == "CONFIG_ERROR" and "'BANANA'" in str(info.value)


def test_override_still_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLAB_MODEL_OVERRIDE", "SCRIPTED")
    assert isinstance(client_for("GEMINI"), ScriptedModel)


def test_gemini_end_to_end() -> None:
    with FakeGemini(api_key="xd-key") as fake:
        fake.push(g.text('{"vote": "yes"}', prompt_tokens=30, output_tokens=5))
        creds = credentials_for("GEMINI", {"geminiApiKey": "xd-key"}, {"GEMINI_BASE_URL": fake.url})
        request = ModelRequest("Vote.", SCHEMA, "gemini-3-flash-preview", "s", credentials=creds)
        reply = client_for("GEMINI").generate(request)
    assert reply.text == '{"vote": "yes"}' and reply.usage.total_tokens == 35


@pytest.mark.parametrize("api_type", ["OPENAI", "OLLAMA"])
def test_openai_compatible_end_to_end(api_type: str) -> None:
    with FakeOpenAI() as fake:
        fake.push(o.text('{"vote": "no"}', prompt_tokens=8, completion_tokens=3))
        keys = {
            "openAIApiKey": {"apiKey": "sk-x", "baseUrl": fake.base_url},
            "ollamaApiKey": {"url": fake.url, "apiKey": ""},
        }
        creds = credentials_for(api_type, keys, {})
        request = ModelRequest("Vote.", SCHEMA, "some-model", "s", credentials=creds)
        reply = client_for(api_type).generate(request)
        sent = fake.requests[-1]
    assert reply.text == '{"vote": "no"}' and reply.usage.total_tokens == 11
    assert sent.body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert ("authorization" in sent.headers) == (api_type == "OPENAI")


def test_claude_end_to_end() -> None:
    with FakeAnthropic(api_key="sk-ant-x") as fake:
        fake.push(a.tool_use({"vote": "maybe"}, input_tokens=9, output_tokens=4))
        keys = {"claudeApiKey": {"apiKey": "sk-ant-x", "baseUrl": fake.base_url}}
        creds = credentials_for("CLAUDE", keys, {})
        request = ModelRequest("Vote.", SCHEMA, "claude-haiku-4-5", "s", credentials=creds)
        reply = client_for("CLAUDE").generate(request)
        sent = fake.requests[-1]
    assert reply.text == '{"vote": "maybe"}' and reply.usage.total_tokens == 13
    assert sent.body["tools"][0]["input_schema"] == SCHEMA


def test_the_override_can_replace_only_some_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLAB_MODEL_OVERRIDE", "GEMINI=SCRIPTED, VERTEX_AI=SCRIPTED")
    assert isinstance(client_for("GEMINI"), ScriptedModel)
    assert isinstance(client_for("OPENAI"), OpenAICompatClient)
    assert (
        credentials_for("GEMINI", None, {"DLAB_MODEL_OVERRIDE": "GEMINI=SCRIPTED"}).api_key is None
    )
