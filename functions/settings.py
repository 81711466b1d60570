"""The backbone's deployment settings (functions/*.py), read from the environment each time they
are asked for (``shared.settings``; every one is listed in docs/SETTINGS.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import NoDecode

from shared.models import ApiType
from shared.settings import DlabSettings


class Price(BaseModel):
    """A model's list price in US dollars per million tokens."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    input_per_mtok: float = Field(alias="inputPerMTok", ge=0)
    output_per_mtok: float = Field(alias="outputPerMTok", ge=0)


class RateLimit(BaseModel):
    """One provider's quota; 0 leaves that dimension unlimited."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    requests_per_minute: int = Field(default=0, alias="requestsPerMinute", ge=0)
    tokens_per_minute: int = Field(default=0, alias="tokensPerMinute", ge=0)


class BackboneSettings(DlabSettings):
    """How units of work, events, reads, spend and the shared rate limit are bounded.

    - ``DLAB_WORK_MAX_ATTEMPTS`` (3): attempts of one unit (each counted in Firestore before it
      starts); past them the unit ends with one error record instead of running again.
    - ``DLAB_WORK_MAX_PLATFORM_FAILURES`` (20): times one unit may be interrupted by the
      platform (its holder died with the lease, or Firestore or Pub/Sub failed transiently)
      before it ends; these are not the work's fault and do not count as its attempts.
    - ``DLAB_JOURNAL_RETENTION_DAYS`` (90; 0: kept for ever): how long a recorded model reply
      is kept (``expireAt``, Firestore's TTL policy on ``journal``).
    - ``DLAB_JOURNAL_REPLAY`` (off): every model call looks in its run's journal before it asks
      the provider (``tools.replay`` sets it); otherwise only a unit's re-execution does.
    - ``DLAB_LEASE_SECONDS`` (30): a unit's lease; its holder renews it every third of that
      while it works, so a dead holder's unit is taken over within one lease.
    - ``DLAB_DELIVERY_MAX_FAILURES`` (5): failed deliveries of one event of a retrying function
      before it is acknowledged with an error record (the backstop for work outside a unit).
    - ``DLAB_CONFIG_CACHE_SECONDS`` (0: off): how long an instance keeps experiment and stage
      documents (``functions.reads``).
    - ``DLAB_USAGE_LOG`` (off): where each invocation's Firestore usage line goes (``stdout``
      or a file to append to; ``functions.usage``).
    - ``DLAB_SPEND_SHARDS`` (16): counter documents a run's totals are spread over, so that
      every agent of a large run does not write one document.
    - ``DLAB_MODEL_PRICES`` (none): a JSON table ``{"model-name": {"inputPerMTok": 0.15,
      "outputPerMTok": 0.6}}``; a call to a model in it adds its cost to ``costUsd`` (a run's
      ``budget.maxCostUsd`` counts only priced calls).
    - ``DLAB_BUDGET_REFRESH_SECONDS`` (5): how long an instance trusts its read of a run's
      ``budget`` field, so a run without a budget costs no read before each model call, and a
      budget set or raised in the console takes effect within this long.
    - ``DLAB_RATE_LIMITS`` (none: off): the per-provider rate limit every instance shares
      (``functions.rate_limit``), a JSON table by effective apiType, e.g. ``{"OPENAI":
      {"requestsPerMinute": 1000, "tokensPerMinute": 200000}}``.
    - ``DLAB_RATE_WINDOW_SECONDS`` (60): the counting window; each gets the per-minute limits
      scaled to its length (a shorter window smooths bursts at its edges).
    - ``DLAB_RATE_SHARDS`` (10): documents a window's quota is split over (at most the
      window's request limit), so no one document takes every caller's write.
    - ``DLAB_RATE_GUARD_SECONDS`` (1): no slot is given in a window's last this many seconds
      (at most a quarter of it), so a request reaches the provider within the window it was
      counted in, not in the next one beside that window's own.
    - ``DLAB_PRELOAD_PROVIDERS`` (none): apiTypes, comma-separated (``GEMINI,OPENAI``), whose
      client, and SDK, a deployed function makes while its instance starts rather than at its
      first call to that provider (``functions._entry.preload``): for instances kept warm.
    """

    work_max_attempts: int = Field(default=3, ge=1, le=100)
    work_max_platform_failures: int = Field(default=20, ge=1, le=1000)
    journal_retention_days: int = Field(default=90, ge=0, le=3650)
    journal_replay: bool = False
    lease_seconds: float = Field(default=30.0, gt=0, le=3600)
    delivery_max_failures: int = Field(default=5, ge=1, le=1000)
    config_cache_seconds: float = Field(default=0.0, ge=0, le=86_400)
    usage_log: str = ""
    spend_shards: int = Field(default=16, ge=1, le=500)
    budget_refresh_seconds: float = Field(default=5.0, ge=0, le=600)
    model_prices: dict[str, Price] = Field(default_factory=dict)
    rate_limits: dict[str, RateLimit] = Field(default_factory=dict)
    rate_window_seconds: float = Field(default=60.0, gt=0, le=3600)
    rate_shards: int = Field(default=10, ge=1, le=500)
    rate_guard_seconds: float = Field(default=1.0, ge=0, le=60)
    preload_providers: Annotated[tuple[ApiType, ...], NoDecode] = ()

    @field_validator("preload_providers", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(name.strip() for name in value.split(",") if name.strip())
        return value

    def cost_usd(self, model_name: str, prompt_tokens: int, completion_tokens: int) -> float:
        price = self.model_prices.get(model_name)
        if price is None:
            return 0.0
        return (
            prompt_tokens * price.input_per_mtok + completion_tokens * price.output_per_mtok
        ) / 1e6

    def guard_s(self) -> float:
        return min(self.rate_guard_seconds, self.rate_window_seconds / 4)


def backbone_settings() -> BackboneSettings:
    return BackboneSettings.current()
