"""The conductor's deployment settings (functions/conductor/), read from the environment each
time they are asked for (``shared.settings``; every one is listed in docs/SETTINGS.md)."""

from __future__ import annotations

from pydantic import Field

from shared.settings import DlabSettings


class ConductorSettings(DlabSettings):
    """How soon the watchdog re-drives a conversation that does not move.

    - ``DLAB_CONDUCTOR_STALLED_SECONDS`` (30, one ``DLAB_LEASE_SECONDS``): a conversation still
      PENDING this long after its last write lost its creation event, and a step pending this
      long with no live lease lost its invocation or its message; the watchdog starts or
      publishes it again. A live holder renews its lease, so a slow model is never re-driven;
      a duplicate delivery is harmless anyway (it coalesces on the lease, or finds the step done).
    """

    conductor_stalled_seconds: float = Field(default=30.0, ge=0, le=86_400)


def conductor_settings() -> ConductorSettings:
    return ConductorSettings()
