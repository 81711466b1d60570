"""Which agents get a turn: on each new chat message, and when a chat starts (openings)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from functions import clients, reads, rooms, store, work
from functions.chat import active, agents, election, messages, turn_order
from functions.chat.settings import chat_settings
from functions.rooms import Room
from functions.wire import AgentTurn, publish_turns
from shared.models import (
    ChatMessage,
    ChatStage,
    ConversationStage,
    MediatorProfile,
    ParticipantProfile,
    PrivateChatStage,
    UserType,
)

NO_MEDIATORS = "No mediators found"
ORDER_LEASE = "order-lease"
"""A turn-based chat's lease on building its turn order (``triggerLogs/order-lease``)."""
MEMORY_KEPT = 10_000
"""Chats remembered (``_asked``) before the memory starts again."""
MAX_FAILURES_IN_A_ROW = 2
"""A mediator's model failing this often in a row no longer hands the participant the turn (the
two would otherwise trade error messages and model calls for ever)."""


@dataclasses.dataclass(frozen=True)
class Members:
    """Who may get a turn, read before the stage was (``read_members``)."""

    participants: list[str]
    """Agent participants at the stage (private ids)."""
    mediators: list[MediatorProfile]
    """The cohort's active mediators, whatever their prompts."""


@dataclasses.dataclass(frozen=True)
class LastFanOut:
    """A chat's last fan-out on this instance that asked the agents themselves (race, claim):
    its stage and who it asked, and when (``time.monotonic``)."""

    stage: ChatStage
    groups: election.Asked
    at: float


_asked: dict[tuple[str | None, Room], LastFanOut] = {}
"""Per instance and project: the chats whose last fan-out here asked everyone. The next one
reads who is in the chat in its first round trip, beside the stage (``read_members``), and,
while the memory is young, publishes its turns before that read (``ask_from_memory``)."""


def _key(room: Room) -> tuple[str | None, Room]:
    return clients.project_id(), room


def asks_everyone(room: Room) -> bool:
    """This instance's last fan-out in the chat asked its agents themselves."""
    return _key(room) in _asked


def ask_from_memory(room: Room, message: ChatMessage) -> LastFanOut | None:
    """Publish the message's turns to whom the chat's last fan-out here asked, if that was at
    most ``DLAB_FANOUT_MEMORY_SECONDS`` ago, before anything is read: a turn then starts one
    round trip after the message, not two. The fan-out that follows reads the chat's stage and
    members as ever and publishes only what this missed (``fan_out``'s ``asked``): under race,
    someone who came since is asked; under claim the order from memory stands for the message
    (someone gone stops at its turn and hands on; someone new is asked if the order runs out,
    ``election.Claim.hand_on``). A changed policy has the last word, read by each turn.
    Returns what was asked, or None."""
    asked = _asked.get(_key(room))
    max_age = chat_settings().fanout_memory_seconds
    if asked is None or message.is_error or max_age <= 0:
        return None
    if time.monotonic() - asked.at > max_age:
        return None
    election.policy_for(asked.stage).fan_out(room, message, lambda: asked.groups)
    return asked


def read_members(
    experiment_id: str, cohort_id: str, stage_id: str, beside: Callable[[], object] = lambda: None
) -> Members:
    """The agent participants at the stage and the cohort's active mediators, read at once,
    and ``beside()`` with them (another read of the same round trip)."""
    _, participants, mediators = reads.three(
        beside,
        lambda: agents.participants_at(experiment_id, cohort_id, stage_id),
        lambda: agents.active_mediators(experiment_id, cohort_id),
    )
    return Members(participants, mediators)


def fan_out(
    experiment_id: str,
    cohort_id: str,
    stage: ChatStage,
    message: ChatMessage,
    members: Members | None = None,
    asked: LastFanOut | None = None,
) -> int:
    """The turns a new message gets, as the stage's election policy says (``election``).
    ``members``: who is in the chat, read already; ``asked``: the turns published already from
    this instance's memory (``ask_from_memory``), not published again."""
    if message.is_error:
        return 0
    room = Room(experiment_id, cohort_id, stage.id)
    policy = election.policy_for(stage)
    if len(_asked) >= MEMORY_KEPT:
        _asked.clear()
    read: list[election.Asked] = []

    def groups() -> election.Asked:
        present = members or read_members(experiment_id, cohort_id, stage.id)
        mediators = agents.mediators_of(experiment_id, cohort_id, stage, present.mediators)
        read.append({"participant": present.participants, "mediator": mediators})
        return read[-1]

    same_policy = asked is not None and type(election.policy_for(asked.stage)) is type(policy)
    before = asked.groups if asked is not None and same_policy else None
    count = policy.fan_out(room, message, groups, before)
    if policy.asks_everyone and read:
        _asked[_key(room)] = LastFanOut(stage, read[-1], time.monotonic())
    elif not policy.asks_everyone:
        _asked.pop(_key(room), None)
    return count


