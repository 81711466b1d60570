"""The base of every part's deployment settings (docs/SETTINGS.md lists them all).

A field ``name`` is read from the environment variable ``DLAB_NAME`` (or the variable its
``validation_alias`` names) each time the settings are built, so a test or an operator changes
them without a redeploy of code. A mistyped value is a ``ValidationError`` naming that variable:
an operator's typo must not quietly become the default. An empty variable counts as unset.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Self

from pydantic import AliasGenerator, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "DLAB_"


def variable(field: str) -> str:
    """The environment variable a field is read from."""
    return f"{PREFIX}{field.upper()}"


class DlabSettings(BaseSettings):
    model_config = SettingsConfigDict(
        alias_generator=AliasGenerator(validation_alias=variable),
        populate_by_name=True,
        env_ignore_empty=True,
        extra="ignore",
    )

    @classmethod
    def of(cls, env: Mapping[str, str]) -> Self:
        """The settings with ``env``'s values (a caller's own mapping, by variable name) over
        the environment's."""
        names = {str(field.validation_alias) for field in cls.model_fields.values()}
        return cls.model_validate({k: v for k, v in env.items() if k in names and v.strip()})


def described(error: ValidationError) -> str:
    """A settings error on one line: each bad variable, its value and what is wrong with it."""
    return "; ".join(
        f"{'.'.join(map(str, e['loc']))}={e['input']!r}: {e['msg']}" for e in error.errors()
    )
