"""Chat triggers: new group chat messages fan out to agent turns; a turn runs one agent."""

from __future__ import annotations

import logging

from google.cloud import firestore

from functions import reads, store
from functions._events import FirestoreEvent, PubSubEvent
from functions.chat import active, agents, fanout, turn, watchdog
from functions.rooms import Room
from functions.wire import AgentTurn
from shared.models import (
    ChatMessage,
    ChatPublicData,
    ChatStage,
    DocumentError,
    ParticipantProfile,
    PrivateChatStage,
    parse_document,
)

log = logging.getLogger(__name__)


def on_chat_message_created(event: FirestoreEvent) -> None:
    e, c, s = (event.params[k] for k in ("experimentId", "cohortId", "stageId"))
    room = Room(e, c, s)
    asked = None
    if fanout.asks_everyone(room):  # a chat: its turns go out first, from memory, if young
        asked = fanout.ask_from_memory(room, _message(event))
    # the fan-out's documents (its mediators' prompts as this instance last found them)
    ahead = [store.stage_path(e, s), room.public_path, *agents.mediator_documents(e, c, s)]
    with reads.ahead():
        members = None
        if fanout.asks_everyone(room):  # who is in the chat, in the same round trip
            members = fanout.read_members(e, c, s, beside=lambda: reads.batch(ahead))
        else:
            reads.batch(ahead)
        stage = store.read_stage(e, s)
        if not isinstance(stage, ChatStage):
            return
        message = _message(event)
        _start_timer(room, stage)
        fanout.fan_out(e, c, stage, message, members, asked)


def on_private_chat_message_created(event: FirestoreEvent) -> None:
    e, p, s = (event.params[k] for k in ("experimentId", "participantId", "stageId"))
    stage = store.read_stage(e, s)
    if not isinstance(stage, PrivateChatStage):
        return
    message = _message(event)
    participant = store.read(ParticipantProfile, store.participant_path(e, p))
    if not participant.current_cohort_id:
        raise DocumentError(
            store.participant_path(e, p), "currentCohortId", "the participant has no cohort"
        )
    fanout.fan_out_private(Room(e, participant.current_cohort_id, s, p), stage, message)


def _message(event: FirestoreEvent) -> ChatMessage:
    return parse_document(
        ChatMessage, event.document, {"id": event.params["chatId"], **(event.after or {})}
    )


def _start_timer(room: Room, stage: ChatStage) -> None:
    """DL's startTimeElapsed: the discussion starts with its first message. A plain write: two
    first messages at once both set "now", which is harmless, and a transaction here would make
    every message of a busy chat contend for one document. A chat with a time limit enters the
    index of running chats (``active``) in the same batch, so the watchdog ends it on time."""
    ref = store.ref(room.public_path)
    data = store.snapshot_data(ref.path) or {}  # read with the stage (``reads.ahead``)
    if data.get("discussionStartTimestamp") is None:
        stamp = firestore.SERVER_TIMESTAMP
        batch = store.db().batch()
        batch.set(
            ref,
            ChatPublicData.fields(
                id=room.stage_id,
                kind="chat",
                discussion_start_timestamp=stamp,
                discussion_checkpoint_timestamp=stamp,
            ),
            merge=True,
        )
        if active.needs_entry(stage):
            active.add(batch, room)
        batch.commit()


def on_agent_turn(event: PubSubEvent) -> None:
    request = event.message(AgentTurn)
    outcome = turn.run(request, event.id)
    log.info(
        "turn %s %s on %s: %s",
        request.agent_type,
        request.agent_id,
        request.trigger_chat_id or "opening",
        outcome,
    )


def on_watchdog_tick(event: PubSubEvent) -> None:
    log.info("watchdog: %s", watchdog.tick())
