"""The watchdog (scheduled): no function sleeps to keep time, so chat time limits and idle agents
are handled here, on each tick."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from google.cloud import firestore

from functions import documents, errors, leases, rooms, store, transactions
from functions.agents import roles
from functions.chat import (
    active,
    agents,
    election,
    fanout,
    messages,
    nudges,
    readiness,
    sweep,
    turn_order,
)
from functions.chat.election import Claim
from functions.chat.settings import chat_settings
from functions.rooms import Room
from functions.wire import AgentTurn, publish_turns, publish_wakes
from shared import paths
from shared.models import (
    ChatMessage,
    ChatPublicData,
    ChatStage,
    ConversationStage,
    DocumentError,
    ParticipantProfile,
    PrivateChatStage,
    now,
    parse_document,
)

StageCache = dict[tuple[str, str], ConversationStage | None]
T = TypeVar("T")

TIMER_ENDED = "The timer for this stage has ended; you can no longer respond."


def idle_after() -> timedelta:
    return chat_settings().idle_after


def stalled_after() -> timedelta:
    return chat_settings().stalled_after


def tick() -> dict[str, int]:
    """One pass; returns counts (ended chats, woken and re-driven agents) for logs and tests."""
    indexed = active.entries()
    ended = _end_timed_out_chats(indexed)
    members, cache = _agents_in_progress(), StageCache()
    _index_unlisted_chats(members, cache, {entry.room for entry in indexed})
    return {
        "ended": ended,
        "woken": _wake_idle_agents(members, cache),
        "stalled": _redrive_stalled_moves(members, cache),
        "expired": _redrive_expired_leases(),
    }


def _stage(cache: StageCache, experiment_id: str, stage_id: str) -> ConversationStage | None:
    key = (experiment_id, stage_id)
    if key not in cache:
        try:
            stage = store.read_stage(experiment_id, stage_id)
        except DocumentError:
            stage = None
        cache[key] = stage if isinstance(stage, ConversationStage) else None
    return cache[key]


def _end_timed_out_chats(entries: list[active.ActiveChat]) -> int:
    """End the running chats (the ``active`` index) whose time is up; an entry whose chat has
    ended, or cannot end any more, leaves the index."""
    ended, cache = 0, StageCache()
    for entry in entries:
        room = entry.room
        stage = _stage(cache, room.experiment_id, room.stage_id)
        if not isinstance(stage, ChatStage) or not active.needs_entry(stage):
            active.remove(room)
            continue
        try:
            public = rooms.group_state(room)
        except DocumentError as error:
            errors.record_error(errors.current_function(), error)
            continue
        if public.discussion_end_timestamp is not None or _abandoned(room, public):
            active.remove(room)
        elif readiness.time_is_up(stage, public):
            ended += end_chat(room.experiment_id, room.cohort_id, stage)
            active.remove(room)
    return ended


def _index_unlisted_chats(members: list[Member], cache: StageCache, indexed: set[Room]) -> None:
    """A timed group chat with agents in it that the index lacks (its entry lost, or data from
    before the index) is added, unless it has ended; nothing is read once all are listed."""
    for member in members:
        stage = _stage(cache, member.experiment_id, member.profile.current_stage_id)
        if not isinstance(stage, ChatStage) or not active.needs_entry(stage):
            continue
        room = Room(member.experiment_id, member.profile.current_cohort_id, stage.id)
        if room in indexed:
            continue
        indexed.add(room)
        if rooms.group_state(room).discussion_end_timestamp is None:
            active.ensure(room)


def _abandoned(room: Room, public: ChatPublicData) -> bool:
    """A chat that never started and has nobody in it any more: nothing for its timer to end."""
    if public.discussion_start_timestamp is not None:
        return False
    present = agents.present_at(room.experiment_id, room.cohort_id, room.stage_id)
    return not present.agents and not present.humans


def _parse_participant(path: str, data: dict[str, Any]) -> ParticipantProfile:
    return parse_document(ParticipantProfile, path, data)


def end_chat(experiment_id: str, cohort_id: str, stage: ChatStage) -> bool:
    """Stamp discussionEndTimestamp once, announce it, and move the agent participants on."""
    ref = store.ref(store.public_stage_data_path(experiment_id, cohort_id, stage.id))

    room = Room(experiment_id, cohort_id, stage.id)

    def body(transaction: firestore.Transaction) -> ChatPublicData | None:
        public = rooms.group_state(room, transaction)
        if public.discussion_end_timestamp is not None:
            return None
        transaction.set(ref, ChatPublicData.fields(discussion_end_timestamp=now()), merge=True)
        return public

    public = transactions.run(body)
    if public is None:
        return False
    note = messages.system_message(
        TIMER_ENDED,
        public.current_discussion_id,
        messages.message_id(room, "timer-ended"),
        timerEnded=True,
    )
    messages.write(room, note)
    for private_id in agents.participants_at(experiment_id, cohort_id, stage.id):
        profile = store.read(ParticipantProfile, store.participant_path(experiment_id, private_id))
        readiness.leave(room, stage, profile)
    return True


@dataclasses.dataclass(frozen=True)
class Member:
    """An agent participant in progress somewhere in the project."""

    experiment_id: str
    private_id: str
    profile: ParticipantProfile
    updated: datetime
    """When its document was last written."""


def _agents_in_progress() -> list[Member]:
    """The agent participants in progress this tick looks at (a bounded share, ``sweep``)."""
    members = []
    for read in sweep.in_progress():
        snap = read.snapshot
        for profile in documents.valid([snap], _parse_participant, id_field="privateId"):
            if profile.is_agent and profile.current_stage_id and profile.current_cohort_id:
                updated = _datetime(snap.update_time)
                members.append(Member(read.experiment_id, snap.id, profile, updated))
    return members


def _datetime(stamp: Any) -> datetime:
    """A snapshot's update time: a datetime, or a protobuf Timestamp in some client versions."""
    return stamp if isinstance(stamp, datetime) else stamp.ToDatetime(tzinfo=UTC)


