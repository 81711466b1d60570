"""Chat documents: new messages, the single-responder election, and trigger-log locks."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import firestore

from functions import leases, reads, store, transactions
from functions.rooms import Room
from functions.settings import backbone_settings
from shared.models import ChatMessage, DocModel, ProfileBase, Timestamp, UserType, now

LEFT_CHAT_FIELD = "leftChatBy"
"""Our explicit marker on a "has left the chat" system message: the public id of who left (DL
infers it from senderId, their issue #867)."""
DECLINED_FIELD = "declinedBy"
"""Marks the system notice posted when a mediator declines to answer in a private chat: the
participant is not left "waiting for a response" (DL #938, #1011)."""
SAID_READY_FIELD = "saidReadyToEnd"
"""On an agent's reply whose decision said it is ready to end: the readiness decided with it,
recorded in the reply's own write, so that one lost with a killed invocation after the post is
acted on at the agent's next turn (``turn._ready_unacted``)."""
SKIPPED_FIELD = "skippedTurnOf"
"""Marks the system notice of a turn-based chat skipping an agent whose turn failed."""
OPENING_PREFIX = "initial-"
"""Opening turns' locks: ``initial-{agentType}-{agentId}``."""
PASSED_PREFIX = "passed-"
"""``triggerLogs/passed-{message}-{agentType}-{agentId}``: a claim turn that ended without
answering the message (it declined, a gate stopped it, it left), written in the batch that lets
its claim go: a duplicate of the turn reads its model calls from the journal, and the watchdog
knows whom the message's order has asked (``passed_by``) and whether it ran out."""
ANSWERED_PREFIX = "answered-"
"""``triggerLogs/answered-{message}``: created with the first agent reply to a group chat message,
whatever its type or policy, so a second reply to it fails in its own write (``post``)."""


def last_conversational(messages: list[ChatMessage]) -> ChatMessage | None:
    """The last message that is not a system message (DL's "moved on" check ignores them)."""
    for message in reversed(messages):
        if message.type != UserType.SYSTEM:
            return message
    return None


def message_id(room: Room, *what: object) -> str:
    """A message's id, derived from the room and what the message is (its author and response
    slot, or the event a notice reports), never drawn: the same run writes the same ids, so
    what is derived from a message's id (the seeded claim order of its answerers, a reply's
    request and so its journal key) is the same too. What names a message names one message
    only: an agent's reply by its response slot (``quota-``, created in the reply's own write),
    a notice by the event it reports."""
    named = "\x1f".join([room.chats_path, *(str(part) for part in what)])
    return hashlib.sha256(named.encode()).hexdigest()[:32]


def system_message(
    text: str, discussion_id: str | None, message_id: str = "", **fields: Any
) -> ChatMessage:
    """A new system message (``message_id``: see ``message_id``; the backend names each one,
    drawn only where none is given); ``fields`` by their document names, ours included (the
    markers above: ``LEFT_CHAT_FIELD``, ...), which the model keeps as extra fields."""
    return ChatMessage.model_validate(
        {
            "id": message_id or uuid.uuid4().hex,
            "discussionId": discussion_id,
            "type": UserType.SYSTEM,
            "message": text,
            "timestamp": now(),
            "profile": ProfileBase(name="System"),
            **fields,
        }
    )


def write(room: Room, message: ChatMessage) -> None:
    store.ref(room.message_path(message.id)).set(message.to_firestore())


class AnswerRecord(DocModel):
    """``triggerLogs/{election}`` and ``quota-{agent}-{slot}``: who answered which message
    (the responder's fields as ``post`` was given them)."""

    agent_type: str = ""
    private_id: str
    public_id: str = ""
    message_id: str
    timestamp: datetime


def answer_record(responder: dict[str, Any], message_id: str) -> dict[str, Any]:
    """The document of an answer's election record and response slot, written now."""
    fields = {**responder, "messageId": message_id, "timestamp": now()}
    return AnswerRecord.model_validate(fields).to_firestore()


class ThreadMarker(DocModel):
    """``triggerLogs/{THREAD_MARKER}``: the thread a multi-thread chat switched to, and when."""

    discussion_id: str
    timestamp: datetime


class ReplyRecord(DocModel):
    """``triggerLogs/answered-{message}``: the first agent reply to a group chat message, of any
    type (``post``). Its reply is ``replyId``, not ``messageId``: it elects nobody."""

    agent_type: str = ""
    private_id: str
    reply_id: str
    timestamp: datetime


class Posted(StrEnum):
    """What became of an agent's message (``post``)."""

    POSTED = "posted"
    ANSWERED = "answered"
    """Another agent of the type answered the message first (its election record exists), any
    agent replied to it (``answered-``), another turn of this agent took the response slot, or
    the participant left the chat."""
    THREAD_MOVED = "thread-moved"
    """The chat moved to another thread since the message was written for its own."""


def post(
    room: Room,
    message: ChatMessage,
    responder: dict[str, Any],
    *,
    election: str | None,
    slot: int | None,
    named_in: str | None = None,
    thread_read: transactions.Begun | None = None,
    answers: str | None = None,
) -> Posted:
    """Write an agent's message in one atomic write that also creates its election record
    ``triggerLogs/{election}`` and its response slot ``quota-{agent}-{slot}``; the write fails
    if either exists. So only one agent of a type answers a message (DL's check is
    read-then-write and races), and concurrent turns of one agent cannot exceed maxResponses.
    ``named_in``: the election record the turn already holds (taken as a lock, ``lock``): the
    message is named in it. No transaction on the chat's public data: twenty agents electing at
    once do not contend for it. A message in a discussion thread is written in a transaction
    that reads the thread marker (``THREAD_MARKER``, written only by a thread switch) and writes
    nothing if the chat moved on since, so a reply never lands in a thread that has ended.
    ``thread_read``: that transaction, begun by its read of the marker beside the turn's last
    read of the chat (``read_thread``); the post commits or closes it. ``answers``: the group chat
    message the reply answers; the write creates ``answered-{answers}`` (``ANSWERED_PREFIX``),
    so of two agents' replies to one message only the first is written, whoever read what.
    A participant's reply outside threads is written only while its ``left-`` lock is absent
    (it has not left, nor is it leaving). A claim turn relies on both to post without reading
    the chat again (``turn._speak``)."""
    logs = lambda log_id: store.ref(room.log_path(log_id))  # noqa: E731
    chat_ref = store.ref(room.message_path(message.id))
    record = answer_record(responder, message.id)
    if election is not None and answered(room, election):
        return Posted.ANSWERED  # most losers stop here, without a write
    thread = message.discussion_id

    def write(
        batch: firestore.WriteBatch, marker: dict[str, Any] | None
    ) -> Callable[[], None] | None:
        """The writes, and what to call once they are committed; None if the thread moved."""
        if thread and not _still_in(marker, thread):
            return None
        if election is not None:
            batch.create(logs(election), record)
        if named_in is not None:
            batch.update(logs(named_in), AnswerRecord.fields(message_id=message.id))
        if slot is not None:
            batch.create(logs(quota_id(responder, slot)), record)
        if answers:
            replied = ReplyRecord(
                agent_type=responder.get("agentType", ""),
                private_id=responder["privateId"],
                reply_id=message.id,
                timestamp=now(),
            )
            batch.create(logs(ANSWERED_PREFIX + answers), replied.to_firestore())
            if not thread and responder.get("agentType") == "participant":
                _absent(batch, logs(left_lock_id(responder["privateId"])))
        batch.set(chat_ref, message.to_firestore())
        return store.with_later(batch)  # the log of the model call that wrote the message

    try:
        if thread:
            logged = _in_thread(room, write, thread_read)
        else:
            batch = store.db().batch()
            logged = write(batch, None)
            batch.commit()
    except (gexc.AlreadyExists, gexc.FailedPrecondition):
        return Posted.ANSWERED
    if logged is None:
        return Posted.THREAD_MOVED
    logged()
    return Posted.POSTED


def left_lock_id(private_id: str) -> str:
    """The lock a participant leaving the chat takes and keeps (``readiness.leave``)."""
    return f"left-{private_id}"


def _absent(batch: firestore.WriteBatch, ref: firestore.DocumentReference) -> None:
    """The write fails unless ``ref`` does not exist: a delete of it on that condition (a no-op
    when it holds), as Firestore has no precondition on a document the write does not touch."""
    batch.delete(ref, option=store.db().write_option(exists=False))


THREAD_MARKER = "current-thread"
"""``triggerLogs/current-thread``: the thread the chat is in, written with each switch
(``readiness.advance_thread``) and read by each threaded post. A marker of its own, not the
public data, which every participant's readiness marks write: a post's transaction reading
that would hold them up."""


Writes = Callable[[Any, dict[str, Any] | None], Callable[[], None] | None]
"""A post's writes into a transaction, given the thread marker it read (``post``)."""


def _in_thread(room: Room, write: Writes, thread_read: transactions.Begun | None) -> Any:
    """The writes in the transaction ``thread_read`` began, else (none, or it met contention)
    in one that reads the marker first, retried on contention."""
    marker = room.log_path(THREAD_MARKER)
    if thread_read is not None:
        with thread_read:
            logged = write(thread_read.transaction, thread_read.documents.get(marker))
            try:
                if logged is not None:
                    thread_read.commit()
                return logged
            except gexc.Aborted:
                pass  # a switch held the marker: read it again in a transaction of our own
            except gexc.InvalidArgument as error:
                if not transactions.is_lost(error):
                    raise  # a lost transaction (an emulator restart): in one of our own
    return transactions.run(
        lambda transaction: write(transaction, store.snapshot_data(marker, transaction))
    )


def read_thread(room: Room) -> transactions.Begun:
    """Begin a threaded post's transaction by reading the thread marker (``post``)."""
    return transactions.begin_by_reading([room.log_path(THREAD_MARKER)])


def _still_in(marker: dict[str, Any] | None, thread: str) -> bool:
    """The chat has not moved on from ``thread``: the marker says so, or there is none yet
    (no switch since the chat began with its first thread)."""
    return marker is None or marker.get("discussionId") == thread


def mark_thread(room: Room, thread: str, transaction: firestore.Transaction) -> None:
    """Record a switch to ``thread`` in the switch's own transaction (``THREAD_MARKER``)."""
    marker = ThreadMarker(discussion_id=thread, timestamp=now())
    transaction.set(store.ref(room.log_path(THREAD_MARKER)), marker.to_firestore())


def answered(room: Room, election: str) -> bool:
    """Whether the message has its responder of the type (the election record exists)."""
    return bool(store.ref(room.log_path(election)).get().exists)


def quota_id(responder: dict[str, Any], slot: int) -> str:
    return f"quota-{responder['privateId']}-{slot}"


def lock_ttl() -> timedelta:
    return timedelta(seconds=backbone_settings().lease_seconds)


class LockDoc(leases.Expiring):
    """A trigger-log lock (``triggerLogs/{id}``): a lease taken by create, which the work it
    guards may keep as its record (``done``); the owner's fields beside it."""

    timestamp: Timestamp | None = None
    """When it was taken."""
    done: bool = False

    def dead(self, at: datetime) -> bool:
        """Nobody renews it any more: its expiry passed (a lock written without one, by an
        older version: one lease after it was taken). A kept lock is not renewed either:
        callers look only at locks whose work left no other trace."""
        if self.expires_at is None:
            return self.timestamp is not None and self.timestamp <= at - lock_ttl()
        return not self.live(at)


def take_lock(room: Room, log_id: str, owner: dict[str, Any]) -> leases.Held | None:
    """Create ``triggerLogs/{log_id}`` if absent (opening messages, claims): the lock as we
    wrote it (a lease of ``lock_ttl``, for ``lock`` to renew), or None if it exists."""
    path, token, taken_at = room.log_path(log_id), uuid.uuid4().hex, now()
    fields = LockDoc(token=token, expires_at=taken_at + lock_ttl(), timestamp=taken_at)
    try:
        result = store.ref(path).create({**owner, **fields.to_firestore()})
    except gexc.AlreadyExists:
        return None
    return leases.Held(path, token, 1, written=result.update_time)


def passed_id(message_id: str, agent_type: str, agent_id: str) -> str:
    """The record that the agent's claim turn passed the message on (``PASSED_PREFIX``)."""
    return f"{PASSED_PREFIX}{message_id}-{agent_type}-{agent_id}"


def passed_by(room: Room, message_id: str) -> set[tuple[str, str]]:
    """(agent type, private id) of the agents whose claim turns passed the message on."""
    return {
        (str(data.get("agentType")), str(data.get("privateId")))
        for data in (snap.to_dict() or {} for snap in _locks(room, f"{PASSED_PREFIX}{message_id}-"))
    }


def release_lock(room: Room, log_id: str, passed: tuple[str, dict[str, Any]] | None = None) -> None:
    """Delete the lock at the same path it was taken (DL deletes a different path), in one
    batch with the log of a model call made under it (a claimed turn that declined), and with
    ``passed`` (its id and the owner it names), the record that its turn passed the message on
    (``passed_id``), if given."""
    batch = store.db().batch()
    batch.delete(store.ref(room.log_path(log_id)))
    if passed is not None:
        record, owner = passed
        batch.set(store.ref(room.log_path(record)), {**owner, "timestamp": now()})
    logged = store.with_later(batch)
    batch.commit()
    logged()


@dataclasses.dataclass
class Lock:
    """A trigger-log lock held by this invocation (see ``lock``)."""

    room: Room
    log_id: str
    taken: bool
    kept: bool = False
    held: leases.Held | None = None
    passed: tuple[str, dict[str, Any]] | None = None
    """A claim turn's record that it passed the message on (``passed_id``, and its owner),
    written when it lets the claim go, or when the block ends without an exception."""

    def let_go(self) -> None:
        """Release it now, before the block ends: the turn will not do the work it guards and
        hands it to another, which must find it free."""
        if self.taken and not self.kept:
            if self.held is not None:
                leases.stop_renewing(self.held)
            release_lock(self.room, self.log_id, self.passed)
            self.kept = True  # nothing left for the block's end to release

    def keep(self, *, mark_done: bool = False) -> None:
        """The work it guarded is done: the lock stays, as the record that it was done.
        ``mark_done`` says so on the lock itself, for work that may leave no other trace."""
        if mark_done and self.taken and not self.kept:
            store.ref(self.room.log_path(self.log_id)).update(LockDoc.fields(done=True))
        self.kept = True

    def keep_in(self, transaction: firestore.Transaction) -> None:
        """``keep(mark_done=True)`` with the mark written by ``transaction`` (the work's own
        write), so it costs no round trip: for a lock whose work leaves no trace the watchdog
        could tell from a dead holder's."""
        if self.taken and not self.kept:
            transaction.update(
                store.ref(self.room.log_path(self.log_id)), LockDoc.fields(done=True)
            )


_elections: reads.Recent[leases.Held | None] = reads.Recent(max_age_s=2.0)
"""Race elections this instance took part in during the last two seconds (``take_election``)."""


def take_election(room: Room, log_id: str, owner: dict[str, Any]) -> leases.Held | None:
    """``take_lock`` for a race election: the first of a message's turns on this instance whose
    answer is ready tries the record; the others, whose models answered at the same moment,
    wait for that try and lose without one of their own, so losing costs no write. A try that
    failed (not lost) leaves the next turn to try again."""
    tried_here = False

    def take() -> leases.Held | None:
        nonlocal tried_here
        tried_here = True
        return take_lock(room, log_id, owner)

    won = _elections.recent(room.log_path(log_id), take)
    return won if tried_here else None


def election_tried_here(room: Room, log_id: str) -> bool:
    """Whether a turn of this instance tried the race election a moment ago: a turn that tries
    now waits for that try and loses without one of its own (``take_election``)."""
    return _elections.young(room.log_path(log_id))


Take = Callable[[Room, str, dict[str, Any]], leases.Held | None]


@contextlib.contextmanager
def lock(
    room: Room,
    log_id: str,
    owner: dict[str, Any],
    *,
    needed: bool = True,
    take: Take = take_lock,
) -> Iterator[Lock]:
    """Take ``triggerLogs/{log_id}`` by atomic create for the block, so duplicate or concurrent
    deliveries do the work once without contending in transactions. Released on every exit
    (an exception included) unless ``keep()`` was called, so a failed attempt never leaves the
    work locked. While the block runs the lock's short expiry is renewed in the background
    (``leases.renew_while_held``: its first write comes a third of a lease after the take, so a
    quick block costs no round trip more), and a lock its holder left by dying is known as such
    within one lease (``release_unfinished``). ``needed=False`` yields a lock that is held
    without taking anything; ``take``: how it is taken (``take_election``)."""
    taken = take(room, log_id, owner) if needed else None
    held = Lock(room, log_id, taken is not None or not needed, held=taken)
    if not needed:
        held.kept = True
    if taken is not None:
        leases.renew_while_held(taken, lock_ttl())
    failed = False
    try:
        yield held
    except BaseException:
        failed = True  # the work is retried: it did not pass anything on
        raise
    finally:
        if taken is not None:
            leases.stop_renewing(taken)
        if held.taken and not held.kept:
            release_lock(room, log_id, None if failed else held.passed)


def _locks(room: Room, prefix: str) -> list[Any]:
    """The locks whose ids start with ``prefix``: a range of document ids (``__name__``, up to
    the highest code point), so the read does not grow with the chat's other locks."""
    logs = store.db().collection(room.base_path + "/triggerLogs")
    query = logs.where(filter=firestore.FieldFilter("__name__", ">=", logs.document(prefix)))
    query = query.where(
        filter=firestore.FieldFilter("__name__", "<", logs.document(prefix + "\U0010ffff"))
    )
    return list(query.get())


def has_locks(room: Room, prefix: str) -> bool:
    return bool(_locks(room, prefix))


def release_unfinished(room: Room, *prefixes: str, done_before: datetime | None = None) -> int:
    """Delete the locks with one of ``prefixes`` whose holders died: not done, and expired
    (``dead``). ``done_before``: done ones taken before then as well. Conditional on the lock
    being as read, so a lock taken or renewed meanwhile stays. Returns how many were released."""
    released, at = 0, now()
    for snap in (snap for prefix in prefixes for snap in _locks(room, prefix)):
        taken = LockDoc.model_validate(snap.to_dict() or {})
        if taken.done:
            stamp = taken.timestamp
            if done_before is None or stamp is None or stamp > done_before:
                continue
        elif not taken.dead(at):
            continue
        try:
            snap.reference.delete(option=store.db().write_option(last_update_time=snap.update_time))
        except (gexc.FailedPrecondition, gexc.NotFound):
            continue
        released += 1
    return released


def is_notice(message: ChatMessage) -> bool:
    """A system message that needs no answer: someone left, or the timer ended."""
    extra = message.model_extra or {}
    return message.type == UserType.SYSTEM and bool(
        extra.get(LEFT_CHAT_FIELD) or extra.get("timerEnded")
    )
