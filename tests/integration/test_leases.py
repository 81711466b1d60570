"""Units of work on the emulator: deliveries for one unit coalesce instead of racing, a lease
left by a dead invocation is taken over (a new attempt, counted), a unit ends after its attempt
budget or at once when user code raises, a live holder's lease is renewed, and a barrier stage
costs each agent one model call."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest
from experiment_state import model_logs, participant
from raw_docs import PROGRESS_OPEN, agent, stage, write_experiment

from functions import leases, work
from functions.settings import BackboneSettings
from shared.models import ParticipantStatus, now
from tests.fakes import fake_openai as openai
from tests.fakes import slow

pytestmark = pytest.mark.usefixtures("clean")
TTL = timedelta(seconds=60)


def test_concurrent_requests_coalesce_into_few_runs_and_none_is_lost(runtime, db):
    path = "experiments/e-lease/moveLeases/p1"
    runs: list[float] = []
    outcomes: list[work.State] = []
    requested: list[float] = []

    def run_once() -> int:
        """The first run lasts until every other request came back (however slow the machine):
        all of them arrive while the lease is held."""
        runs.append(time.monotonic())
        limit = time.monotonic() + 30
        while len(runs) == 1 and len(outcomes) < 7 and time.monotonic() < limit:
            time.sleep(0.05)
        return len(runs)

    def request() -> None:
        requested.append(time.monotonic())
        outcomes.append(work.run(work.Unit(path, "experiments/e-lease", run_once)).state)

    threads = [threading.Thread(target=request) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert outcomes.count(work.State.RAN) == 1
    assert outcomes.count(work.State.COALESCED) == 7
    assert len(runs) == 2  # the holder ran once more for all those who asked meanwhile
    assert runs[-1] > max(requested)  # the last request came before the last run began
    assert not db.document(path).get().exists


def test_a_lease_left_by_a_dead_invocation_is_taken_over(runtime, db):
    path = "experiments/e-lease/moveLeases/p2"
    db.document(path).set({"token": "dead", "expiresAt": now() - timedelta(seconds=1)})
    assert work.run(work.Unit(path, "experiments/e-lease", lambda: "moved")).result == "moved"
    db.document(path).set({"token": "alive", "expiresAt": now() + TTL, "pending": False})
    unit = work.Unit(path, "experiments/e-lease", lambda: "moved")
    assert work.run(unit).state == work.State.COALESCED
    assert db.document(path).get().to_dict()["pending"] is True


def test_runs_past_the_limit_are_handed_on(runtime, db):
    path = "experiments/e-lease/moveLeases/p3"
    handed: list[bool] = []

    def again() -> None:  # every run is asked for again while it runs
        db.document(path).update({"pending": True})

    unit = work.Unit(path, "experiments/e-lease", again, on_overflow=lambda: handed.append(True))
    assert work.run(unit).state == work.State.RAN and handed == [True]
    assert not db.document(path).get().exists


def test_a_request_during_the_last_run_is_not_lost_without_an_overflow_handler(runtime, db):
    """A completion check (a debate's layer) has no ``on_overflow``: a burst of checks kept its
    holder busy for ``MAX_RUNS`` runs, the last cluster's check marked the lease during the
    last run, after that run had read the clusters, and nothing ran for it: the layer never
    completed. The unit runs again for it."""
    path = "experiments/e-lease/moveLeases/p5"
    state = db.document("experiments/e-lease/state/clusters")
    state.set({"complete": 0})
    seen: list[int] = []

    def check() -> None:
        seen.append(state.get().to_dict()["complete"])  # what this run read
        if len(seen) <= work.MAX_RUNS:  # a check arrives after the read, while the run lasts
            state.update({"complete": len(seen)})
            db.document(path).update({"pending": True})

    assert work.run(work.Unit(path, "experiments/e-lease", check)).state == work.State.RAN
    assert seen[-1] == work.MAX_RUNS  # some run read the last request's state
    assert not db.document(path).get().exists


@pytest.fixture
def slow_openai(db, monkeypatch):
    """A provider that takes a while: the window in which two deliveries overlap."""
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE")
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

    def write(ask_again: bool) -> None:
        if ask_again and not seen:  # a duplicate delivery marks the lease while the work runs
            db.document(path).update({"pending": True})

        def batch() -> object:
            written = db.batch()
            written.set(target, {"n": len(seen)})
            return written

        leases.commit_letting_go(path, batch)
        seen.append(db.document(path).get().exists)

    work.run(work.Unit(path, "experiments/e-lease", lambda: write(False)))
    assert seen == [False]  # let go in the work's own batch
    assert target.get().to_dict() == {"n": 0}
    seen.clear()
    result = work.run(work.Unit(path, "experiments/e-lease", lambda: write(True)))
    assert result.state == work.State.RAN
    assert seen == [True, False]  # refused with the release, written without; run again
    assert target.get().to_dict() == {"n": 1}
    assert not db.document(path).get().exists

    def nothing_to_write() -> None:
        assert leases.commit_letting_go(path, lambda: None) is False
        seen.append(db.document(path).get().exists)

    seen.clear()
    work.run(work.Unit(path, "experiments/e-lease", nothing_to_write))
    assert seen == [True]  # nothing written: the lease is let go by the unit, as usual
    assert not db.document(path).get().exists


def _records(db, experiment: str) -> list[dict]:
    return [s.to_dict() for s in db.collection(f"experiments/{experiment}/errors").stream()]


def test_a_failing_unit_is_attempted_at_most_its_budget_and_ends_with_one_record(runtime, db):
    path = "experiments/e-budget/moveLeases/p5"
    calls: list[int] = []
    ended: list[work.Failure] = []

    def fails() -> None:
        calls.append(1)  # where a model call would be
        raise RuntimeError("the model's reply broke our parser")

    unit = work.Unit(path, "experiments/e-budget/participants/p5", fails, ended=ended.append)
    for _ in range(2):  # the platform retries a raised attempt
        with pytest.raises(work.AttemptFailed):
            work.run(unit, BackboneSettings(work_max_attempts=3))
    assert db.document(path).get().to_dict()["attempts"] == 2
    assert work.run(unit, BackboneSettings(work_max_attempts=3)).state == work.State.ENDED
    for _ in range(5):  # redeliveries, the watchdog: nothing runs again
        assert work.run(unit, BackboneSettings(work_max_attempts=3)).state == work.State.ENDED
    assert len(calls) == 3
    assert [f.attempts for f in ended] == [3]
    assert "RuntimeError: the model's reply broke our parser" in ended[0].reason
    assert "gave up after 3 attempt(s)" in ended[0].reason
    (record,) = _records(db, "e-budget")  # one record, counting each attempt
    assert record["document"] == "experiments/e-budget/participants/p5"
    assert record["reason"] == "RuntimeError: the model's reply broke our parser"
    assert (record["occurrences"], record["endedAfterAttempts"]) == (3, 3)
    assert work.rearm(path)  # the cause was fixed: a fresh budget
    assert work.run(work.Unit(path, "x", lambda: "ok")).result == "ok"
    assert not db.document(path).get().exists


def test_user_code_that_raises_ends_the_unit_at_once(runtime, db):
    path = "experiments/e-user/moveLeases/p6"
    calls: list[int] = []

    def formats(reply: str) -> str:
        raise KeyError("text")

    def attempt() -> str:
        calls.append(1)
        return work.user_code("format_agent_response", formats, "reply")

    ended: list[work.Failure] = []
    unit = work.Unit(path, "experiments/e-user/participants/p6", attempt, ended=ended.append)
    assert work.run(unit).state == work.State.ENDED
    assert work.run(unit).state == work.State.ENDED
    assert calls == [1]
    assert ended[0].field == "format_agent_response"
    (record,) = _records(db, "e-user")
    assert record["field"] == "format_agent_response"
    assert "user function format_agent_response raised KeyError" in record["reason"]


def test_a_holder_that_died_is_not_the_works_attempt_and_a_live_one_is_renewed(runtime, db):
    """A holder that died is the platform's failure, not the work's: its attempt is not spent
    (the work's budget of 2 is reached, yet the unit runs), the interruption is counted."""
    path = "experiments/e-renew/moveLeases/p7"
    db.document(path).set(
        {"token": "dead", "expiresAt": now() - timedelta(seconds=1), "attempts": 2}
    )
    ran: list[int] = []

    def fails_once() -> str:
        ran.append(1)
        if len(ran) == 1:
            raise RuntimeError("the work's own failure")
        return "x"

    ended: list[work.Failure] = []
    unit = work.Unit(path, "experiments/e-renew/participants/p7", fails_once, ended=ended.append)
    with pytest.raises(work.AttemptFailed):
        work.run(unit, BackboneSettings(work_max_attempts=3))
    lease = db.document(path).get().to_dict()
    assert (lease["attempts"], lease["interrupted"]) == (2, 1)
    assert work.run(unit, BackboneSettings(work_max_attempts=3)).result == "x"
    assert not ended and ran == [1, 1]

    renewed = "experiments/e-renew/moveLeases/p8"
    expiries: list[object] = []

    def slow() -> None:  # outlives its 0.9 s lease three times over
        for _ in range(3):
            time.sleep(0.9)
            expiries.append(db.document(renewed).get().to_dict()["expiresAt"])

    taken_over: list[work.State] = []

    def rival() -> None:
        time.sleep(1.5)
        rival_unit = work.Unit(renewed, "x", lambda: None)
        taken_over.append(work.run(rival_unit, BackboneSettings(lease_seconds=0.9)).state)

    thread = threading.Thread(target=rival)
    thread.start()
    work.run(work.Unit(renewed, "x", slow), BackboneSettings(lease_seconds=0.9))
    thread.join(timeout=30)
    assert expiries == sorted(expiries) and len(set(expiries)) == len(expiries)  # renewed
    assert len(expiries) == 6  # run again for the rival that asked meanwhile
    assert taken_over == [work.State.COALESCED]  # the live holder kept it
