"""The same seed gives the same run: an experiment's agents, started again with the same ids
under chaos delivery (duplicates, reordering, model faults: 429s, 503s, garbled replies), write
the documents a calm run wrote, apart from what differs by design (times, drawn ids,
bookkeeping; ``tools.replay.compare``)."""

from __future__ import annotations

import pytest
from experiment_state import all_succeeded, demo_without_chats, settle

from emulator.chaos import ChaosSettings
from tools.load_template import load
from tools.replay import compare, runs

pytestmark = pytest.mark.usefixtures("clean")


def test_an_experiment_under_chaos_writes_the_calm_runs_answers(runtime, db):
    loaded = load(db, demo_without_chats(), agents=3, api_type="SCRIPTED", seed=2)
    e = f"experiments/{loaded.experiment_id}"
    done = all_succeeded(db, loaded.experiment_id)
    settle(runtime, done, rounds=10)
    kind = runs.kind_of(e)
    starts = kind.starts(db, e)
    calm = compare.dump(db, e)
    runtime.reset()
    settings = ChaosSettings(duplicate_rate=0.5, fault_rate=0.25, max_delay_s=0.1, seed=11)
    with runtime.chaos(settings) as run:
        batch = db.batch()
        for path, data in starts.items():
            batch.set(db.document(path), data)
        batch.commit()
        settle(runtime, done, rounds=30)
    assert sum(run.faults.injected.values()) > 0 and run.counts()["duplicated"] > 0
    kept = {part for path in starts for part in path.split("/")}
    outcome = compare.compare(calm, compare.dump(db, e), kept)
    assert outcome.same, outcome.differing
    assert outcome.documents > 20
