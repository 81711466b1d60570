"""Which client serves a model setting: GEMINI and VERTEX_AI through google-genai, OPENAI and
OLLAMA through the openai SDK (Chat Completions), CLAUDE through the anthropic SDK, SCRIPTED
offline (docs/MODELS.md).

A provider's module, and its SDK, is imported at the first call that needs it: the SDKs take
seconds of CPU to import (anthropic, google-genai, openai), and a function whose run uses none
of them (a wake, the scripted model) must not pay for them at its cold start."""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Literal

from shared.llm.base import ModelClient, ModelError
from shared.llm.policy import call_policy
from shared.models import ApiType

ClientWrapper = Callable[[ModelClient], ModelClient]


def _gemini(vertex: bool) -> ModelClient:
    from shared.llm.gemini import GeminiClient

    return GeminiClient(vertex=vertex)


def _openai_compat(flavour: Literal["openai", "ollama"]) -> ModelClient:
    from shared.llm.openai_compat import OpenAICompatClient

    return OpenAICompatClient(flavour)


def _claude() -> ModelClient:
    from shared.llm.claude import ClaudeClient

    return ClaudeClient()


def _scripted() -> ModelClient:
    from shared.llm.scripted import ScriptedModel

    return ScriptedModel()


_FACTORIES: Mapping[str, Callable[[], ModelClient]] = {
    ApiType.GEMINI: functools.partial(_gemini, False),
    ApiType.VERTEX_AI: functools.partial(_gemini, True),
    ApiType.OPENAI: functools.partial(_openai_compat, "openai"),
    ApiType.OLLAMA: functools.partial(_openai_compat, "ollama"),
    ApiType.CLAUDE: _claude,
    ApiType.SCRIPTED: _scripted,
}
"""How each apiType's client is made; made once, at its first use (``_client``)."""


@functools.cache
def _client(api_type: str) -> ModelClient:
    return _FACTORIES[api_type]()


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
    if effective not in _FACTORIES:
        known = ", ".join(t.value for t in ApiType)
        if effective in {t.value for t in ApiType}:
            reason = f"no provider for apiType {effective}: not supported yet in this port"
        else:
            reason = f"unknown apiType {effective!r} (expected one of {known})"
        raise ModelError("CONFIG_ERROR", reason, field="agentConfig.modelSettings.apiType")
    client = _client(effective)
    wrap = _WRAPPER.get()
    return wrap(client) if wrap is not None else client


def registered() -> set[str]:
    """apiTypes that have a client in this deployment."""
    return set(_FACTORIES)


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