def _wake_idle_agents(members: list[Member], cache: StageCache) -> int:
    """Agent participants at a chat where nothing happened for a while are asked (readiness
    only, no message) whether they are ready to end; in a private chat they get a turn that
    may follow their own message (to go on, or end). A chat still empty long after the agent
    arrived lost its openings (an invocation died holding their locks): they are asked again.
    Nobody is left waiting forever, and nobody is asked without bound: an agent is nudged at
    most ``DLAB_IDLE_NUDGES`` times per chat until the chat gets a new message, then counts as
    ready (``nudges``)."""
    idle: list[nudges.Candidate] = []
    where: dict[tuple[Room, str], tuple[ConversationStage, ParticipantProfile]] = {}
    cutoff, stalled = now() - idle_after(), now() - stalled_after()
    histories: dict[Room, list[ChatMessage]] = {}  # a group chat's agents share its history
    checked: dict[Room, _Checked] = {}
    for member in members:
        if roles.is_inactive(member.profile):
            continue  # an inactive persona never chats: never nudged, never opens
        stage = _stage(cache, member.experiment_id, member.profile.current_stage_id)
        if stage is None:
            continue
        room = _room_of(member, stage)
        if room not in histories:
            histories[room] = rooms.history(room)
        history = histories[room]
        arrived = member.profile.timestamps.ready_stages.get(stage.id)
        if not history and arrived is not None and arrived <= stalled:
            _reopen(room, stage, member.profile, stalled)
            continue
        if room not in checked:  # a room's claims once per tick, not once per agent
            checked[room] = _check(room, stage, history)
            if checked[room].redriven:
                continue
        last = history[-1].timestamp if history else arrived
        if last is None or last > cutoff or not checked[room].may_nudge():
            continue
        # still here, so a leaving lock of its is one whose invocation died mid-leave
        messages.release_unfinished(room, messages.left_lock_id(member.private_id))
        trigger = history[-1].id if history else ""
        idle.append(nudges.Candidate(room, member.private_id, trigger))
        where[(room, member.private_id)] = (stage, member.profile)
    return _nudge(idle, where)


