"""Move leases on the emulator: deliveries for one agent coalesce instead of racing, a lease
left by a dead invocation is taken over, and a barrier stage costs each agent one model call."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest
from experiment_state import model_logs, participant
from raw_docs import PROGRESS_OPEN, agent, stage, write_experiment

from functions import leases
from shared.llm.providers import MODEL_OVERRIDE_ENV
from shared.models import ParticipantStatus, now
from tests.fakes import fake_openai as openai
from tests.fakes import slow

pytestmark = pytest.mark.usefixtures("clean")
TTL = timedelta(seconds=60)


def test_concurrent_requests_coalesce_into_few_runs_and_none_is_lost(runtime, db):
    path = "experiments/e-lease/moveLeases/p1"
    runs: list[float] = []
    outcomes: list[leases.Held] = []
    requested: list[float] = []

    def work() -> int:
        """The first run lasts until every other request came back (however slow the machine):
        all of them arrive while the lease is held."""
        runs.append(time.monotonic())
        limit = time.monotonic() + 30
        while len(runs) == 1 and len(outcomes) < 7 and time.monotonic() < limit:
            time.sleep(0.05)
        return len(runs)

    def request() -> None:
        requested.append(time.monotonic())
        outcomes.append(leases.coalesce(path, work, ttl=TTL).held)

    threads = [threading.Thread(target=request) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert outcomes.count(leases.Held.RAN) == 1
    assert outcomes.count(leases.Held.COALESCED) == 7
    assert len(runs) == 2  # the holder ran once more for all those who asked meanwhile
    assert runs[-1] > max(requested)  # the last request came before the last run began
    assert not db.document(path).get().exists


def test_a_lease_left_by_a_dead_invocation_is_taken_over(runtime, db):
    path = "experiments/e-lease/moveLeases/p2"
    db.document(path).set({"token": "dead", "expiresAt": now() - timedelta(seconds=1)})
    assert leases.coalesce(path, lambda: "moved", ttl=TTL).result == "moved"
    db.document(path).set({"token": "alive", "expiresAt": now() + TTL, "pending": False})
    assert leases.coalesce(path, lambda: "moved", ttl=TTL).held == leases.Held.COALESCED
    assert db.document(path).get().to_dict()["pending"] is True


def test_runs_past_the_limit_are_handed_on(runtime, db):
    path = "experiments/e-lease/moveLeases/p3"
    handed: list[bool] = []

    def work() -> None:  # every run is asked for again while it runs
        db.document(path).update({"pending": True})

    result = leases.coalesce(path, work, ttl=TTL, on_overflow=lambda: handed.append(True))
    assert result.held == leases.Held.RAN and handed == [True]
    assert not db.document(path).get().exists


@pytest.fixture
def slow_openai(db, monkeypatch):
    """A provider that takes a while: the window in which two deliveries overlap."""
    monkeypatch.delenv(MODEL_OVERRIDE_ENV)
    step = slow(openai.text(json.dumps({"q": True})), 0.4)
    with openai.FakeOpenAI(api_key="sk-test") as fake:
        fake.responder = lambda _request: step
        db.document("experimenterData/x@y.z").set(
            {"apiKeys": {"openAIApiKey": {"apiKey": "sk-test", "baseUrl": fake.base_url}}}
        )
        yield fake


def test_a_barrier_stage_costs_each_agent_one_model_call(runtime, db, slow_openai):
    """At a waitForAllParticipants stage the agents arrive together and one of them unlocks
    it: the others' own updates and the unlock wakes used to both call the model."""
    survey = stage(
        "survey",
        "survey",
        progress={**PROGRESS_OPEN, "waitForAllParticipants": True},
        questions=[{"id": "q", "kind": "check", "questionTitle": "Agree?"}],
    )
    e = write_experiment(db, [stage("intro", "info"), survey, stage("end", "info")])
    ids = [agent(db, e, "intro", number=i, api_type="OPENAI") for i in range(6)]
    runtime.wait_until_idle(timeout=120)
    assert all(participant(db, e, p).current_status == ParticipantStatus.SUCCESS for p in ids)
    calls = [log for log in model_logs(db, e) if log.stage_id == "survey"]
    assert sorted(log.participant_id for log in calls) == sorted(ids)


def test_the_lease_goes_with_the_works_write_unless_someone_asked_meanwhile(runtime, db):
    path = "experiments/e-lease/moveLeases/p4"
    target = db.document("experiments/e-lease/written/w")
    seen: list[bool] = []

    def work(ask_again: bool) -> None:
        if ask_again and not seen:  # a duplicate delivery marks the lease while the work runs
            db.document(path).update({"pending": True})

        def batch() -> object:
            written = db.batch()
            written.set(target, {"n": len(seen)})
            return written

        leases.commit_letting_go(path, batch)
        seen.append(db.document(path).get().exists)

    leases.coalesce(path, lambda: work(False), ttl=TTL)
    assert seen == [False]  # let go in the work's own batch
    assert target.get().to_dict() == {"n": 0}
    seen.clear()
    result = leases.coalesce(path, lambda: work(True), ttl=TTL)
    assert result.held == leases.Held.RAN
    assert seen == [True, False]  # refused with the release, written without; run again
    assert target.get().to_dict() == {"n": 1}
    assert not db.document(path).get().exists

    def nothing_to_write() -> None:
        assert leases.commit_letting_go(path, lambda: None) is False
        seen.append(db.document(path).get().exists)

    seen.clear()
    leases.coalesce(path, nothing_to_write, ttl=TTL)
    assert seen == [True]  # nothing written: the lease is let go by coalesce, as usual
    assert not db.document(path).get().exists
