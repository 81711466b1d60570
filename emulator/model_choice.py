"""Which model each agent runs on under ``make up``: its own provider when that provider has
credentials in the environment, the offline scripted model otherwise (per provider, so one key in
the shell does not send every other agent to a provider that cannot answer)."""

from __future__ import annotations

from collections.abc import Mapping

from shared.llm.providers import effective_api_type, registered
from shared.models import ApiType

SCRIPTED = ApiType.SCRIPTED.value

KEY_VARS: Mapping[str, tuple[str, ...]] = {
    ApiType.GEMINI: ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    ApiType.VERTEX_AI: ("VERTEX_AI_API_KEY",),
    ApiType.OPENAI: ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    ApiType.OLLAMA: ("OLLAMA_BASE_URL",),
    ApiType.CLAUDE: ("ANTHROPIC_API_KEY",),
}
"""The variables that give a provider credentials locally (Ollama needs its server named: its
default localhost URL alone is no sign that one runs)."""


def keyed(env: Mapping[str, str]) -> set[str]:
    """Providers that have a client here and credentials in ``env``."""
    return {
        str(api)
        for api, names in KEY_VARS.items()
        if api in registered() and any((env.get(name) or "").strip() for name in names)
    }


def override(requested: str | None, env: Mapping[str, str]) -> str | None:
    """The value for DLAB_MODEL_OVERRIDE: ``--model-override`` if given (``none`` disables it),
    else the one already in the environment, else SCRIPTED for every provider without credentials.
    """
    if requested:
        return None if requested.lower() == "none" else requested
    if env.get("DLAB_MODEL_OVERRIDE"):
        return env["DLAB_MODEL_OVERRIDE"]
    replaced = sorted(str(api) for api in KEY_VARS if api not in keyed(env))
    return ",".join(f"{api}={SCRIPTED}" for api in replaced) or None


def runs_on(api_type: str, override_value: str | None) -> str:
    """The apiType an agent configured with ``api_type`` runs on under ``override_value``."""
    return effective_api_type(api_type, {"DLAB_MODEL_OVERRIDE": override_value or ""})


def describe(override_value: str | None) -> str:
    """One line for the banner: the providers whose agents keep their own model, and where the
    others' agents run instead."""
    moved: dict[str, list[str]] = {}
    own: list[str] = []
    for api in KEY_VARS:
        target = runs_on(api, override_value)
        (own if target == api else moved.setdefault(target, [])).append(str(api))
    parts = [f"own provider: {', '.join(own)}"] if own else []
    parts += [f"on {target}: {', '.join(apis)}" for target, apis in moved.items()]
    return " · ".join(parts)