def _room_of(member: Member, stage: ConversationStage) -> Room:
    """The chat the member is in at ``stage``: the cohort's, or its own private one."""
    private = isinstance(stage, PrivateChatStage)
    cohort = member.profile.current_cohort_id
    return Room(member.experiment_id, cohort, stage.id, member.private_id if private else "")


def _nudge(
    idle: list[nudges.Candidate],
    where: dict[tuple[Room, str], tuple[ConversationStage, ParticipantProfile]],
) -> int:
    """Nudge the idle agents within their allowance (one turn each); those whose allowance is
    spent count as ready, with no model call (``nudges``). Returns how many were nudged."""
    asked, spent = nudges.allowed(idle, chat_settings().idle_nudges)
    for c in spent:
        stage, profile = where[(c.room, c.agent_id)]
        readiness.participant_ready(c.room, stage, profile)
    turns = [
        AgentTurn.in_room(
            c.room,
            "participant",
            c.agent_id,
            trigger_chat_id=c.after,
            readiness_only=not c.room.is_private,
            nonce=c.nonce,
            nudge=c.room.is_private,
        )
        for c in asked
    ]
    publish_turns(*turns)
    return len(turns)


def _reopen(
    room: Room, stage: ConversationStage, participant: ParticipantProfile, stalled: datetime
) -> None:
    """A chat still empty long after the participant arrived: its openings either never
    finished, or every agent chose silence for its opening (then nobody would ever speak; a
    two-agent chat stayed empty in 1 of 12 test runs). The participant's and the mediators'
    opening locks are released, done ones too (each agent participant's by its own round, so
    none is left out), and the openings asked for again: one model call per agent per stall
    period while the chat stays empty. Each is taken once more by its lock, so duplicate ticks
    open once. A chat still locked for the cohort (it waits for everyone to arrive) is empty
    because it has not begun: its openings come with the arrival that unlocks it, among
    everyone then present (opened early, its first message's claim order was drawn among the
    early arrivals only, and who they were depended on the machine's load)."""
    if not UnlockCache().get(room.experiment_id, room.cohort_id, room.stage_id):
        return
    own = f"{messages.OPENING_PREFIX}participant-{participant.private_id}"
    mediators = f"{messages.OPENING_PREFIX}mediator-"
    released = messages.release_unfinished(room, own, mediators, done_before=stalled)
    if released or not messages.has_locks(room, own):  # this participant's, and the mediators'
        again = f"reopened-{stalled:%Y%m%dT%H%M%S}"  # a new opening call, not the same one
        fanout.request_openings(room.experiment_id, room.cohort_id, stage, participant, again)


@dataclasses.dataclass
class _Checked:
    """A chat as one tick found it: whether a lost turn was re-driven, and whether it is
    quiet for good, so that its idle agents may be nudged (``may_nudge``)."""

    redriven: bool
    may_nudge: Callable[[], bool] = lambda: True


def _check(room: Room, stage: ConversationStage, history: list[ChatMessage]) -> _Checked:
    """Re-drive what the chat lost with a dead invocation (``_redrive_dead_claim``; a claim
    chat: ``_ClaimChat``)."""
    if isinstance(stage, ChatStage) and history and type(election.policy_for(stage)) is Claim:
        chat = _ClaimChat(room, stage, history)
        return _Checked(chat.redrive(), chat.ran_out)
    return _Checked(_redrive_dead_claim(room, stage, history))


