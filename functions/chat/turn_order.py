"""Turn-based group chat (DL's ``isTurnBased``): a seeded order with mediators first; the turn
moves in a transaction together with the message that takes it, so an agent speaks only in its
turn and an out-of-turn reply is never written.

State lives in the chat's publicStageData (``ChatPublicData``) with DL's fields (``turnOrder``,
``currentTurnParticipantId``, ``cycleIndex``) plus ours, ``turnMessageId``: the message that last
moved the turn, so a duplicate delivery of it does not move the turn again.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from google.api_core import exceptions as gexc
from google.cloud import firestore

from functions import rooms, store, transactions
from functions.agents import cohort_lock, roles
from functions.chat import agents, gates, messages
from functions.rooms import Room
from shared.models import (
    ChatMessage,
    ChatPublicData,
    ChatStage,
    ParticipantProfile,
    ParticipantStatus,
    UserType,
)
from shared.prompts.shuffle import shuffle_with_seed

SKIPPED = "{name} was skipped due to a model error."
MAX_SKIPS = 2
"""An agent skipped this many times in a row is passed over until it speaks again (a broken
model must not keep the rest of the chat cycling through its failures)."""
_PRESENT = (ParticipantStatus.IN_PROGRESS, ParticipantStatus.ATTENTION_CHECK)


@dataclasses.dataclass(frozen=True)
class Seat:
    """Someone who takes turns: an active mediator or a participant (agent or human) at the
    stage. Humans are always eligible; an agent is eligible when its gates let it speak."""

    public_id: str
    kind: Literal["mediator", "participant"]
    private_id: str
    is_agent: bool
    eligible: bool = True
    exhausted: bool = False
    name: str = ""


@dataclasses.dataclass(frozen=True)
class TurnState:
    order: tuple[str, ...] = ()
    holder: str | None = None
    cycle: int = 0

    @classmethod
    def of(cls, public: ChatPublicData) -> TurnState:
        return cls(tuple(public.turn_order), public.current_turn_participant_id, public.cycle_index)

    def fields(self) -> dict[str, Any]:
        return {
            "turnOrder": list(self.order),
            "currentTurnParticipantId": self.holder,
            "cycleIndex": self.cycle,
        }


# ---- pure order logic -------------------------------------------------------------------------


def _seed(room: Room, suffix: str | int) -> str:
    return f"{room.cohort_id}-{room.stage_id}-{suffix}"


def _mediators(seats: list[Seat]) -> list[str]:
    return [s.public_id for s in seats if s.kind == "mediator"]


def _participants(seats: list[Seat]) -> list[str]:
    return [s.public_id for s in seats if s.kind == "participant"]


def fresh(room: Room, seats: list[Seat]) -> TurnState:
    """DL's start: mediators shuffled (when several), then participants shuffled for cycle 0;
    the first eligible seat holds the turn."""
    mediators = _mediators(seats)
    if len(mediators) > 1:
        mediators = shuffle_with_seed(mediators, _seed(room, "mediators"))
    order = (*mediators, *shuffle_with_seed(_participants(seats), _seed(room, 0)))
    return TurnState(order, _first_eligible(order, seats, 0), 0)


def _may_take_turn(seat: Seat, seats: list[Seat]) -> bool:
    """An eligible seat; a mediator only while some participant may still answer it (with every
    participant's responses used up, a mediator's message is one nobody can answer: it cost a
    model call, and raced the participants' readiness answers and departures)."""
    if not seat.eligible:
        return False
    return seat.kind != "mediator" or any(s.eligible for s in seats if s.kind == "participant")


def _first_eligible(order: tuple[str, ...], seats: list[Seat], start: int) -> str | None:
    by_id = {s.public_id: s for s in seats}
    for public_id in order[start:]:
        if public_id in by_id and _may_take_turn(by_id[public_id], seats):
            return public_id
    return None


def _next_cycle(room: Room, state: TurnState, seats: list[Seat]) -> TurnState:
    """A new cycle: mediators keep their order and go first; participants are reshuffled with
    the cycle's seed when the chat has mediators (DL keeps the participants' order otherwise)."""
    cycle = state.cycle + 1
    present = {s.public_id for s in seats}
    mediators = [m for m in state.order if m in present and m in _mediators(seats)]
    mediators += [m for m in _mediators(seats) if m not in mediators]
    if mediators:
        participants = shuffle_with_seed(_participants(seats), _seed(room, cycle))
    else:
        participants = [p for p in state.order if p in present and p in _participants(seats)]
        participants += [p for p in _participants(seats) if p not in participants]
    return TurnState((*mediators, *participants), None, cycle)


def _kept_then_new(order: tuple[str, ...], ids: list[str]) -> list[str]:
    """``ids`` in their place in ``order``, then those new to it."""
    return [i for i in order if i in ids] + [i for i in ids if i not in order]


def _holder_after_leaving(state: TurnState, present: set[str]) -> str | None:
    """The holder if present, else the next present seat after it in the old order (None:
    ``advance`` starts the next cycle)."""
    holder = state.holder
    if holder is None or holder in present:
        return holder
    later = state.order[state.order.index(holder) + 1 :] if holder in state.order else ()
    return next((i for i in later if i in present), None)


def reconcile(state: TurnState, seats: list[Seat]) -> TurnState:
    """Drop who left, add who arrived (mediators after the mediators, participants at the
    end); a holder who left hands the turn to the next present seat after it."""
    if not state.order:
        return state
    present = {s.public_id for s in seats}
    mediators = _kept_then_new(state.order, _mediators(seats))
    participants = _kept_then_new(state.order, _participants(seats))
    order = (*mediators, *participants)
    return TurnState(order, _holder_after_leaving(state, present), state.cycle)


def advance(
    room: Room, state: TurnState, seats: list[Seat], after: str | None
) -> tuple[TurnState, list[Seat]]:
    """The next eligible seat after ``after`` (or after the holder), into a new cycle past the
    end of the order. Returns the state and the agents passed over because their
    maxResponses are used up (they may still say they are ready to end)."""
    by_id = {s.public_id: s for s in seats}
    order = state.order
    index = order.index(after) if after in order else -1
    passed: list[Seat] = []
    for _ in range(2 * max(len(order), 1)):
        index += 1
        if index >= len(order):
            state = _next_cycle(room, state, seats)
            order, index = state.order, 0
            if not order:
                break
        seat = by_id.get(order[index])
        if seat is None:
            continue
        if _may_take_turn(seat, seats):
            return TurnState(order, seat.public_id, state.cycle), passed
        if seat.exhausted and seat not in passed:
            passed.append(seat)
    return TurnState(order, None, state.cycle), passed


# ---- Firestore ---------------------------------------------------------------------------------


def _present(member: ParticipantProfile, room: Room) -> bool:
    """At the chat and taking part: an inactive persona and an observer have no seat."""
    return (
        roles.takes_part(member)
        and member.current_cohort_id == room.cohort_id
        and member.current_stage_id == room.stage_id
        and member.current_status in _PRESENT
        and room.stage_id not in member.timestamps.completed_stages
    )


def seats(room: Room, stage: ChatStage, history: list[ChatMessage]) -> list[Seat]:
    """Active mediators with a prompt for the stage, and participants present at it (no
    mediators once every participant has left: there is nobody to talk to)."""
    out: list[Seat] = []
    for member in cohort_lock.cohort_members(room.experiment_id, room.cohort_id):
        if not _present(member, room):
            continue
        agent = agents.participant_agent(room.experiment_id, member.private_id, stage)
        if agent is None:
            out.append(Seat(member.public_id, "participant", member.private_id, False))
        else:
            out.append(_agent_seat(agent, history))
    if not out:
        return out
    mediators = []
    for private_id in agents.mediators_of(room.experiment_id, room.cohort_id, stage):
        agent = agents.mediator_agent(room.experiment_id, private_id, stage)
        if agent is not None:
            mediators.append(_agent_seat(agent, history))
    return mediators + out


def _skips_in_a_row(agent: agents.ChatAgent, history: list[ChatMessage]) -> int:
    skips = 0
    for message in reversed(history):
        if message.sender_id == agent.public_id and message.type == agent.type:
            break
        skips += (message.model_extra or {}).get(messages.SKIPPED_FIELD) == agent.public_id
    return skips


def _agent_seat(agent: agents.ChatAgent, history: list[ChatMessage]) -> Seat:
    refusal = gates.refusal(agent, history)
    return Seat(
        agent.public_id,
        agent.type,
        agent.private_id,
        True,
        eligible=refusal is None and _skips_in_a_row(agent, history) < MAX_SKIPS,
        exhausted=refusal == "max-responses",
        name=agent.profile.name or agent.public_id,
    )


def _state(transaction: firestore.Transaction, room: Room) -> tuple[ChatPublicData, TurnState]:
    public = rooms.group_state(room, transaction)
    return public, TurnState.of(public)


def _write(transaction: firestore.Transaction, room: Room, state: TurnState, **extra: Any) -> None:
    base = {"id": room.stage_id, "kind": "chat"}
    transaction.set(store.ref(room.public_path), {**base, **state.fields(), **extra}, merge=True)


def start(room: Room, stage: ChatStage) -> Seat | None:
    """Make sure the order exists and includes everyone present; returns who holds the turn.

    Everyone entering a chat at once calls this: only those whose arrival changes the order
    write it in a transaction; the others, and a retry that finds another delivery did the
    work, read the public data without contending for the chat's one public document."""
    everyone = seats(room, stage, rooms.history(room))

    def updated(before: TurnState) -> TurnState:
        state = reconcile(before, everyone) if before.order else fresh(room, everyone)
        if state.holder is None and state.order:
            state = dataclasses.replace(state, holder=_first_eligible(state.order, everyone, 0))
        return state

    def settled() -> str | None:
        before = TurnState.of(rooms.group_state(room))
        return before.holder if before.holder and updated(before) == before else None

    def body(transaction: firestore.Transaction) -> str | None:
        _, before = _state(transaction, room)
        state = updated(before)
        if state != before:
            _write(transaction, room, state)
        return state.holder

    holder = settled()
    return _seat(everyone, holder if holder else transactions.run(body, settled=settled))


@dataclasses.dataclass(frozen=True)
class TurnChange:
    """What a new message did to the turn."""

    holder: Seat | None = None
    passed: tuple[Seat, ...] = ()
    """Agents passed over with their responses used up (they may still say they are ready)."""
    handed_over: bool = False
    """The turn went to someone else (it was taken, or its holder left)."""


def on_message(room: Room, stage: ChatStage, message: ChatMessage) -> TurnChange:
    """A message was written: repair the order, move the turn if the message took it (a human
    speaking in turn; an agent's message moved it already), and say who holds it now."""
    with messages.lock(room, f"turn-{message.id}", {"movedFor": message.id}) as held:
        if not held.taken:
            return TurnChange()  # a duplicate delivery: the first one moves the turn and triggers
        change = _on_message(room, stage, message, held)
        held.keep()
        return change


def _took_turn(message: ChatMessage, public: ChatPublicData, state: TurnState) -> bool:
    return (
        message.type in (UserType.PARTICIPANT, UserType.MEDIATOR)
        and message.sender_id == state.holder
        and public.turn_message_id != message.id
    )


def _on_message(
    room: Room, stage: ChatStage, message: ChatMessage, held: messages.Lock
) -> TurnChange:
    """The turn moved for ``message`` in one transaction, which marks ``held`` (the message's
    turn lock) done: a lock kept with no other trace, the watchdog would take it for a dead
    holder's once it expired (``messages.release_unfinished``)."""
    everyone = seats(room, stage, rooms.history(room))

    def body(transaction: firestore.Transaction) -> tuple[TurnState, TurnState, list[Seat]]:
        public, before = _state(transaction, room)
        state = reconcile(before, everyone) if before.order else fresh(room, everyone)
        extra: dict[str, Any] = {}
        passed: list[Seat] = []
        if _took_turn(message, public, state):
            state, passed = advance(room, state, everyone, message.sender_id)
            extra["turnMessageId"] = message.id
        elif state.holder is None and state.order:
            state, passed = advance(room, state, everyone, None)
        if state != before or extra:
            _write(transaction, room, state, **extra)
        held.keep_in(transaction)  # after the reads: a transaction reads before it writes
        return before, state, passed

    before, state, passed = transactions.run(body)
    return TurnChange(_seat(everyone, state.holder), tuple(passed), state.holder != before.holder)


def post_in_turn(
    room: Room,
    stage: ChatStage,
    message: ChatMessage,
    responder: dict[str, Any],
    election: str | None,
    slot: int | None,
    history: list[ChatMessage],
) -> bool:
    """Write the holder's message and pass the turn, in one transaction: the message is written
    only if it is still the sender's turn. The election record (one answer of a type per
    message) is taken first by atomic create, so duplicate turns do not contend in the
    transaction; it is released when the message is not written."""
    owner = {**responder, "messageId": message.id}
    with messages.lock(room, election or "-", owner, needed=bool(election)) as held:
        if not held.taken:
            return False
        posted = _post_in_turn(room, stage, message, responder, slot, history)
        if posted:
            held.keep()
        return posted


def _post_in_turn(
    room: Room,
    stage: ChatStage,
    message: ChatMessage,
    responder: dict[str, Any],
    slot: int | None,
    history: list[ChatMessage],
) -> bool:
    """``history`` is the chat as the sender last read it (for the next holder's gates)."""
    everyone = seats(room, stage, [*history, message])
    sender = responder["publicId"]
    record = messages.answer_record(responder, message.id)
    quota = room.log_path(messages.quota_id(responder, slot)) if slot is not None else None

    def body(transaction: firestore.Transaction) -> bool:
        _, state = _state(transaction, room)
        if state.holder != sender:
            return False
        if quota and store.ref(quota).get(transaction=transaction).exists:
            return False
        state, _ = advance(room, state, everyone, sender)
        if quota:
            transaction.create(store.ref(quota), record)
        transaction.set(store.ref(room.message_path(message.id)), message.to_firestore())
        _write(transaction, room, state, turnMessageId=message.id)
        return True

    try:
        return transactions.run(body)
    except gexc.AlreadyExists:
        return False


def skip(room: Room, stage: ChatStage, agent: agents.ChatAgent, discussion_id: str | None) -> bool:
    """The holder failed its turn: pass the turn on and say so in the chat (the notice triggers
    the next holder). Only if it is still that agent's turn."""
    everyone = seats(room, stage, rooms.history(room))
    name = agent.profile.name or agent.public_id

    def body(transaction: firestore.Transaction) -> bool:
        public, state = _state(transaction, room)
        if state.holder != agent.public_id:
            return False
        # the turn it is skipped from is named by the message that gave it the turn
        named = messages.message_id(room, "skipped", agent.private_id, public.turn_message_id)
        notice = messages.system_message(
            SKIPPED.format(name=name),
            discussion_id,
            named,
            **{messages.SKIPPED_FIELD: agent.public_id},
        )
        state, _ = advance(room, state, everyone, agent.public_id)
        transaction.set(store.ref(room.message_path(notice.id)), notice.to_firestore())
        _write(transaction, room, state, turnMessageId=notice.id)
        return True

    return transactions.run(body)


def _seat(everyone: list[Seat], public_id: str | None) -> Seat | None:
    return next((s for s in everyone if s.public_id == public_id), None)
