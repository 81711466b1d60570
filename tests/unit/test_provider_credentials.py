"""credentials_for: experimenterData.apiKeys (DL's APIKeyConfig) first, the environment second."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.llm.base import Credentials, ModelError
from shared.llm.credentials import DEFAULT_AZURE_API_VERSION, credentials_for

ENV = {
    "GEMINI_API_KEY": "env-gemini",
    "GOOGLE_CLOUD_PROJECT": "env-project",
    "GOOGLE_CLOUD_LOCATION": "europe-west1",
    "OPENAI_API_KEY": "env-openai",
    "OPENAI_BASE_URL": "http://env-proxy/v1",
    "OLLAMA_BASE_URL": "http://env-ollama:11434",
    "ANTHROPIC_API_KEY": "env-claude",
}

API_KEYS = {
    "geminiApiKey": "xd-gemini",
    "vertexAIConfig": {"apiKey": "xd-vertex"},
    "openAIApiKey": {"apiKey": "xd-openai", "baseUrl": ""},
    "claudeApiKey": {"apiKey": "xd-claude", "baseUrl": ""},
    "ollamaApiKey": {"url": "http://xd-ollama:11434/api", "apiKey": ""},
}

DL_EMPTY = {  # createExperimenterData(): '' means unset
    "geminiApiKey": "",
    "openAIApiKey": {"apiKey": "", "baseUrl": ""},
    "ollamaApiKey": {"url": "", "apiKey": ""},
}


@pytest.mark.parametrize(
    ("api_type", "expected"),
    [
        ("GEMINI", Credentials(api_key="xd-gemini")),
        ("VERTEX_AI", Credentials(api_key="xd-vertex")),
        ("OPENAI", Credentials(api_key="xd-openai")),  # env base URL not mixed in
        ("OLLAMA", Credentials(base_url="http://xd-ollama:11434/api")),
        ("CLAUDE", Credentials(api_key="xd-claude")),
    ],
)
def test_experimenter_data_wins_over_env(api_type: str, expected: Credentials) -> None:
    assert credentials_for(api_type, API_KEYS, ENV) == expected


@pytest.mark.parametrize(
    ("api_type", "expected"),
    [
        ("GEMINI", Credentials(api_key="env-gemini")),
        ("VERTEX_AI", Credentials(project="env-project", location="europe-west1")),
        ("OPENAI", Credentials(api_key="env-openai", base_url="http://env-proxy/v1")),
        ("OLLAMA", Credentials(base_url="http://env-ollama:11434")),
        ("CLAUDE", Credentials(api_key="env-claude")),
    ],
)
@pytest.mark.parametrize("api_keys", [None, {}, DL_EMPTY])
def test_env_is_the_fallback(
    api_type: str, expected: Credentials, api_keys: dict[str, Any] | None
) -> None:
    assert credentials_for(api_type, api_keys, ENV) == expected


@pytest.mark.parametrize(
    ("api_type", "field", "env_var"),
    [
        ("GEMINI", "experimenterData.apiKeys.geminiApiKey", "GEMINI_API_KEY"),
        ("VERTEX_AI", "experimenterData.apiKeys.vertexAIConfig.apiKey", "GOOGLE_CLOUD_PROJECT"),
        ("OPENAI", "experimenterData.apiKeys.openAIApiKey.apiKey", "OPENAI_API_KEY"),
        ("CLAUDE", "experimenterData.apiKeys.claudeApiKey.apiKey", "ANTHROPIC_API_KEY"),
    ],
)
def test_missing_credentials_say_what_to_set(api_type: str, field: str, env_var: str) -> None:
    with pytest.raises(ModelError) as info:
        credentials_for(api_type, DL_EMPTY, {})
    assert info.value.status == "CONFIG_ERROR" and not info.value.retryable
    assert field in str(info.value) and env_var in str(info.value)


def test_gemini_accepts_google_api_key_and_a_base_url_override() -> None:
    env = {"GOOGLE_API_KEY": "g", "GEMINI_BASE_URL": "http://127.0.0.1:9999"}
    assert credentials_for("GEMINI", None, env) == Credentials("g", "http://127.0.0.1:9999")
    both = {"GEMINI_API_KEY": "first", "GOOGLE_API_KEY": "second"}
    assert credentials_for("GEMINI", None, both).api_key == "first"


def test_keys_are_stripped() -> None:
    assert credentials_for("GEMINI", {"geminiApiKey": "  k \n"}, {}).api_key == "k"


def test_vertex_project_from_config_with_default_location() -> None:
    keys = {"vertexAIConfig": {"project": "p", "location": ""}}
    assert credentials_for("VERTEX_AI", keys, ENV) == Credentials(
        project="p", location="us-central1"
    )


def test_vertex_api_key_wins_over_project_as_in_deliberate_lab() -> None:
    keys = {"vertexAIConfig": {"apiKey": "vk", "project": "p", "location": "l"}}
    assert credentials_for("VERTEX_AI", keys, {}) == Credentials(api_key="vk")


def test_vertex_project_from_service_account_json() -> None:
    sa = json.dumps({"type": "service_account", "project_id": "sa-proj", "client_email": "x"})
    keys = {"vertexAIConfig": {"serviceAccountJson": sa, "location": "asia-east1"}}
    assert credentials_for("VERTEX_AI", keys, {}) == Credentials(
        project="sa-proj", location="asia-east1"
    )


def test_vertex_env_defaults() -> None:
    assert credentials_for("VERTEX_AI", None, {"GOOGLE_CLOUD_PROJECT": "p"}) == Credentials(
        project="p", location="us-central1"
    )
    assert credentials_for("VERTEX_AI", None, {"VERTEX_AI_API_KEY": "vk"}) == Credentials("vk")


def test_openai_compatible_server_without_key() -> None:
    keys = {"openAIApiKey": {"apiKey": "", "baseUrl": "http://vllm:8000/v1"}}
    assert credentials_for("OPENAI", keys, ENV) == Credentials(base_url="http://vllm:8000/v1")


def test_ollama_defaults_to_localhost() -> None:
    assert credentials_for("OLLAMA", DL_EMPTY, {}) == Credentials(base_url="http://127.0.0.1:11434")
    keys = {"ollamaApiKey": {"url": "https://ollama.com", "apiKey": "ok"}}
    assert credentials_for("OLLAMA", keys, {}) == Credentials("ok", "https://ollama.com")


def test_the_local_override_needs_no_keys() -> None:
    env = {"DLAB_MODEL_OVERRIDE": "SCRIPTED"}
    assert credentials_for("GEMINI", None, env) == Credentials()


def test_the_local_override_picks_the_provider() -> None:
    env = {"DLAB_MODEL_OVERRIDE": "OLLAMA", "OLLAMA_BASE_URL": "http://box:11434"}
    assert credentials_for("GEMINI", API_KEYS | {"ollamaApiKey": {}}, env).base_url == (
        "http://box:11434"
    )


def test_unknown_api_type() -> None:
    with pytest.raises(ModelError) as info:
        credentials_for("BANANA", None, {})
    assert info.value.status == "CONFIG_ERROR" and "BANANA" in str(info.value)


AZURE = "https://my-resource.openai.azure.com"


@pytest.mark.parametrize(
    ("keys", "env", "expected"),
    [
        (  # an Azure endpoint in DL's openAIApiKey: Azure, with the default api-version
            {"openAIApiKey": {"apiKey": "az", "baseUrl": AZURE}},
            {},
            Credentials(api_key="az", base_url=AZURE, api_version=DEFAULT_AZURE_API_VERSION),
        ),
        (  # an apiVersion beside DL's fields
            {
                "openAIApiKey": {
                    "apiKey": "az",
                    "baseUrl": "http://proxy",
                    "apiVersion": "2025-01-01",
                }
            },
            {},
            Credentials(api_key="az", base_url="http://proxy", api_version="2025-01-01"),
        ),
        (  # Azure's /openai/v1 API is plain OpenAI
            {"openAIApiKey": {"apiKey": "az", "baseUrl": f"{AZURE}/openai/v1/"}},
            {},
            Credentials(api_key="az", base_url=f"{AZURE}/openai/v1/"),
        ),
        (  # the SDK's environment names
            None,
            {"AZURE_OPENAI_ENDPOINT": AZURE, "AZURE_OPENAI_API_KEY": "env-az", **ENV},
            Credentials(api_key="env-az", base_url=AZURE, api_version=DEFAULT_AZURE_API_VERSION),
        ),
        (
            None,
            {
                "AZURE_OPENAI_ENDPOINT": AZURE,
                "AZURE_OPENAI_API_KEY": "k",
                "OPENAI_API_VERSION": "v",
            },
            Credentials(api_key="k", base_url=AZURE, api_version="v"),
        ),
    ],
)
def test_azure_openai(
    keys: dict[str, Any] | None, env: dict[str, str], expected: Credentials
) -> None:
    assert credentials_for("OPENAI", keys, env) == expected


def test_azure_needs_a_key() -> None:
    with pytest.raises(ModelError) as info:
        credentials_for("OPENAI", None, {"AZURE_OPENAI_ENDPOINT": AZURE})
    assert "AZURE_OPENAI_API_KEY" in str(info.value)