@dataclasses.dataclass
class _ClaimChat:
    """A claim chat's last message to answer and its order (``election.Claim``): a message
    whose turn was lost (its claim died with its invocation, or its fan-out or a turn's hand-on
    was lost: no claim, no reply) is handed to the next agent of its order that has not passed
    it on (``messages.passed_by``), once a lease after the message; its idle agents are nudged
    only once the order ran out (every agent present passed it on), never while a lost turn
    is what keeps it quiet: a readiness question the calm run never asked would change the
    chat's course."""

    room: Room
    stage: ChatStage
    history: list[ChatMessage]

    @functools.cached_property
    def message(self) -> ChatMessage | None:
        """The last message its agents are asked to answer: not a notice (someone left, the
        timer ended: nobody is asked), none if that is an error message."""
        last = next((m for m in reversed(self.history) if not messages.is_notice(m)), None)
        return None if last is None or last.is_error else last

    @functools.cached_property
    def next_turn(self) -> AgentTurn | None:
        """Its turn for the first agent of its order that has not passed it on."""
        if self.message is None:
            return None
        e, c = self.room.experiment_id, self.room.cohort_id
        present = {
            "mediator": agents.mediators_of(e, c, self.stage),
            "participant": agents.participants_at(e, c, self.stage.id),
        }
        passed = messages.passed_by(self.room, self.message.id)
        return Claim.next_unasked(self.room, self.message, present, passed)

    def ran_out(self) -> bool:
        return self.next_turn is None

    def redrive(self) -> bool:
        """Hand the message to ``next_turn`` if nobody holds or kept its claim a lease after it
        came (a dead claim is released), at most once a lease per agent (a ``redrive-`` lock,
        left to expire), its model calls looking in the journal first."""
        message = self.message
        if message is None or message.timestamp is None:
            return False
        if message.timestamp > now() - messages.lock_ttl():
            return False
        claims = f"{message.id}-"
        messages.release_unfinished(self.room, claims, REDRIVE + claims)
        turn = self.next_turn
        if turn is None or messages.has_locks(self.room, claims):
            return False
        owner = {"agentType": turn.agent_type, "privateId": turn.agent_id}
        lock = f"{REDRIVE}{claims}{turn.agent_type}-{turn.agent_id}"
        if messages.take_lock(self.room, lock, owner) is None:
            return False  # re-driven less than a lease ago
        publish_turns(turn.model_copy(update={"redriven": True}))
        return True


REDRIVE = "redrive-"
"""``triggerLogs/redrive-{message}-{agentType}-{agentId}``: the watchdog handed a claim chat's
message on to the agent (``_ClaimChat.redrive``); it expires a lease later."""


def _redrive_dead_claim(room: Room, stage: ConversationStage, history: list[ChatMessage]) -> bool:
    """A message whose claim died with its invocation (claim or conductor policy, turn-based;
    under race the election record the first answer takes before it is posted): nobody
    answered it, and nobody else was asked, or the others had stopped, since the claim held
    the message. A live holder renews its claim (``messages.lock``), so a claim expired is a
    dead one: it is released (with a turn-based chat's turn change, to be made again) and the
    message fanned out again, within a tick and a lease of the death, whether or not the chat
    is idle yet. Only a message older than a lease can have an expired claim, so a busy chat's
    claims cost no read. Each step is taken once more by its lock, so duplicate ticks
    re-drive once."""
    if not isinstance(stage, ChatStage) or not history:
        return False
    message = history[-1]
    if message.timestamp is None or message.timestamp > now() - messages.lock_ttl():
        return False
    claims = messages.release_unfinished(room, f"{message.id}-")
    lost = not claims and _turn_lost(room, stage, message, history)
    # the turn change is made again with the claim (its lock is done by then), else if it died
    turn = messages.release_unfinished(
        room, f"turn-{message.id}", done_before=now() if claims or lost else None
    )
    if not claims and not turn and not lost:
        return False
    fanout.fan_out(room.experiment_id, room.cohort_id, stage, message)
    return True


def _turn_lost(
    room: Room, stage: ChatStage, message: ChatMessage, history: list[ChatMessage]
) -> bool:
    """A turn-based chat's message a lease old that nobody claimed (no claim live, none kept by
    a reply) while an agent holds the turn, or nobody does: its fan-out or the holder's turn
    died with its invocation before the claim. Re-driven at most once a lease (a ``redrive-``
    lock, left to expire); a human holder is waited for."""
    if not stage.is_turn_based or messages.has_locks(room, f"{message.id}-"):
        return False
    holder = rooms.group_state(room).current_turn_participant_id
    if holder is not None:
        seat = next(
            (s for s in turn_order.seats(room, stage, history) if s.public_id == holder), None
        )
        if seat is None or not seat.is_agent:
            return False
    lock = f"{REDRIVE}turn-{message.id}"
    messages.release_unfinished(room, lock)
    return messages.take_lock(room, lock, {"redrives": message.id}) is not None


