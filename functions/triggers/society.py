"""Agent society triggers: thin handlers over functions.society."""

from __future__ import annotations

import logging

from functions._events import FirestoreEvent, PubSubEvent
from functions.society import close, days, setup, turn, watchdog
from functions.society.wire import CloseShard, SocietyTurn
from shared.models import DocumentError, parse_document
from shared.society.models import Society

log = logging.getLogger(__name__)


def on_society_written(event: FirestoreEvent) -> None:
    if event.after is None:
        return  # deleted
    society = parse_document(
        Society, event.document, {"id": event.params["societyId"], **event.after}
    )
    setup.start(society)
    days.resume(society.id, society.status)


def on_society_action_created(event: FirestoreEvent) -> None:
    try:
        day = int(event.params["day"])
    except ValueError:
        raise DocumentError(
            event.document, "(document)", "the day in the path is not a number"
        ) from None
    close.action_created(event.params["societyId"], day, event.document, event.after or {})


def on_society_turn(event: PubSubEvent) -> None:
    turn.run(event.message(SocietyTurn))


def on_society_tick(event: PubSubEvent) -> None:
    log.info("society watchdog: %s", watchdog.tick())


def on_society_close_shard(event: PubSubEvent) -> None:
    message = event.message(CloseShard)
    close.run_shard(message, days.opener(message.society_id, message.day))
