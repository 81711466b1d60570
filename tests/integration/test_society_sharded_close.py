"""The sharded day close (issue 31 item 5) on the real emulators: 10 members closed 3 at a time
(4 shards per phase, ``DLAB_SOCIETY_CLOSE_SHARD_SIZE``), under chaos delivery (duplicated,
delayed, reordered and retried deliveries, lost acknowledgements) with the runtime SIGKILLed in
the middle of a close, end in the state of a clean run with one shard per day:
resources conserved, votes counted once, every proposal closed once (``client.audit``), the
same hash. Chaos's model faults are off: a garbled reply is the member's forum post (the seed's
rule), which changes the run whatever the close does."""

from __future__ import annotations

from crashing import PROJECT, emulators, kill_runtime, start_runtime, wait_for  # noqa: F401 (fixture)
from google.cloud import firestore

from tools.society import client

SETTINGS = {
    "agents": 10,
    "days": 3,
    "seed": 4,
    "dayDeadlineS": 150,
    "redriveS": 2,
    "proposalDays": 2,
    "quorum": 0.2,
}
SHARD = 3
RECOVERY_S = 120.0
"""A shard phase whose holder died moves again within a tick and one lease (31 s); three days
then run in seconds, slowed by chaos's delays."""


def _closing(db: firestore.Client, sid: str) -> bool:
    return any(d.status == "closing" for d in client.days(db, sid))


def _parts(db: firestore.Client, sid: str, day: int) -> dict[str, dict]:
    ref = db.collection(f"societies/{sid}/days/{day:05d}/close")
    return {snap.id: snap.to_dict() or {} for snap in ref.stream()}


def test_a_sharded_close_under_chaos_and_a_kill_ends_as_a_clean_run(emulators, monkeypatch):  # noqa: F811
    monkeypatch.delenv("DLAB_LEASE_SECONDS", raising=False)
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{emulators.firestore}")
    db = firestore.Client(project=PROJECT)
    runtime = start_runtime(emulators)  # calm, every day closed by one shard
    try:
        calm = client.create(db, SETTINGS)
        wait_for(lambda: client.closed_days(db, calm) == 3, 120, "the calm run closed")
        kill_runtime(runtime)
        monkeypatch.setenv("DLAB_SOCIETY_CLOSE_SHARD_SIZE", str(SHARD))
        monkeypatch.setenv("DLAB_CRASH_MODE", "chaos")
        monkeypatch.setenv("DLAB_CHAOS_SEED", "5")
        monkeypatch.setenv("DLAB_CHAOS_FAULT_RATE", "0")
        runtime = start_runtime(emulators)
        wild = client.create(db, SETTINGS)
        wait_for(lambda: _closing(db, wild), 60, "a day's close started")
        kill_runtime(runtime)  # in the middle of a close
        print(f"killed at {[(d.day, d.status, d.phase) for d in client.days(db, wild)]}")
        runtime = start_runtime(emulators)
        took = wait_for(lambda: client.closed_days(db, wild) == 3, RECOVERY_S, "every day closed")
        print(f"every day closed {took:.1f} s after the restart")
    finally:
        kill_runtime(runtime)
    audit = client.audit(db, wild)
    assert audit.ok, audit.problems
    assert client.audit(db, calm).ok
    for day in (1, 2, 3):
        parts = _parts(db, wild, day)
        settled = [p for name, p in parts.items() if name.startswith("settle-")]
        assert len(settled) == 4 and all(p["members"] <= SHARD for p in settled), day
        assert len([n for n in parts if n.startswith("fix-")]) == 4
        assert len([n for n in _parts(db, calm, day) if n.startswith("settle-")]) == 1
    assert client.state_hash(db, wild) == client.state_hash(db, calm)