def _redrive_stalled_moves(members: list[Member], cache: StageCache) -> int:
    """Agents at an open stage that is not a chat make their move within seconds; one that has
    sat there long after arriving, with nobody moving it, lost its move (an invocation died
    before the update's event was handled): it gets a wake. Idempotent: a move made in the
    meantime is not repeated, the wake makes the next one."""
    stalled, unlocked = now() - stalled_after(), UnlockCache()
    candidates = []
    for member in members:
        p = member.profile
        # when it arrived; one never started (its creation's event lost): its last write
        arrived = p.timestamps.ready_stages.get(p.current_stage_id) or member.updated
        if (
            p.agent_blocked_on is None  # else waiting for a document fix, which wakes it
            and arrived <= stalled
            and _stage(cache, member.experiment_id, p.current_stage_id) is None  # not a chat
            and unlocked.get(member.experiment_id, p.current_cohort_id, p.current_stage_id)
        ):
            candidates.append(member)
    moving = _moving(candidates)
    woken: dict[str, list[str]] = {}
    for member in candidates:
        if (member.experiment_id, member.private_id) not in moving:
            woken.setdefault(member.experiment_id, []).append(member.private_id)
    for experiment_id, ids in woken.items():
        publish_wakes(experiment_id, "watchdog: move stalled", *ids)
    return sum(len(ids) for ids in woken.values())


def _moving(members: list[Member]) -> set[tuple[str, str]]:
    """(experiment, participant) of the agents someone holds a live move lease for: their
    leases read in one round trip (they were read one after another: seconds per tick with
    thousands stalled)."""
    refs = [store.ref(store.move_lease_path(m.experiment_id, m.private_id)) for m in members]
    moving, at = set(), now()
    for snap in store.db().get_all(refs, field_paths=leases.LIVENESS_FIELDS) if refs else ():
        params = paths.match(paths.MOVE_LEASE, snap.reference.path)
        if params and leases.live(snap, at):
            moving.add((params["experimentId"], params["participantId"]))
    return moving


class UnlockCache:
    """Cohorts' stage unlock maps, read once per tick."""

    def __init__(self) -> None:
        self._maps: dict[tuple[str, str], dict[str, bool]] = {}

    def get(self, experiment_id: str, cohort_id: str, stage_id: str) -> bool:
        key = (experiment_id, cohort_id)
        if key not in self._maps:
            data = store.snapshot_data(store.cohort_path(experiment_id, cohort_id)) or {}
            self._maps[key] = data.get("stageUnlockMap") or {}
        return bool(self._maps[key].get(stage_id))


def _redrive_expired_leases() -> int:
    """A move lease past its expiry was left by an invocation that died while moving, or by a
    failed attempt: wake its agent (the wake takes the lease over, as the next attempt). The
    lease is short and renewed while its holder lives, so this comes within a lease of a death.
    A lease marked failed is an ended move: its agent is blocked until a fix re-arms it."""
    expired = (
        store.db()
        .collection_group("moveLeases")
        .where(filter=firestore.FieldFilter("expiresAt", "<", now()))
        .limit(chat_settings().watchdog_max_reads)
    )
    woken: dict[str, list[str]] = {}
    for snap in expired.get():
        params = paths.match(paths.MOVE_LEASE, snap.reference.path)
        if params is not None and not leases.LeaseDoc.of(snap).failed:  # ended: blocked
            woken.setdefault(params["experimentId"], []).append(params["participantId"])
    for experiment_id, ids in woken.items():
        publish_wakes(experiment_id, "watchdog: move lease expired", *ids)
    return sum(len(ids) for ids in woken.values())
