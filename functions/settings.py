"""The backbone's deployment settings, read from the environment (``DLAB_`` prefix) each time
they are asked for, so a test or an operator changes them without a redeploy of code."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class WorkSettings(BaseSettings):
    """How a unit of work (``functions.work``) is bounded.

    - ``DLAB_WORK_MAX_ATTEMPTS`` (3): attempts of one unit (each counted in Firestore before it
      starts); past them the unit ends with one error record instead of running again.
    - ``DLAB_LEASE_SECONDS`` (30): a unit's lease; its holder renews it every third of that
      while it works, so a dead holder's unit is taken over within one lease.
    - ``DLAB_DELIVERY_MAX_FAILURES`` (5): failed deliveries of one event of a retrying function
      before it is acknowledged with an error record (the backstop for work outside a unit).
    """

    model_config = SettingsConfigDict(env_prefix="DLAB_", extra="ignore")

    work_max_attempts: int = Field(default=3, ge=1, le=100)
    lease_seconds: float = Field(default=30.0, gt=0, le=3600)
    delivery_max_failures: int = Field(default=5, ge=1, le=1000)


def work_settings() -> WorkSettings:
    return WorkSettings()
