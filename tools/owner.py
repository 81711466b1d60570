"""Who owns what the tools and the console create: the ``creator`` field of societies, debates,
conversations and workflows (and ``metadata.creator`` of experiments), which the security
rules scope them to (firestore.rules, docs/SECURITY.md).

The tools write with admin credentials, so they cannot know who runs them: ``DLAB_CREATOR``
says it (the email you sign in with, or your Firebase Auth uid). ``python -m tools.auth owner``
changes the owner of a document written earlier.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_CREATOR = "experimenter@example.com"


class OwnerSettings(BaseSettings):
    """``DLAB_CREATOR``: the owner stamped on what a tool creates (an email is lower-cased, as
    the rules compare it)."""

    model_config = SettingsConfigDict(env_prefix="DLAB_", extra="ignore")

    creator: str = Field(default=DEFAULT_CREATOR, min_length=1)


def creator() -> str:
    return normalized(OwnerSettings().creator)


def normalized(creator: str) -> str:
    """An email lower-cased (the rules compare the caller's lower-cased email), a uid as it is."""
    value = creator.strip()
    return value.lower() if "@" in value else value


def owned(data: dict[str, Any]) -> dict[str, Any]:
    """The document with its creator: the one it names, else ``DLAB_CREATOR``."""
    return {**data, "creator": data.get("creator") or creator()}
