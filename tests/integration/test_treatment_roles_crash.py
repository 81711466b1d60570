"""Issue 42's crash test: the runtime SIGKILLed at random moments while an observer's
representative and inactive personas are being made (the observer's arrival at the group chat):
after the last restart there is exactly one representative for the observer, one set of
inactive personas, and the representative finishes the chat."""

from __future__ import annotations

import random
import time

from crashing import (  # noqa: F401 (emulators: a fixture)
    PROJECT,
    emulators,
    environment,
    kill_runtime,
    start_runtime,
    wait_for,
)
from experiment_state import participant, participants
from google.cloud import firestore
from raw_docs import agent, human, move_human
from test_treatment_roles import _observer_experiment, _rounds

KILLS = 4


def test_a_representative_is_made_once_across_killed_runtimes(emulators, monkeypatch):  # noqa: F811
    for name, value in environment(emulators).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DLAB_STALLED_SECONDS", "1")
    db = firestore.Client(project=PROJECT)
    runtime = start_runtime(emulators)
    rng = random.Random(42)
    try:
        e = _observer_experiment(db)
        other = agent(db, e, "chat", number=0)
        hid = human(db, e, "pc")
        treatment = {"_isObserver": True, "_hasRepresentative": True, "_numInactivePersonas": 2}
        db.document(f"experiments/{e}/participants/{hid}").update(
            {"variableMap": _rounds(treatment, {})}
        )
        move_human(db, e, hid, "chat")
        for _ in range(KILLS):  # the arrival is being handled: the representative being made
            time.sleep(rng.uniform(0.05, 1.5))
            kill_runtime(runtime)
            runtime = start_runtime(emulators)
        rep_id = f"{hid}-rep-chat"

        def finished() -> bool:
            ids = {p.private_id for p in participants(db, e)}
            return rep_id in ids and participant(db, e, rep_id).current_status == "SUCCESS"

        wait_for(finished, 240, "the representative finished the chat")
        wait_for(lambda: participant(db, e, other).current_status == "SUCCESS", 120, "the agent")
    finally:
        kill_runtime(runtime)
    everyone = participants(db, e)
    reps = [p.private_id for p in everyone if p.agent_config and p.agent_config.representative_of]
    assert reps == [rep_id]
    inactive = [p for p in everyone if p.agent_config and p.agent_config.is_inactive_persona]
    assert sorted(p.private_id for p in inactive) == [f"{hid}-inactive-chat-{i}" for i in (0, 1)]
