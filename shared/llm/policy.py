"""How a model call is made (shared/llm's deployment settings; docs/SETTINGS.md lists them all).

Read at each call so a test or an operator can change them without a redeploy of code:

- ``DLAB_MODEL_OVERRIDE`` (none): run agents on another provider than their own: one apiType
  for every agent (``SCRIPTED``), or per provider (``GEMINI=SCRIPTED,OPENAI=SCRIPTED``) so that
  only the providers without credentials are replaced (the local runtime sets it).
- ``DLAB_MODEL_MAX_ATTEMPTS`` (6): provider attempts per turn within one function invocation;
  past them (or the deadline) the call raises ProviderFailing and the move is handed to the
  retrying wake function.
- ``DLAB_MODEL_BACKOFF_S`` (0.5) and ``DLAB_MODEL_BACKOFF_MAX_S`` (20): the jittered exponential
  backoff between provider attempts.
- ``DLAB_MOVE_ON_WITHOUT_ANSWER`` (true): when well-formed replies keep failing the stage's
  validation after the corrective turns, the agent records why and moves on without an answer
  (Deliberate Lab's behaviour); ``false`` keeps it at the stage with an error record instead.
  A failing provider never makes an agent move on, whatever this says.
"""

from __future__ import annotations

from collections.abc import Mapping

import tenacity
from pydantic import Field, ValidationError
from tenacity.wait import wait_base

from shared.llm.base import ModelError
from shared.settings import DlabSettings, described


class CallPolicy(DlabSettings):
    model_override: str = ""
    max_attempts: int = Field(default=6, ge=1, le=1000, validation_alias="DLAB_MODEL_MAX_ATTEMPTS")
    backoff_s: float = Field(default=0.5, gt=0, le=60, validation_alias="DLAB_MODEL_BACKOFF_S")
    backoff_max_s: float = Field(
        default=20.0, gt=0, le=600, validation_alias="DLAB_MODEL_BACKOFF_MAX_S"
    )
    move_on_without_answer: bool = True

    def wait(self) -> wait_base:
        return tenacity.wait_random_exponential(multiplier=self.backoff_s, max=self.backoff_max_s)

    def overridden(self) -> dict[str, str] | str | None:
        """``"X"`` (every provider becomes X), ``"A=X,B=Y"`` (per provider), or None."""
        value = self.model_override.strip()
        if not value:
            return None
        if "=" not in value:
            return value
        pairs = (item.split("=", 1) for item in value.split(",") if item.strip())
        return {source.strip(): target.strip() for source, target in pairs}


def call_policy(env: Mapping[str, str] | None = None) -> CallPolicy:
    """The deployment's policy (or the one ``env`` gives); a mistyped setting is a CONFIG_ERROR
    naming its variable, recorded where the call was to be made, not a crash."""
    try:
        return CallPolicy.current() if env is None else CallPolicy.of(env)
    except ValidationError as error:
        raise ModelError("CONFIG_ERROR", f"deployment setting {described(error)}") from None
