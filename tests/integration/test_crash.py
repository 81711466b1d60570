"""The runtime killed (SIGKILL) at random moments of a 5-agent run of the demo experiment (every
stage kind, a group chat with a mediator and two threads), the emulators kept running: after
the last restart every agent reaches SUCCESS with no touch, and no answer or message is doubled.
The last restart comes ``DLAB_CRASH_GAP`` seconds (26) after its kill, as a platform restarting a
crashed instance would: each agent left unfinished must move again (its position changes, or its
chat gets a message) within ``MOVE_BOUND_S`` of that restart (a watchdog tick plus one short
renewed lease).

A killed runtime loses the events it had not handled and leaves leases and locks behind, as a
function instance dying mid-move would (production re-delivers the events; locally nothing
does). The watchdog, ticked every second by the runtime, drives the agents on. Kills:
``DLAB_CRASH_KILLS`` (default 10), seeds: ``DLAB_CRASH_SEEDS`` (default ``7``; the closing figures
used ``7,8,9``).

A holder killed with the lease is the platform's failure, not the work's: no unit ends for it
(no record says "gave up"), and every reply the run used was paid once: each agent's answer to
each stage outside the chat is one recorded call, as in a calm run (the scripted model answers
every stage at its first turn).
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter

import pytest
from chat_docs import check_no_message_twice
from crashing import (  # noqa: F401 (emulators: a fixture)
    MOVE_BOUND_S,
    PROJECT,
    QUICK,
    all_done,
    emulators,
    environment,
    kill_runtime,
    positions,
    start_runtime,
)
from experiment_state import errors, model_logs, participants, template
from google.cloud import firestore

from emulator import config
from shared.models import ParticipantStatus
from tools.load_template import load

AGENTS = 5


SEEDS = [int(s) for s in os.environ.get("DLAB_CRASH_SEEDS", "7").split(",")]


@pytest.mark.parametrize("seed", SEEDS)
def test_killed_runtimes_lose_no_agent_and_double_nothing(emulators, monkeypatch, seed):  # noqa: F811
    kills = int(os.environ.get("DLAB_CRASH_KILLS", "10"))
    gap = float(os.environ.get("DLAB_CRASH_GAP", "26"))
    rng = random.Random(seed)
    # worker processes as make up runs them: a kill must take them down with the runtime
    monkeypatch.setitem(QUICK, config.PROCESSES_ENV, str(max(2, os.cpu_count() or 1)))
    for name, value in environment(emulators).items():
        monkeypatch.setenv(name, value)
    db = firestore.Client(project=PROJECT)
    runtime = start_runtime(emulators)
    demo = template("demo_all_stages.json")
    loaded = load(db, demo, agents=AGENTS, api_type="SCRIPTED", seed=0)
    e = loaded.experiment_id
    chats = [(s["id"], loaded.cohort_id) for s in demo["stageConfigs"] if s["kind"] == "chat"]
    for n in range(kills):
        time.sleep(rng.uniform(0.3, 4.0))
        kill_runtime(runtime)
        if n == kills - 1:
            time.sleep(gap)
        runtime = start_runtime(emulators)
    restarted = time.monotonic()
    at_restart = positions(db, e, chats)
    stranded = {p for p, where in at_restart.items() if where[0] != ParticipantStatus.SUCCESS}
    moved: dict[str, float] = {}
    deadline = restarted + float(os.environ.get("DLAB_CRASH_DEADLINE", "300"))
    try:
        while not all_done(db, e) and time.monotonic() < deadline:
            now = positions(db, e, chats)
            for p in stranded - moved.keys():
                if now[p] != at_restart[p]:
                    moved[p] = round(time.monotonic() - restarted, 1)
            time.sleep(1)
        done_after = round(time.monotonic() - restarted, 1)
    finally:
        kill_runtime(runtime)
    print(
        f"crash: {len(stranded)} stranded, moved again after {sorted(moved.values())} s; "
        f"all SUCCESS {done_after} s after the last restart"
    )
    logs = db.collection(f"experiments/{e}/logs").get()
    nudges = sum("readiness" in str((s.to_dict() or {}).get("description")) for s in logs)
    print(f"crash: {len(logs)} model calls, {nudges} of them readiness questions")
    stuck = {p.private_id: p.current_stage_id for p in participants(db, e) if not all_done(db, e)}
    assert all_done(db, e), stuck
    for p in stranded - moved.keys():  # finished between two polls: it moved
        moved[p] = done_after
    late = {p: s for p, s in moved.items() if s > MOVE_BOUND_S}
    assert not late, f"stranded agents moved again only after {late} s (bound {MOVE_BOUND_S})"
    stage_ids = demo["experiment"]["stageIds"]
    for p in participants(db, e):
        assert sorted(p.timestamps.completed_stages) == sorted(stage_ids), p.private_id
    for stage in demo["stageConfigs"]:
        if stage["kind"] == "chat":
            check_no_message_twice(db, e, stage_id=stage["id"], cohort=loaded.cohort_id)
    _check_each_answer_paid_once(db, e, demo)


def _check_each_answer_paid_once(db: firestore.Client, e: str, demo: dict) -> None:
    """Outside the chat, one recorded call and one accepted log entry per agent and stage that
    asks the model, as a calm run has; no unit ended because its holders were killed."""
    chats = {s["id"] for s in demo["stageConfigs"] if s["kind"] == "chat"}
    recorded = Counter(
        (d["agent"], d["stageId"])
        for d in (s.to_dict() or {} for s in db.collection(f"experiments/{e}/journal").get())
        if d["stageId"] not in chats
    )
    assert recorded and set(recorded.values()) == {1}, recorded
    accepted = Counter(
        (log.participant_id, log.stage_id)
        for log in model_logs(db, e)
        if log.stage_id not in chats and log.response.status == "OK"
    )
    assert accepted == recorded
    gave_up = [r.reason for r in errors(db, e) if "gave up" in r.reason]
    assert not gave_up, gave_up
