"""The agent society on the real emulators: days advance on triggers alone, the invariants hold
at the end of every day, also under chaos, and the same seed gives the same final state."""

from __future__ import annotations

import pytest

from emulator.chaos import ChaosSettings
from tools.society import client

pytestmark = pytest.mark.usefixtures("clean")

SMALL = {"agents": 8, "days": 3, "seed": 5, "dayDeadlineS": 60, "proposalDays": 2, "quorum": 0.2}


def _run(db, runtime, settings=SMALL, timeout=60.0):
    sid = client.create(db, settings)
    runtime.wait_until_idle(timeout=timeout)
    return sid


def test_a_small_society_runs_its_days_on_triggers(db, runtime):
    sid = _run(db, runtime)
    assert client.closed_days(db, sid) == 3
    audit = client.audit(db, sid)
    assert audit.ok, audit.problems
    sums = client.summaries(db, sid)
    assert [s.day for s in sums] == [1, 2, 3]
    assert all(sum(s.actions.values()) == s.active or s.day for s in sums)
    calls = sum(s.model_calls for s in sums)
    agent_days = sum(len(d.acting) for d in client.days(db, sid) if d.status == "closed")
    assert calls <= 1.05 * agent_days, (calls, agent_days)
    kinds = {e.kind for e in client.events(db, sid)}
    assert {"work", "vote"} & kinds


def test_the_same_seed_gives_the_same_state_under_chaos(db, runtime):
    calm = _run(db, runtime)
    expected = client.state_hash(db, calm)
    with runtime.chaos(ChaosSettings(seed=3, fault_rate=0.1, max_delay_s=0.1)):
        wild = _run(db, runtime, timeout=120.0)
    audit = client.audit(db, wild)
    assert audit.ok, audit.problems
    assert client.state_hash(db, wild) == expected
