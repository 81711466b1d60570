"""Which client serves a model setting: GEMINI and VERTEX_AI through google-genai, OPENAI and
OLLAMA through the OpenAI-compatible Chat Completions API, SCRIPTED offline. CLAUDE is not
supported yet."""

from __future__ import annotations

import os

from shared.llm.base import ModelClient, ModelError
from shared.llm.gemini import GeminiClient
from shared.llm.openai_compat import OpenAICompatClient
from shared.llm.scripted import ScriptedModel
from shared.models import ApiType

MODEL_OVERRIDE_ENV = "DLAB_MODEL_OVERRIDE"
"""Set by the local runtime to run every agent on one provider (e.g. SCRIPTED without keys)."""

_CLIENTS: dict[str, ModelClient] = {
    ApiType.GEMINI: GeminiClient(vertex=False),
    ApiType.VERTEX_AI: GeminiClient(vertex=True),
    ApiType.OPENAI: OpenAICompatClient("openai"),
    ApiType.OLLAMA: OpenAICompatClient("ollama"),
    ApiType.SCRIPTED: ScriptedModel(),
}


def effective_api_type(api_type: str) -> str:
    return os.environ.get(MODEL_OVERRIDE_ENV) or api_type


def client_for(api_type: str) -> ModelClient:
    """The client for ``api_type`` (after the local override), or a CONFIG_ERROR saying why not."""
    effective = effective_api_type(api_type)
    client = _CLIENTS.get(effective)
    if client is None:
        known = ", ".join(t.value for t in ApiType)
        if effective in {t.value for t in ApiType}:
            reason = f"no provider for apiType {effective}: not supported yet in this port"
        else:
            reason = f"unknown apiType {effective!r} (expected one of {known})"
        raise ModelError("CONFIG_ERROR", reason, field="agentConfig.modelSettings.apiType")
    return client


def registered() -> set[str]:
    """apiTypes that have a client in this deployment."""
    return set(_CLIENTS)


def clients() -> dict[str, ModelClient]:
    """A copy of the apiType → client table (to wrap and later restore it)."""
    return dict(_CLIENTS)


def register(api_type: str, client: ModelClient) -> None:
    _CLIENTS[api_type] = client