def fan_out_private(room: Room, stage: PrivateChatStage, message: ChatMessage) -> int:
    """DL's onPrivateChatMessageCreated: every active mediator answers the participant; an
    agent participant answers a mediator (and a mediator's decline notice, so it goes on or
    ends instead of waiting). With no mediator, DL's error message tells the participant."""
    if messages.is_notice(message):
        return 0
    participant = store.read(
        ParticipantProfile, store.participant_path(room.experiment_id, room.participant_id)
    )
    if message.is_error:
        return _after_mediator_error(room, participant, message)
    declined = (message.model_extra or {}).get(messages.DECLINED_FIELD)
    mediators = [] if declined else agents.mediators_of(room.experiment_id, room.cohort_id, stage)
    turns = [AgentTurn.in_room(room, "mediator", m, trigger_chat_id=message.id) for m in mediators]
    if participant.is_agent and (message.type == UserType.MEDIATOR or declined):
        turns.append(
            AgentTurn.in_room(room, "participant", room.participant_id, trigger_chat_id=message.id)
        )
    if not declined and not mediators and message.sender_id == participant.public_id:
        named = messages.message_id(room, "no-mediators", message.id)
        error = messages.system_message(NO_MEDIATORS, message.discussion_id, named, isError=True)
        messages.write(room, error)
    publish_turns(*turns)
    return len(turns)


def _after_mediator_error(room: Room, participant: ParticipantProfile, message: ChatMessage) -> int:
    """A mediator's model failed and its error message stands in the chat: an agent participant
    gets the turn (it may follow its own message), so the exchange goes on instead of waiting
    for the idle watchdog. Nobody answers an error message otherwise."""
    if message.type != UserType.MEDIATOR or not participant.is_agent:
        return 0
    own = [m for m in rooms.history(room) if m.sender_id == message.sender_id]
    failures = len(own) - next((i for i, m in enumerate(reversed(own)) if not m.is_error), len(own))
    if failures > MAX_FAILURES_IN_A_ROW:
        return 0  # a mediator that keeps failing: its error records say why; the watchdog ends it
    turn = AgentTurn.in_room(
        room, "participant", room.participant_id, trigger_chat_id=message.id, nudge=True
    )
    publish_turns(turn)
    return 1


def request_openings(
    experiment_id: str,
    cohort_id: str,
    stage: ConversationStage,
    participant: ParticipantProfile,
    nonce: str = "",
) -> int:
    """A participant entered an unlocked chat: opening turns (each agent opens at most once per
    cohort and stage, or per private chat: the turn takes a lock). Group chat: the cohort's
    mediators and the participant if it is an agent; turn-based: only the turn holder.
    Private chat, and a group chat whose policy says so (claim: ``opened_by_mediators``): the
    mediators open it; an agent participant opens only when there is none.
    ``nonce``: a round of openings asked again (a model that chose silence is asked anew)."""
    if isinstance(stage, PrivateChatStage):
        room = Room(experiment_id, cohort_id, stage.id, participant.private_id)
        mediators = agents.mediators_of(experiment_id, cohort_id, stage)
        seats = [("mediator", m) for m in mediators]
        if participant.is_agent and not mediators:
            seats.append(("participant", participant.private_id))
    elif stage.is_turn_based:
        room = Room(experiment_id, cohort_id, stage.id)
        _index_if_timed(room, stage)
        return _open_in_turn(room, stage)
    else:
        room = Room(experiment_id, cohort_id, stage.id)
        _index_if_timed(room, stage)
        seats = [("mediator", m) for m in agents.mediators_of(experiment_id, cohort_id, stage)]
        by_mediators = bool(seats) and election.policy_for(stage).opened_by_mediators
        if participant.is_agent and not by_mediators:
            seats.append(("participant", participant.private_id))
    publish_turns(
        *(AgentTurn.in_room(room, kind, agent_id, nonce=nonce) for kind, agent_id in seats)
    )
    return len(seats)


def _open_in_turn(room: Room, stage: ChatStage) -> int:
    """One delivery at a time builds the turn order under a lease, so everyone entering at
    once does not contend in transactions on the chat's public data; a delivery that comes
    meanwhile runs it again, and each run reads everyone present, so the last one includes
    them all. The holder's opening turn is taken once by its lock, however often asked for."""

    def build() -> int:
        holder = turn_order.start(room, stage)
        if holder is None or not holder.is_agent:
            return 0
        publish_turns(AgentTurn.in_room(room, holder.kind, holder.private_id))
        return 1

    path = room.log_path(ORDER_LEASE)
    outcome = work.run(work.Unit(path, room.public_path, build, on_overflow=build))
    return outcome.result or 0


def _index_if_timed(room: Room, stage: ConversationStage) -> None:
    """A timed group chat someone entered is running: the watchdog must end it on time."""
    if isinstance(stage, ChatStage) and active.needs_entry(stage):
        active.ensure(room)
