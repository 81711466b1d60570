"""The conductor election policy's pick: one message per chat message (and per re-pick)."""

from __future__ import annotations

import logging

from functions._events import PubSubEvent
from functions.chat import conducted

log = logging.getLogger(__name__)


def on_chat_conductor(event: PubSubEvent) -> None:
    request = event.message(conducted.ConductorPick)
    log.info("chat conductor for %s: %s", request.trigger_chat_id, conducted.pick(request))
