"""How hard a model call tries, and what an agent does when the model never answers validly.

Deployment settings (environment variables), read at each call so a test or an operator can
change them without a redeploy of code:

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

import os
from collections.abc import Mapping

import tenacity
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tenacity.wait import wait_base

ENV = {
    "max_attempts": "DLAB_MODEL_MAX_ATTEMPTS",
    "backoff_s": "DLAB_MODEL_BACKOFF_S",
    "backoff_max_s": "DLAB_MODEL_BACKOFF_MAX_S",
    "move_on_without_answer": "DLAB_MOVE_ON_WITHOUT_ANSWER",
}


class CallPolicy(BaseModel):
    model_config = ConfigDict(frozen=True)

    max_attempts: int = Field(default=6, ge=1, le=1000)
    backoff_s: float = Field(default=0.5, gt=0, le=60)
    backoff_max_s: float = Field(default=20.0, gt=0, le=600)
    move_on_without_answer: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> CallPolicy:
        """The policy from the environment; a bad value is a ValueError naming its variable
        (an operator's typo must not silently become the default)."""
        env = os.environ if env is None else env
        values = {field: env[name] for field, name in ENV.items() if env.get(name, "").strip()}
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            first = exc.errors()[0]
            name = ENV[str(first["loc"][0])]
            raise ValueError(f"{name}={values[str(first['loc'][0])]!r}: {first['msg']}") from None

    def wait(self) -> wait_base:
        return tenacity.wait_random_exponential(multiplier=self.backoff_s, max=self.backoff_max_s)
