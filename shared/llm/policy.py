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
from pydantic_settings import BaseSettings, SettingsConfigDict
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


class Price(BaseModel):
    """A model's list price in US dollars per million tokens."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    input_per_mtok: float = Field(alias="inputPerMTok", ge=0)
    output_per_mtok: float = Field(alias="outputPerMTok", ge=0)


class SpendSettings(BaseSettings):
    """How a run's model calls are counted and priced (``functions.spend``, docs/COST.md).

    - ``DLAB_SPEND_SHARDS`` (16): counter documents a run's totals are spread over, so that
      every agent of a large run does not write one document.
    - ``DLAB_MODEL_PRICES`` (none): a JSON table ``{"model-name": {"inputPerMTok": 0.15,
      "outputPerMTok": 0.6}}``; a call to a model in it adds its cost to ``costUsd`` (a run's
      ``budget.maxCostUsd`` counts only priced calls).
    - ``DLAB_BUDGET_REFRESH_SECONDS`` (5): how long an instance trusts its read of a run's
      ``budget`` field: a run without a budget then costs no read before each model call (a
      round trip on every reply's critical path), and a budget set or raised in the console
      takes effect within this long.
    """

    model_config = SettingsConfigDict(env_prefix="DLAB_", extra="ignore")

    spend_shards: int = Field(default=16, ge=1, le=500)
    budget_refresh_seconds: float = Field(default=5.0, ge=0, le=600)
    model_prices: dict[str, Price] = Field(default_factory=dict)

    def cost_usd(self, model_name: str, prompt_tokens: int, completion_tokens: int) -> float:
        price = self.model_prices.get(model_name)
        if price is None:
            return 0.0
        return (
            prompt_tokens * price.input_per_mtok + completion_tokens * price.output_per_mtok
        ) / 1e6


class RateLimit(BaseModel):
    """One provider's quota; 0 leaves that dimension unlimited."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    requests_per_minute: int = Field(default=0, alias="requestsPerMinute", ge=0)
    tokens_per_minute: int = Field(default=0, alias="tokensPerMinute", ge=0)


class RateLimitSettings(BaseSettings):
    """The per-provider rate limit every instance shares (``functions.rate_limit``), off unless
    set.

    - ``DLAB_RATE_LIMITS``: a JSON table by effective apiType, e.g. ``{"OPENAI":
      {"requestsPerMinute": 1000, "tokensPerMinute": 200000}}``.
    - ``DLAB_RATE_WINDOW_SECONDS`` (60): the counting window; each gets the per-minute limits
      scaled to its length (a shorter window smooths bursts at its edges).
    - ``DLAB_RATE_SHARDS`` (10): documents a window's quota is split over (at most the
      window's request limit), so no one document takes every caller's write.
    - ``DLAB_RATE_GUARD_SECONDS`` (1): no slot is given in a window's last this many seconds
      (at most a quarter of it), so a request reaches the provider within the window it was
      counted in, not in the next one beside that window's own.
    """

    model_config = SettingsConfigDict(env_prefix="DLAB_", extra="ignore")

    rate_limits: dict[str, RateLimit] = Field(default_factory=dict)
    rate_window_seconds: float = Field(default=60.0, gt=0, le=3600)
    rate_shards: int = Field(default=10, ge=1, le=500)
    rate_guard_seconds: float = Field(default=1.0, ge=0, le=60)

    def guard_s(self) -> float:
        return min(self.rate_guard_seconds, self.rate_window_seconds / 4)
