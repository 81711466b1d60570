"""What the functions cost in Firestore: the per-invocation counters, and a watchdog whose reads
do not grow with finished experiments (the index of running timed chats)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from chat_docs import chat_experiment, persona_prompt
from delivery_policies import Losing
from experiment_state import doc
from google.api_core import exceptions as gexc
from google.cloud.firestore import FieldFilter
from raw_docs import agent, human, stage, write_experiment

from functions import reads, rooms, store, usage
from functions.agents import cohort_lock
from functions.chat import active, agents, election, fanout, messages, watchdog
from functions.rooms import Room
from functions.wire import AgentTurn
from shared.models import ChatMessage
from tools import usage_report


def test_usage_counts_billed_documents_not_calls(runtime, db):
    base = "usage-test"
    for i in range(3):
        db.document(f"{base}/d{i}").set({"n": i})
    with usage.counting() as used:
        db.document(f"{base}/d0").get()  # 1 read
        db.document(f"{base}/missing").get()  # 1 read (a missing document still bills)
        list(db.collection(base).get())  # 3 reads
        list(db.collection(base).where(filter=FieldFilter("n", "==", 99)).get())  # empty: 1 read
        batch = db.batch()
        batch.set(db.document(f"{base}/d3"), {"n": 3})
        batch.update(db.document(f"{base}/d0"), {"n": 10})
        batch.delete(db.document(f"{base}/d1"))
        batch.commit()
    assert used.fields() == {"reads": 6, "writes": 2, "deletes": 1, "transactions": 0, "rpcs": 5}
    assert used.by_method == {"BatchGetDocuments": 2, "RunQuery": 2, "Commit": 1}
    with usage.counting() as outer:
        with usage.counting() as inner:
            db.document(f"{base}/d0").get()
        db.document(f"{base}/d2").get()
    assert (inner.reads, outer.reads) == (1, 2)  # scopes nest
    with usage.counting() as counted:
        assert db.collection(base).count().get()[0][0].value == 3  # an aggregation: 1 read
    assert (counted.reads, counted.by_method) == (1, {"RunAggregationQuery": 1})


def test_usage_counts_reads_side_by_side_as_one_round_trip(runtime, db):
    """The chain of sequential round trips (``usage.round_trips``): reads made at the same time
    (``reads.together``) are one, a read after them another, a refused call one too."""
    base = "usage-chain"
    db.document(f"{base}/a").set({"n": 1})
    db.document(f"{base}/b").set({"n": 2})
    with reads.invocation(), usage.counting() as used:
        reads.together(
            lambda: db.document(f"{base}/a").get(), lambda: db.document(f"{base}/b").get()
        )
        assert used.round_trips == 1
        db.document(f"{base}/a").get()
        with pytest.raises(gexc.Conflict):
            db.document(f"{base}/a").create({"n": 3})
    assert (used.round_trips, used.rpcs) == (3, 3)  # the refused create bills nothing
    assert [(place, method) for place, method, _ in used.calls] == [
        (1, "BatchGetDocuments"),
        (1, "BatchGetDocuments"),
        (2, "BatchGetDocuments"),
    ]


def test_a_record_written_later_goes_with_the_next_batch_that_takes_it(runtime, db):
    """``store.set_later`` (a model call's log): no round trip of its own when a batch takes
    it; one that fails leaves it waiting; what no batch took is written at the block's end,
    an exception included; outside a block it is written at once."""
    base = "later-test"
    with usage.counting() as used, store.writing_later():
        store.set_later(f"{base}/log1", {"n": 1})
        assert not db.document(f"{base}/log1").get().exists  # waiting (1 read)
        failing = store.db().batch()
        failing.create(store.ref(f"{base}/log1-exists"), {})
        db.document(f"{base}/log1-exists").set({})  # (1 write)
        store.with_later(failing)  # taken, but the batch fails: still waiting
        with pytest.raises(gexc.AlreadyExists):
            failing.commit()
        batch = store.db().batch()
        batch.set(store.ref(f"{base}/work"), {"done": True})
        logged = store.with_later(batch)
        batch.commit()
        logged()
        assert db.document(f"{base}/log1").get().to_dict() == {"n": 1}  # (1 read)
    assert used.by_method["Commit"] == 2  # the set, the work with its log (a refused one: 0)
    with pytest.raises(RuntimeError), store.writing_later():
        store.set_later(f"{base}/log2", {"n": 2})
        raise RuntimeError("the step failed")
    assert db.document(f"{base}/log2").get().to_dict() == {"n": 2}
    with pytest.raises(RuntimeError, match="the step failed") as failed, store.writing_later():
        store.set_later(base, {"n": 0})  # a collection's path: this log cannot be written
        raise RuntimeError("the step failed")
    assert "model log was not written" in " ".join(failed.value.__notes__)
    store.set_later(f"{base}/log3", {"n": 3})
    assert db.document(f"{base}/log3").get().exists


def test_documents_read_ahead_already_are_not_read_again(runtime, db):
    """``reads.batch`` within a ``reads.ahead`` block skips what the block read ahead and has not
    used yet (a turn reads its agent's prompt with the profile when it can guess it)."""
    base = "ahead-test"
    for name in "abcd":
        db.document(f"{base}/{name}").set({"name": name})
    with reads.invocation(), usage.counting() as used, reads.ahead([f"{base}/a", f"{base}/b"]):
        reads.batch([f"{base}/a", f"{base}/c", f"{base}/d"])
        assert [store.snapshot_data(f"{base}/{n}") for n in "acd"] == [{"name": n} for n in "acd"]
    assert (used.reads, used.by_method) == (4, {"BatchGetDocuments": 2})  # a read once


def test_an_agents_turn_guesses_its_prompt_from_its_last_one(runtime, db):
    e = chat_experiment(db, mediator=False)
    config = persona_prompt(db, e, max_responses=0)
    pid = agent(db, e, "end", agentConfig=config)
    profile = f"experiments/{e}/participants/{pid}"
    assert agents.documents_of(e, "participant", pid, "chat") == (profile,)
    with reads.invocation():
        stage = store.read_stage(e, "chat")
        assert agents.load(e, "participant", pid, stage) is not None
    prompt = f"experiments/{e}/agentParticipants/talker/prompts/chat"
    assert agents.documents_of(e, "participant", pid, "chat") == (profile, prompt)
    mediator = f"experiments/{e}/mediators/{pid}"
    assert agents.documents_of(e, "mediator", pid, "chat") == (mediator,)
    keys = "experimenterData/someone@lab.org"
    with reads.invocation():  # a turn reads the creator's keys with the prompt...
        assert agents.load(e, "participant", pid, stage, [keys]) is not None
    with reads.invocation():  # ...and a fan-out or quiet round reads the prompt alone
        assert agents.participant_agent(e, pid, stage) is not None
    assert agents.documents_of(e, "participant", pid, "chat") == (profile, prompt, keys)


def test_a_fan_out_reads_the_mediators_prompts_with_the_stage(runtime, db):
    """The mediators' prompts a fan-out found for a stage are read, the next time, in the
    first round trip (with the stage and the chat's public data): the mediator query is then
    the only read after it."""
    e = chat_experiment(db)
    assert agents.mediator_documents(e, "cohort-a", "chat") == ()
    with reads.invocation():
        stage = store.read_stage(e, "chat")
        assert agents.mediators_of(e, "cohort-a", stage) == ["med-1"]
    prompt = f"experiments/{e}/agentMediators/host/prompts/chat"
    assert agents.mediator_documents(e, "cohort-a", "chat") == (prompt,)
    assert agents.mediator_documents(e, "cohort-b", "chat") == ()
    public = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat"
    with reads.invocation(), usage.counting() as used, reads.ahead([public, prompt]):
        assert agents.mediators_of(e, "cohort-a", stage) == ["med-1"]
    assert used.by_method == {"BatchGetDocuments": 1, "RunQuery": 1}


def test_a_fan_out_reads_who_is_in_the_chat_beside_the_stage_once_it_knows_the_chat(runtime, db):
    """An instance whose last fan-out for a chat asked its agents (race, claim) reads who is in
    the chat in the next one's first round trip (``fanout.read_members``), beside the stage;
    one that found the chat turn-based stops doing so (it would not use them)."""
    e = chat_experiment(db)
    message = ChatMessage.model_validate(messages.system_message("hello", None))
    assert not fanout.asks_everyone(Room(e, "cohort-a", "chat"))
    with runtime.delivery_policy(Losing(lambda d: d.function == "onAgentTurn")):
        with reads.invocation():
            stage = store.read_stage(e, "chat")
            assert fanout.fan_out(e, "cohort-a", stage, message) == 1  # the mediator
        assert fanout.asks_everyone(Room(e, "cohort-a", "chat"))
        with reads.invocation(), usage.counting() as used:
            members = fanout.read_members(e, "cohort-a", "chat")
            assert fanout.fan_out(e, "cohort-a", stage, message, members) == 1
        assert (members.participants, [m.private_id for m in members.mediators]) == ([], ["med-1"])
        assert used.by_method["RunQuery"] == 2  # the two reads of who is in the chat, no more
        db.document(f"experiments/{e}/stages/chat").update({"isTurnBased": True})
        with reads.invocation():
            fanout.fan_out(e, "cohort-a", store.read_stage(e, "chat"), message)
        runtime.wait_until_idle(timeout=60)
    assert not fanout.asks_everyone(Room(e, "cohort-a", "chat"))


def _tick_reads(runtime) -> int:
    """One tick in this thread, as an invocation runs it (reads kept per invocation)."""
    with usage.counting() as used, reads.invocation():
        watchdog.tick()
    return used.reads


def _timed_chat_with_quiet_agents(db, agents: int) -> str:
    e = chat_experiment(db, mediator=False, timeLimitInMinutes=60)
    config = persona_prompt(db, e, max_responses=100, ready_field=False, min_messages=10**6)
    for i in range(agents):
        agent(db, e, "intro", number=i, agentConfig=config)
    return e


def _finish(db, e: str) -> None:
    """Everyone done, the chat long over (as a finished experiment leaves it)."""
    public = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat"
    db.document(public).update({"discussionEndTimestamp": datetime.now(UTC)})
    for snap in db.collection(f"experiments/{e}/participants").get():
        snap.reference.update({"currentStatus": "SUCCESS"})


def test_watchdog_reads_as_much_with_finished_experiments_as_without(
    runtime, db, tmp_path, monkeypatch
):
    running = _timed_chat_with_quiet_agents(db, 2)
    runtime.wait_until_idle(timeout=120)
    room = Room(running, "cohort-a", "chat")
    assert doc(db, active.entry_path(room)) is not None  # the agents entered a timed chat
    _tick_reads(runtime)  # settles the index (nothing to drop here)
    before = _tick_reads(runtime)
    finished = [_timed_chat_with_quiet_agents(db, 2) for _ in range(4)]
    runtime.wait_until_idle(timeout=120)
    for e in finished:
        _finish(db, e)
    runtime.wait_until_idle(timeout=120)
    _tick_reads(runtime)  # drops the finished chats from the index
    for e in finished:
        assert doc(db, active.entry_path(Room(e, "cohort-a", "chat"))) is None
    assert doc(db, active.entry_path(room)) is not None  # the running chat stays
    assert _tick_reads(runtime) == before
    # and each invocation logs what it cost, for the cost report
    log = tmp_path / "usage.log"
    monkeypatch.setenv("DLAB_USAGE_LOG", str(log))
    runtime.tick()
    runtime.wait_until_idle(timeout=60)
    entries = [json.loads(line)["firestoreUsage"] for line in log.read_text().splitlines()]
    ticks = [e for e in entries if e["function"] == "watchdog"]
    assert ticks and ticks[0]["reads"] == before, entries
    report = usage_report.summarize(usage_report.read_entries([log]))
    assert report["functions"]["watchdog"]["invocations"] == len(ticks)


def test_a_timed_chat_that_started_before_its_entry_is_still_ended(runtime, db):
    """The timer is indexed in the batch that starts it, and when someone enters the chat; an
    entry found ended is dropped, one past its time ends the chat."""
    e = _timed_chat_with_quiet_agents(db, 1)
    runtime.wait_until_idle(timeout=120)
    public = f"experiments/{e}/cohorts/cohort-a/publicStageData/chat"
    db.document(public).update({"discussionStartTimestamp": datetime.now(UTC) - timedelta(hours=2)})
    runtime.tick()
    runtime.wait_until_idle(timeout=120)
    assert doc(db, public)["discussionEndTimestamp"] is not None
    assert doc(db, active.entry_path(Room(e, "cohort-a", "chat"))) is None


def test_a_running_timed_chat_missing_from_the_index_is_listed_again(runtime, db):
    """An entry lost (or data from before the index): the watchdog lists the chat again when it
    finds agents in it, and then ends it on time."""
    e = _timed_chat_with_quiet_agents(db, 1)
    runtime.wait_until_idle(timeout=120)
    room = Room(e, "cohort-a", "chat")
    db.document(active.entry_path(room)).delete()
    runtime.tick()
    runtime.wait_until_idle(timeout=60)
    assert doc(db, active.entry_path(room)) is not None


def test_a_snapshots_data_is_its_dict(runtime, db):
    """``store.data_of``: the data ``to_dict`` gives; None for a missing document."""
    path = "copy-test/a"
    stamp = datetime(2026, 1, 2, tzinfo=UTC)
    db.document(path).set({"timestamps": {"readyStages": {"s1": stamp}}, "name": "a"})
    snap = store.ref(path).get()
    assert store.data_of(snap) == snap.to_dict()
    assert store.data_of(store.ref("copy-test/missing").get()) is None


def test_a_barrier_check_that_finds_someone_missing_reads_a_few_members(runtime, db):
    """Wait for all: every arrival checks the lock, and all but the last find someone missing.
    A first look at a few members settles that; only a check that finds them all arrived
    reads the whole cohort (before, every check read it: N² profiles per barrier)."""
    barrier = stage("meet", "info", infoLines=["Hi"])
    barrier["progress"] = {**barrier["progress"], "waitForAllParticipants": True}
    e = write_experiment(db, [stage("intro", "info", infoLines=["Hi"]), barrier])
    size = 3 * cohort_lock.FIRST_LOOK
    with runtime.delivery_policy(Losing(lambda d: True)):  # the documents alone, no functions
        ids = [human(db, e, "meet") for _ in range(size)]
        late = sorted(ids)[0]  # in the first look (document order)
        db.document(f"experiments/{e}/participants/{late}").update(
            {"currentStageId": "intro", "timestamps.readyStages": {"intro": datetime.now(UTC)}}
        )
        runtime.wait_until_idle(timeout=60)
    with usage.counting() as waiting:
        assert not cohort_lock.unlock_if_ready(e, "cohort-a", "meet")
    assert waiting.reads <= cohort_lock.FIRST_LOOK + 2  # the cohort, the stage, the first look
    with runtime.delivery_policy(Losing(lambda d: True)):
        db.document(f"experiments/{e}/participants/{late}").update(
            {"currentStageId": "meet", "timestamps.readyStages.meet": datetime.now(UTC)}
        )
        runtime.wait_until_idle(timeout=60)
    with usage.counting() as last:
        assert cohort_lock.unlock_if_ready(e, "cohort-a", "meet")
    assert last.reads >= size  # the last arrival sees everyone
    assert doc(db, f"experiments/{e}/cohorts/cohort-a")["stageUnlockMap"]["meet"] is True


def _chat_message(db, room: Room, mid: str) -> None:
    db.document(room.message_path(mid)).set(
        {"id": mid, "type": "system", "message": mid, "timestamp": datetime.now(UTC)}
    )


def test_turns_on_one_instance_share_a_recent_read_of_the_chat(runtime, db, monkeypatch):
    """``rooms.history_showing``: a read another invocation just made is taken when it shows
    the message the turn answers (no RPC), never when it does not (a newer message's turn
    reads it now) or when it is older than its ``max_age_s``; ``history`` always reads."""
    e = chat_experiment(db, mediator=False)
    room = Room(e, "cohort-a", "chat")
    monkeypatch.setattr(rooms.recent_reads, "max_age_s", 60.0)  # a slow machine takes it as it is
    _chat_message(db, room, "m1")
    first = rooms.history(room)
    _chat_message(db, room, "m2")  # not in the read above
    with usage.counting() as shared:
        taken = rooms.history_showing(room, "m1")
    assert [m.id for m in taken] == [m.id for m in first] == ["m1"]
    assert shared.rpcs == 0
    with usage.counting() as newer:
        assert [m.id for m in rooms.history_showing(room, "m2")] == ["m1", "m2"]
    assert newer.rpcs > 0
    assert [m.id for m in rooms.history_showing(room, "m1")] == ["m1", "m2"]  # the latest read
    taken.clear()  # a caller's list is its own
    assert [m.id for m in rooms.history_showing(room, "m1")] == ["m1", "m2"]
    _chat_message(db, room, "m3")
    assert [m.id for m in rooms.history(room)] == ["m1", "m2", "m3"]
    monkeypatch.setattr(rooms.recent_reads, "max_age_s", 0.0)
    _chat_message(db, room, "m4")
    assert [m.id for m in rooms.history_showing(room, "m1")][-1] == "m4"  # too old: read now
    assert [m.id for m in rooms.history_showing(room, "")][-1] == "m4"  # an opening reads now


def test_chat_prompts_share_a_recent_read_of_the_cohort(runtime, db, monkeypatch):
    """``cohort_lock.members_shown``: what a chat prompt shows of the members, read once for
    the turns of a message (a read from the last ``max_age_s`` is taken), with where each one
    is; the barrier's ``cohort_members`` reads now."""
    e = chat_experiment(db, mediator=False)
    monkeypatch.setattr(cohort_lock._shown, "max_age_s", 60.0)
    first = human(db, e, "chat")
    with reads.invocation():
        shown = cohort_lock.members_shown(e, "cohort-a")
    assert [(m.private_id, m.current_stage_id) for m in shown] == [(first, "chat")]
    second = human(db, e, "chat")
    with usage.counting() as shared:
        assert [m.private_id for m in cohort_lock.members_shown(e, "cohort-a")] == [first]
    assert shared.rpcs == 0
    assert {m.private_id for m in cohort_lock.cohort_members(e, "cohort-a")} == {first, second}
    monkeypatch.setattr(cohort_lock._shown, "max_age_s", 0.0)
    assert {m.private_id for m in cohort_lock.members_shown(e, "cohort-a")} == {first, second}


@pytest.mark.parametrize("policy", ["race", "claim"])
def test_a_fan_out_publishes_from_memory_before_it_reads_then_only_what_it_missed(
    runtime, db, monkeypatch, policy
):
    """An instance whose last fan-out in a race or claim chat asked its agents publishes the
    next message's turns to them before reading anything (``fanout.ask_from_memory``); the
    fan-out that follows reads who is in the chat and publishes only what memory missed: under
    race a turn for someone who came since, under claim nothing more (the order from memory
    stands for the message: a second order would ask an agent twice). A memory older than
    ``DLAB_FANOUT_MEMORY_SECONDS``, or that setting at 0, is not used."""
    e = chat_experiment(db, mediator=False, electionPolicy=policy)
    room = Room(e, "cohort-a", "chat")
    first, second = (messages.system_message(text, None) for text in ("hello", "again"))
    published: list[AgentTurn] = []
    monkeypatch.setattr(election, "publish_turns", lambda *turns: published.extend(turns))
    with runtime.delivery_policy(Losing(lambda d: d.function == "onAgentTurn")):
        a = agent(db, e, "chat", number=0)
        runtime.wait_until_idle(timeout=60)
        with reads.invocation():
            stage = store.read_stage(e, "chat")
            assert fanout.fan_out(e, "cohort-a", stage, first) == 1
        published.clear()
        with reads.invocation(), usage.counting() as used:
            asked = fanout.ask_from_memory(room, second)
        assert used.by_method == {}  # published before anything was read
        assert asked is not None and asked.groups == {"participant": [a], "mediator": []}
        assert [(t.agent_id, t.trigger_chat_id) for t in published] == [(a, second.id)]
        b = agent(db, e, "chat", number=1)
        runtime.wait_until_idle(timeout=60)
        published.clear()
        with reads.invocation():
            count = fanout.fan_out(e, "cohort-a", stage, second, asked=asked)
        assert [t.agent_id for t in published] == ([b] if policy == "race" else [])
        assert count == len(published)
        again = fanout.ask_from_memory(room, second)
        assert again is not None and again.groups["participant"] == sorted([a, b])
        monkeypatch.setenv("DLAB_FANOUT_MEMORY_SECONDS", "0")
        assert fanout.ask_from_memory(room, second) is None
        runtime.wait_until_idle(timeout=60)
