"""The chat's pure decisions: its locks' death, its election and quota records, its system
messages and notices, the watchdog's nudge allowance and index entries, the conductor's seats."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from functions.chat import active, conducted, fanout, messages, nudges, sweep, watchdog
from functions.rooms import Room
from shared.models import ChatMessage
from shared.models.chat import UserType
from shared.models.stages import ChatStage

AT = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
ROOM = Room("e1", "c1", "s1")


@pytest.fixture(autouse=True)
def _lease(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLAB_LEASE_SECONDS", "30")


def test_lock_ttl_is_one_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    assert messages.lock_ttl() == timedelta(seconds=30)
    monkeypatch.setenv("DLAB_LEASE_SECONDS", "4")
    assert messages.lock_ttl() == timedelta(seconds=4)


@pytest.mark.parametrize(
    ("lock", "dead"),
    [
        (messages.LockDoc(token="t", expires_at=AT + timedelta(seconds=1)), False),
        (messages.LockDoc(token="t", expires_at=AT), True),
        (messages.LockDoc(token="", expires_at=AT + timedelta(seconds=10)), True),
        # written without an expiry (an older version): dead one lease after it was taken
        (messages.LockDoc(token="t", timestamp=AT - timedelta(seconds=30)), True),
        (messages.LockDoc(token="t", timestamp=AT - timedelta(seconds=29)), False),
        (messages.LockDoc(token="t"), False),  # neither: nothing says it died
    ],
)
def test_lock_dead(lock: messages.LockDoc, dead: bool) -> None:
    assert lock.dead(AT) is dead


def test_answer_record_keeps_the_responder_and_names_the_message() -> None:
    before = datetime.now(UTC)
    record = messages.answer_record(
        {"agentType": "participant", "privateId": "p1", "publicId": "pub1"}, "m1"
    )
    assert record["agentType"] == "participant"
    assert (record["privateId"], record["publicId"], record["messageId"]) == ("p1", "pub1", "m1")
    assert before <= record["timestamp"] <= datetime.now(UTC)


def test_answer_record_needs_the_responders_private_id() -> None:
    with pytest.raises(ValueError, match="privateId"):
        messages.answer_record({"agentType": "participant"}, "m1")


def test_record_ids() -> None:
    assert messages.quota_id({"privateId": "p1"}, 2) == "quota-p1-2"
    assert messages.left_lock_id("p1") == "left-p1"
    assert conducted.seat("mediator", "m1") == "mediator:m1"
    assert conducted.seat("mediator", "m1") != conducted.seat("participant", "m1")
    assert conducted.pick_record("msg") == "conductor-msg"


def _message(kind: UserType, **extra: object) -> ChatMessage:
    return ChatMessage.model_validate({"id": "x", "type": kind, **extra})


def test_last_conversational_skips_system_messages() -> None:
    first = _message(UserType.PARTICIPANT)
    mediator = _message(UserType.MEDIATOR)
    system = _message(UserType.SYSTEM)
    assert messages.last_conversational([first, mediator, system, system]) is mediator
    assert messages.last_conversational([system]) is None
    assert messages.last_conversational([]) is None


def test_system_message_keeps_marker_fields_and_is_a_notice() -> None:
    left = messages.system_message("p1 left", "d1", **{messages.LEFT_CHAT_FIELD: "p1"})
    assert left.type == UserType.SYSTEM and left.discussion_id == "d1"
    assert left.message == "p1 left" and left.profile.name == "System"
    assert left.to_firestore()[messages.LEFT_CHAT_FIELD] == "p1"
    assert messages.is_notice(left)
    assert messages.system_message("over", None, timerEnded=True).discussion_id is None
    assert messages.is_notice(messages.system_message("over", None, timerEnded=True))
    other = messages.system_message("p2 left", "d1")
    assert left.id != other.id
    assert not messages.is_notice(other)  # a system message that asks something


def test_a_participant_is_never_a_notice() -> None:
    assert not messages.is_notice(_message(UserType.PARTICIPANT, timerEnded=True))


def test_still_in_thread() -> None:
    assert messages._still_in(None, "d1")  # no switch yet
    assert messages._still_in({"discussionId": "d1"}, "d1")
    assert not messages._still_in({"discussionId": "d2"}, "d1")


@pytest.mark.parametrize(
    ("kept", "after", "count"),
    [
        ({"after": "m1", "count": 2}, "m1", 2),
        ({"after": "m0", "count": 2}, "m1", 0),  # kept for an older message: spent no more
        ({}, "m1", 0),
        ({"after": "m1"}, "m1", 0),
    ],
)
def test_nudge_count_since_the_last_message(
    kept: dict[str, object], after: str, count: int
) -> None:
    assert nudges._count(kept, after) == count


def test_nudge_path_under_the_chat() -> None:
    group = nudges.Candidate(ROOM, "a1", "m1")
    assert nudges.path(group) == "experiments/e1/cohorts/c1/publicStageData/s1/nudges/a1"
    private = nudges.Candidate(Room("e1", "c1", "s1", "p9"), "a1", "")
    assert nudges.path(private) == "experiments/e1/participants/p9/stageData/s1/nudges/a1"


def test_no_candidates_no_reads() -> None:
    assert nudges.allowed([], 3) == ([], [])


def test_active_chat_entry_round_trip() -> None:
    entry = active.ActiveChat.of(ROOM)
    assert entry.room == ROOM
    assert entry.path == "experiments/e1/activeChats/c1~s1" == active.entry_path(ROOM)
    assert active.entry_path(Room("e1", "c2", "s1")) != entry.path


def test_only_timed_chats_need_an_entry() -> None:
    assert active.needs_entry(ChatStage(id="s", time_limit_in_minutes=5))
    assert not active.needs_entry(ChatStage(id="s"))
    assert not active.needs_entry(ChatStage(id="s", time_limit_in_minutes=0))


def test_a_sweep_cursor_after_all_of_an_experiment() -> None:
    after = sweep._after_all_of("e1")
    assert after.startswith("experiments/e1/participants/")
    # after every participant of e1, before the next experiment's
    assert "experiments/e1/participants/zzzz~" < after < "experiments/e2/participants/a"
    assert after > "experiments/e1/participants/\U0010fffe"
    assert sweep.Cursor().found_after == "" and sweep.Cursor().after == {}


def test_a_snapshots_update_time_as_a_datetime() -> None:
    assert watchdog._datetime(AT) is AT
    stamp = Timestamp()
    stamp.FromDatetime(AT.replace(tzinfo=None))
    assert watchdog._datetime(stamp) == AT


def test_no_fan_out_remembered_asks_nobody_from_memory() -> None:
    assert not fanout.asks_everyone(Room("e-none", "c", "s"))
