"""Who pays for a model call: the experiment creator's ``experimenterData.apiKeys`` (Deliberate
Lab's APIKeyConfig), else environment variables for local runs.

OpenAI's (or Azure OpenAI's), Claude's and Ollama's key and URL are taken as a unit from one
source, so an experimenter's key is never sent to a base URL that came from the environment.
GEMINI_BASE_URL is the exception: a deployment-wide endpoint override (local fakes, proxies).
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from shared.llm.base import Credentials, ModelError
from shared.llm.providers import effective_api_type
from shared.models import ApiType

DEFAULT_VERTEX_LOCATION = "us-central1"
DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
DEFAULT_AZURE_API_VERSION = "2024-10-21"
"""Azure OpenAI's GA api-version with structured outputs, when none is given."""
_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
_FIELD = "experimenterData.apiKeys"


def _str(value: Any) -> str | None:
    """A non-blank string, stripped; DL stores '' for unset keys."""
    return value.strip() if isinstance(value, str) and value.strip() else None


def _section(api_keys: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    section = (api_keys or {}).get(name)
    return section if isinstance(section, Mapping) else {}


def _env(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        if value := _str(env.get(name)):
            return value
    return None


def _missing(what: str, fields: str, env_vars: str) -> ModelError:
    return ModelError(
        "CONFIG_ERROR",
        f"no {what}: set {fields} on the experiment creator's experimenter document, "
        f"or {env_vars} in the environment for local runs",
    )


def _gemini(api_keys: Mapping[str, Any] | None, env: Mapping[str, str]) -> Credentials:
    key = _str((api_keys or {}).get("geminiApiKey")) or _env(
        env, "GEMINI_API_KEY", "GOOGLE_API_KEY"
    )
    if not key:
        raise _missing(
            "Gemini API key", f"{_FIELD}.geminiApiKey", "GEMINI_API_KEY (or GOOGLE_API_KEY)"
        )
    return Credentials(api_key=key, base_url=_env(env, "GEMINI_BASE_URL"))


def _project_of(service_account_json: Any) -> str | None:
    try:
        info = json.loads(service_account_json) if _str(service_account_json) else {}
    except ValueError:
        return None
    return _str(info.get("project_id")) if isinstance(info, dict) else None


def _vertex(api_keys: Mapping[str, Any] | None, env: Mapping[str, str]) -> Credentials:
    """Express mode (API key) wins, as in DL; else project+location, authenticated with the
    deployment's application default credentials (``serviceAccountJson`` only names the project:
    Credentials carries no service-account key)."""
    cfg = _section(api_keys, "vertexAIConfig")
    if key := _str(cfg.get("apiKey")):
        return Credentials(api_key=key)
    project = _str(cfg.get("project")) or _project_of(cfg.get("serviceAccountJson"))
    if project:
        location = _str(cfg.get("location")) or DEFAULT_VERTEX_LOCATION
        return Credentials(project=project, location=location)
    if project := _env(env, "GOOGLE_CLOUD_PROJECT"):
        location = _env(env, "GOOGLE_CLOUD_LOCATION") or DEFAULT_VERTEX_LOCATION
        return Credentials(project=project, location=location)
    if key := _env(env, "VERTEX_AI_API_KEY"):
        return Credentials(api_key=key)
    raise _missing(
        "Vertex AI configuration",
        f"{_FIELD}.vertexAIConfig.apiKey (or .project and .location)",
        "GOOGLE_CLOUD_PROJECT (+ GOOGLE_CLOUD_LOCATION) or VERTEX_AI_API_KEY",
    )


def _azure_endpoint(url: str | None) -> bool:
    """An Azure OpenAI resource endpoint that wants ``api-version`` (its ``/openai/v1`` API is
    plain OpenAI and goes without)."""
    if not url:
        return False
    parts = urllib.parse.urlsplit(url)
    host = (parts.hostname or "").lower()
    return host.endswith(_AZURE_HOSTS) and "/openai/v1" not in parts.path


def _openai_env(env: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """Key, base URL and Azure api-version from the environment, under the names the SDK
    documents: AZURE_OPENAI_ENDPOINT (with AZURE_OPENAI_API_KEY, OPENAI_API_VERSION) or
    OPENAI_API_KEY and OPENAI_BASE_URL."""
    if endpoint := _env(env, "AZURE_OPENAI_ENDPOINT"):
        version = _env(env, "OPENAI_API_VERSION", "AZURE_OPENAI_API_VERSION")
        return _env(env, "AZURE_OPENAI_API_KEY"), endpoint, version or DEFAULT_AZURE_API_VERSION
    return _env(env, "OPENAI_API_KEY"), _env(env, "OPENAI_BASE_URL"), None


def _openai(api_keys: Mapping[str, Any] | None, env: Mapping[str, str]) -> Credentials:
    """A key is required for api.openai.com and Azure; a custom base URL (a local server) may go
    without. An Azure endpoint (or an ``apiVersion`` beside DL's fields) makes it Azure OpenAI."""
    cfg = _section(api_keys, "openAIApiKey")
    key, base = _str(cfg.get("apiKey")), _str(cfg.get("baseUrl"))
    version = _str(cfg.get("apiVersion"))
    if not (key or base):
        key, base, version = _openai_env(env)
    if not version and _azure_endpoint(base):
        version = DEFAULT_AZURE_API_VERSION
    if not key and (not base or version):
        raise _missing(
            "OpenAI API key",
            f"{_FIELD}.openAIApiKey.apiKey",
            "OPENAI_API_KEY (AZURE_OPENAI_API_KEY for Azure)",
        )
    return Credentials(api_key=key, base_url=base, api_version=version)


def _ollama(api_keys: Mapping[str, Any] | None, env: Mapping[str, str]) -> Credentials:
    cfg = _section(api_keys, "ollamaApiKey")
    if url := _str(cfg.get("url")):
        return Credentials(api_key=_str(cfg.get("apiKey")), base_url=url)
    url = _env(env, "OLLAMA_BASE_URL") or DEFAULT_OLLAMA_URL
    return Credentials(api_key=_env(env, "OLLAMA_API_KEY"), base_url=url)


def _claude(api_keys: Mapping[str, Any] | None, env: Mapping[str, str]) -> Credentials:
    cfg = _section(api_keys, "claudeApiKey")
    key, base = _str(cfg.get("apiKey")), _str(cfg.get("baseUrl"))
    if not key:
        key, base = _env(env, "ANTHROPIC_API_KEY"), _env(env, "ANTHROPIC_BASE_URL")
    if not key:
        raise _missing("Claude API key", f"{_FIELD}.claudeApiKey.apiKey", "ANTHROPIC_API_KEY")
    return Credentials(api_key=key, base_url=base)


_RESOLVERS: dict[str, Callable[[Mapping[str, Any] | None, Mapping[str, str]], Credentials]] = {
    ApiType.GEMINI: _gemini,
    ApiType.VERTEX_AI: _vertex,
    ApiType.OPENAI: _openai,
    ApiType.OLLAMA: _ollama,
    ApiType.CLAUDE: _claude,
}


def credentials_for(
    api_type: str, api_keys: Mapping[str, Any] | None, env: Mapping[str, str] = os.environ
) -> Credentials:
    """Credentials for ``api_type`` (after the local override, as client_for applies it) from
    DL's APIKeyConfig dict (camelCase) or ``env``; CONFIG_ERROR naming what to set if neither."""
    effective = effective_api_type(api_type, env)
    if effective == ApiType.SCRIPTED:
        return Credentials()
    resolve = _RESOLVERS.get(effective)
    if resolve is None:
        raise ModelError("CONFIG_ERROR", f"unknown apiType {effective!r}")
    return resolve(api_keys, env)
