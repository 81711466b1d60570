"""Debate triggers: the document written (start, or a user's touch: re-drive), a round created
(its turns), a turn (one statement), a statement created (round completion, then layer
completion), and the watchdog tick (re-drive unfinished debates)."""

from __future__ import annotations

import logging

from functions._events import FirestoreEvent, PubSubEvent
from functions.debate import checks, docs, redrive, start, statement
from functions.debate.messages import DebateTurn, publish_turns
from functions.errors import current_function, record_error
from shared.debate import naming
from shared.debate.models import BACKEND_FIELDS, Round, Statement
from shared.models import DocumentError, parse_document

log = logging.getLogger(__name__)


def _user_changed(event: FirestoreEvent) -> bool:
    """A write that changed more than the backend's own fields."""
    before, after = event.before or {}, event.after or {}
    keys = (set(before) | set(after)) - BACKEND_FIELDS
    return any(before.get(k) != after.get(k) for k in keys)


def on_debate_written(event: FirestoreEvent) -> None:
    debate_id = event.params["debateId"]
    if event.after is None:
        return
    if event.before is None:
        start.start(debate_id)
    elif _user_changed(event):
        redrive.redrive(debate_id, touched=True)


def on_debate_round_created(event: FirestoreEvent) -> None:
    debate_id = event.params["debateId"]
    rnd = parse_document(Round, event.document, event.after)
    if (event.after or {}).get("complete"):
        return
    if docs.read_debate(debate_id).paused:
        return
    made = docs.statements(debate_id, [naming.statement_id(rnd.id, a) for a in rnd.agents])
    missing = [a for a in rnd.agents if made[naming.statement_id(rnd.id, a)] is None]
    publish_turns(debate_id, rnd.id, missing)


def on_debate_turn(event: PubSubEvent) -> None:
    statement.take_turn(event.message(DebateTurn))


def on_debate_statement_created(event: FirestoreEvent) -> None:
    debate_id = event.params["debateId"]
    made = parse_document(Statement, event.document, event.after)
    checks.round_done(debate_id, made.round_id, made.layer)


def on_debate_watchdog_tick(event: PubSubEvent) -> None:
    """Each debate neither done nor failed on its own: one that cannot be read is recorded, the
    others go on."""
    for debate_id in docs.unfinished_debates():
        try:
            redrive.redrive(debate_id, touched=False)
        except DocumentError as error:
            record_error(current_function(), error, event_id=event.id)
        except Exception as error:  # one debate's failure must not stop the others' re-drive
            where = DocumentError(
                docs.debate(debate_id), "(function)", f"{type(error).__name__}: {error}"
            )
            record_error(current_function(), where, event_id=event.id)
