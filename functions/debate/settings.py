"""The debate's deployment settings (``DLAB_`` prefix), read each time they are asked for."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class DebateSettings(BaseSettings):
    """How soon the watchdog re-drives a debate.

    - ``DLAB_DEBATE_STALE_SECONDS`` (5): a start or a round older than this whose unit has no
      live lease and no result is stranded (a lost event, a killed invocation) and is re-driven
      at the next tick. Short, because a live unit renews its lease (``DLAB_LEASE_SECONDS``):
      the age only spares the events still on their way.
    """

    model_config = SettingsConfigDict(env_prefix="DLAB_", extra="ignore")

    debate_stale_seconds: float = Field(default=5.0, ge=0, le=3600)

    @property
    def stale_after(self) -> timedelta:
        return timedelta(seconds=self.debate_stale_seconds)


def debate_settings() -> DebateSettings:
    return DebateSettings()
