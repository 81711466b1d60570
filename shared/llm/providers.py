"""Which client serves a model setting: GEMINI and VERTEX_AI through google-genai, OPENAI and
OLLAMA through the openai SDK (Chat Completions), CLAUDE through the anthropic SDK, SCRIPTED
offline (docs/MODELS.md)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping

from shared.llm.base import ModelClient, ModelError
from shared.llm.claude import ClaudeClient
from shared.llm.gemini import GeminiClient
from shared.llm.openai_compat import OpenAICompatClient
from shared.llm.policy import call_policy
from shared.llm.scripted import ScriptedModel
from shared.models import ApiType

ClientWrapper = Callable[[ModelClient], ModelClient]

_CLIENTS: Mapping[str, ModelClient] = {
    ApiType.GEMINI: GeminiClient(vertex=False),
    ApiType.VERTEX_AI: GeminiClient(vertex=True),
    ApiType.OPENAI: OpenAICompatClient("openai"),
    ApiType.OLLAMA: OpenAICompatClient("ollama"),
    ApiType.CLAUDE: ClaudeClient(),
    ApiType.SCRIPTED: ScriptedModel(),
}

_WRAPPER: contextvars.ContextVar[ClientWrapper | None] = contextvars.ContextVar(
    "dlab_model_client_wrapper", default=None
)


def effective_api_type(api_type: str, env: Mapping[str, str] | None = None) -> str:
    """The apiType an agent configured with ``api_type`` really runs on (after the override
    ``DLAB_MODEL_OVERRIDE`` of the environment, or of ``env`` when given)."""
    override = call_policy(env).overridden()
    if isinstance(override, dict):
        return override.get(api_type) or api_type
    return override or api_type


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
    wrap = _WRAPPER.get()
    return wrap(client) if wrap is not None else client


def registered() -> set[str]:
    """apiTypes that have a client in this deployment."""
    return set(_CLIENTS)


@contextlib.contextmanager
def wrapped(wrap: ClientWrapper | None) -> Iterator[None]:
    """``client_for`` returns ``wrap(client)`` in this context (thread, task) until the block ends.

    The way to change what the clients do (the local runtime's fault injection) without touching
    the shared table: nothing outside the block, and no other thread, sees the wrapper."""
    token = _WRAPPER.set(wrap)
    try:
        yield
    finally:
        _WRAPPER.reset(token)
