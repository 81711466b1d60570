"""The chat's deployment settings (functions/chat/), read from the environment each time they
are asked for (``shared.settings``; every one is listed in docs/SETTINGS.md)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field

from shared.settings import DlabSettings


class ChatSettings(DlabSettings):
    """When the watchdog acts on chats and agents, and how long a conductor keeps picking.

    - ``DLAB_IDLE_AGENT_SECONDS`` (120): a chat quiet this long gets its agents nudged (asked,
      readiness only, whether they are ready to end).
    - ``DLAB_IDLE_NUDGES`` (3): nudges per agent and chat until the chat gets a new message; each
      is a model call, and an agent that said no three times will not say yes to a fourth.
    - ``DLAB_STALLED_SECONDS`` (30, one lease): an agent at an open non-chat stage, with no live
      move lease, this long after it arrived lost its move (its event, or its holder, died).
    - ``DLAB_WATCHDOG_MAX_READS`` (1000): documents one watchdog tick reads to find the agents
      in progress (one per experiment that has some, then the agents); it wakes among them.
    - ``DLAB_CHAT_CONDUCTOR_MAX_PICKS`` (2): picks of a chat conductor per message; when every
      agent it picked declined, the idle watchdog nudges them instead.
    - ``DLAB_FANOUT_MEMORY_SECONDS`` (300): an instance publishes a race or claim chat's turns
      to whom its last fan-out there asked, if that was this recent, before reading who is in
      the chat (``fanout.ask_from_memory``); the read then adds whoever came since. 0: never.

    A claim on a message (and any chat lock) is not timed here: it expires one lease
    (``DLAB_LEASE_SECONDS``) after its holder stopped renewing it (``messages.lock``).
    """

    idle_agent_seconds: float = Field(default=120.0, ge=0)
    idle_nudges: int = Field(default=3, ge=0, le=1000)
    stalled_seconds: float = Field(default=30.0, ge=0)
    watchdog_max_reads: int = Field(default=1000, ge=2, le=100_000)
    chat_conductor_max_picks: int = Field(default=2, ge=1, le=100)
    fanout_memory_seconds: float = Field(default=300.0, ge=0)

    @property
    def idle_after(self) -> timedelta:
        return timedelta(seconds=self.idle_agent_seconds)

    @property
    def stalled_after(self) -> timedelta:
        return timedelta(seconds=self.stalled_seconds)


def chat_settings() -> ChatSettings:
    return ChatSettings.current()
