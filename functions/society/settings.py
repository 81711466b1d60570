"""The society's deployment settings (docs/SETTINGS.md); a society's own rules are fields of its
document (``SocietySettings``)."""

from __future__ import annotations

from pydantic import Field

from shared.settings import DlabSettings


class SocietyDeploySettings(DlabSettings):
    """- ``DLAB_SOCIETY_CLOSE_SHARD_SIZE`` (500): members per invocation of a day's close; a
    society of N members closes a day in ceil(N / size) invocations per phase (fixed on the day
    when its close starts)."""

    society_close_shard_size: int = Field(default=500, ge=1, le=5000)


def society_settings() -> SocietyDeploySettings:
    return SocietyDeploySettings.current()
