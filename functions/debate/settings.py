"""The debate's deployment settings (functions/debate/), read from the environment each time
they are asked for (``shared.settings``; every one is listed in docs/SETTINGS.md)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field

from shared.settings import DlabSettings


class DebateSettings(DlabSettings):
    """How soon the watchdog re-drives a debate.

    - ``DLAB_DEBATE_STALE_SECONDS`` (5): a start or a round older than this whose unit has no
      live lease and no result is stranded (a lost event, a killed invocation) and is re-driven
      at the next tick. Short, because a live unit renews its lease (``DLAB_LEASE_SECONDS``):
      the age only spares the events still on their way.
    """

    debate_stale_seconds: float = Field(default=5.0, ge=0, le=3600)

    @property
    def stale_after(self) -> timedelta:
        return timedelta(seconds=self.debate_stale_seconds)


def debate_settings() -> DebateSettings:
    return DebateSettings.current()
