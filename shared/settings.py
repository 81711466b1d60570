"""The base of every part's deployment settings (docs/SETTINGS.md lists them all).

A field ``name`` is read from the environment variable ``DLAB_NAME`` (or the variable its
``validation_alias`` names); ``current()`` builds the settings again whenever a ``DLAB_*``
variable changed, so a test or an operator changes them without a redeploy of code. A mistyped
value is a ``ValidationError`` naming that variable: an operator's typo must not quietly become
the default. An empty variable counts as unset.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Self, TypeVar

from pydantic import AliasGenerator, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "DLAB_"


S = TypeVar("S", bound="DlabSettings")


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
    def current(cls) -> Self:
        """The settings as the environment says now. Building them parses every variable
        (about a millisecond, five on a loaded machine) and a stage move asked a dozen times, so
        they are built once per distinct ``DLAB_*`` environment and shared: a changed variable
        (an operator, a test's monkeypatch) is a new environment, read at its first use."""
        return _built(cls, _environment())

    @classmethod
    def of(cls, env: Mapping[str, str]) -> Self:
        """The settings with ``env``'s values (a caller's own mapping, by variable name) over
        the environment's."""
        names = {str(field.validation_alias) for field in cls.model_fields.values()}
        return cls.model_validate({k: v for k, v in env.items() if k in names and v.strip()})


def _environment() -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(PREFIX)))


@functools.lru_cache(maxsize=256)
def _built(cls: type[S], environment: tuple[tuple[str, str], ...]) -> S:
    """``cls`` as ``environment`` (every ``DLAB_*`` variable) makes it; a mistyped value raises
    each time, never cached."""
    return cls()


def described(error: ValidationError) -> str:
    """A settings error on one line: each bad variable, its value and what is wrong with it."""
    return "; ".join(
        f"{'.'.join(map(str, e['loc']))}={e['input']!r}: {e['msg']}" for e in error.errors()
    )
