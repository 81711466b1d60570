"""The base of every part's deployment settings (docs/SETTINGS.md lists them all).

A field ``name`` is read from the environment variable ``DLAB_NAME`` (or the variable its
``validation_alias`` names) each time the settings are built, so a test or an operator changes
them without a redeploy of code. A mistyped value is a ``ValidationError`` naming that variable:
an operator's typo must not quietly become the default. An empty variable counts as unset.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any, Self

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

    @classmethod
    def current(cls) -> Self:
        """The settings as the environment has them now, as ``cls()`` would build them, but
        built again only when one of the class's variables changed: building one reads and
        validates every field (0.3-0.6 ms), and a stage move asked for the backbone's about
        14 times (bench/RESULTS.md, section 15). Treat the object as read-only: it is shared."""
        key = _snapshot(cls)
        if key is None:
            return cls()
        found = _BUILT.get((cls, key))
        if found is not None:
            return found
        built = cls()
        if _snapshot(cls) == key:  # not changed while it was built: safe to keep under key
            with _BUILT_LOCK:
                if len(_BUILT) >= _BUILT_MAX:
                    _BUILT.clear()
                _BUILT[(cls, key)] = built
        return built


_BUILT: dict[tuple[type, tuple[str | None, ...]], Any] = {}
_BUILT_LOCK = threading.Lock()
_BUILT_MAX = 256
"""Settings objects built by ``current``, by class and the values of its variables."""


def _snapshot(cls: type[DlabSettings]) -> tuple[str | None, ...] | None:
    """The values of the class's variables now; None when a field is read from something else
    than one variable (an ``AliasChoices``): such a class is built at every call."""
    aliases = [f.validation_alias for f in cls.model_fields.values()]
    if not all(isinstance(alias, str) for alias in aliases):
        return None
    return tuple(os.environ.get(str(alias)) for alias in aliases)


def described(error: ValidationError) -> str:
    """A settings error on one line: each bad variable, its value and what is wrong with it."""
    return "; ".join(
        f"{'.'.join(map(str, e['loc']))}={e['input']!r}: {e['msg']}" for e in error.errors()
    )
