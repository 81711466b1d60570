"""A society whose runtime is killed (SIGKILL) at random moments, mid-turn or mid-close, the
emulators kept running: after the last restart every day closes with no touch (the watchdog
re-publishes lost turns and takes over a dead close), the invariants hold, and the final state
is the one a run without kills reaches (same seed, same hash)."""

from __future__ import annotations

import os
import random
import time

from google.cloud import firestore
from test_crash import PROJECT, _environment, _kill, _start, emulators  # noqa: F401 (fixture)

from functions.society.closing import CLOSE_LEASE_ENV
from functions.society.turn import TURN_LEASE_ENV
from tools.society import client

SETTINGS = {"agents": 6, "days": 3, "seed": 9, "dayDeadlineS": 120, "redriveS": 2}


def _wait_closed(db: firestore.Client, sid: str, days: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while client.closed_days(db, sid) < days and time.monotonic() < deadline:
        time.sleep(0.5)


def test_killed_runtimes_lose_no_day_and_change_no_outcome(emulators, monkeypatch):  # noqa: F811
    kills = int(os.environ.get("DLAB_CRASH_KILLS", "2"))
    rng = random.Random(int(os.environ.get("DLAB_CRASH_SEED", "7")))
    monkeypatch.setenv(CLOSE_LEASE_ENV, "3")
    monkeypatch.setenv(TURN_LEASE_ENV, "3")
    for name, value in _environment(emulators).items():
        monkeypatch.setenv(name, value)
    db = firestore.Client(project=PROJECT)
    runtime = _start(emulators)
    try:
        killed = client.create(db, SETTINGS)
        for _ in range(kills):
            time.sleep(rng.uniform(0.5, 3.0))
            _kill(runtime)
            runtime = _start(emulators)
        _wait_closed(db, killed, SETTINGS["days"], 180)
        calm = client.create(db, SETTINGS)
        _wait_closed(db, calm, SETTINGS["days"], 120)
    finally:
        _kill(runtime)
    assert client.closed_days(db, killed) == SETTINGS["days"]
    audit = client.audit(db, killed)
    assert audit.ok, audit.problems
    assert client.state_hash(db, killed) == client.state_hash(db, calm)
