"""Issue 27's fault matrix, the Deliberate Lab agents' row, on the emulators with a fake OpenAI
server (its requests are the model calls counted). Each cell asserts a terminal state within a
bound and the model calls it may cost.

- (a) a reply that is not JSON and (b) an empty reply to a survey stage: a reply that arrived is
  an answer, so the model gets the corrective turns (``num_retries``, 3) and the agent moves on
  without an answer (``DLAB_MOVE_ON_WITHOUT_ANSWER``, true): at most 4 calls, no provider retry.
- (c) the runtime SIGKILLed in the middle of a move: ``test_crash.py`` (every stranded agent moves
  again within 60 s of the restart).
- (d) the first event lost: the participant's creation event dropped; the watchdog starts it
  within a stalled threshold (one lease, 30 s) and a tick.
- (e) the provider answering 503 for 20 s: the agent finishes, or ends blocked with a record
  naming the 503 (and a touch resumes it); at most the move's attempts times the provider's.
- (f) a move whose own code raises: no realistic document found that makes a stage's handler
  raise anything but a ``DocumentError`` (recorded, agent blocked, no model call); the unit's
  budget for such a raise is covered by ``test_leases.py`` with a raising unit.
"""

from __future__ import annotations

import json
import time

import pytest
from delivery_policies import Losing
from experiment_state import errors, participant
from raw_docs import agent, stage, write_experiment

from shared.models import ParticipantStatus
from tests.fakes import Recorded, Step
from tests.fakes import fake_openai as openai

pytestmark = pytest.mark.usefixtures("clean")

ANSWER = openai.text(json.dumps({"q": True}))
TURNS = 4
"""A survey's answer: the first call and DL's 3 corrective turns."""
WORK_ATTEMPTS = 3
PROVIDER_ATTEMPTS = 6
"""``DLAB_MODEL_MAX_ATTEMPTS``' default: provider attempts per call within one invocation."""
STALLED_S = 3.0
"""The watchdog's stalled threshold in the lost-event cell (``DLAB_STALLED_SECONDS``, one lease
by default: 30 s): the cell waits it out, whatever its length."""


@pytest.fixture
def fake(db, monkeypatch):
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE")
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_S", "0.05")  # a provider retry, if any, is quick
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_MAX_S", "0.2")
    with openai.FakeOpenAI(api_key="sk-test", default=ANSWER) as server:
        db.document("experimenterData/x@y.z").set(
            {"apiKeys": {"openAIApiKey": {"apiKey": "sk-test", "baseUrl": server.base_url}}}
        )
        yield server


def _survey_experiment(db) -> str:
    survey = stage(
        "survey", "survey", questions=[{"id": "q", "kind": "check", "questionTitle": "?"}]
    )
    return write_experiment(db, [stage("intro", "info"), survey, stage("end", "info")])


def _finished(db, e: str, pid: str) -> bool:
    return participant(db, e, pid).current_status == ParticipantStatus.SUCCESS


@pytest.mark.parametrize(
    "reply", [openai.text("I would say yes, mostly."), openai.empty()], ids=["not-json", "empty"]
)
def test_a_reply_that_is_not_an_answer_gets_the_corrective_turns_then_moves_on(
    runtime, db, fake, reply
):
    fake.default = reply
    e = _survey_experiment(db)
    pid = agent(db, e, "intro", api_type="OPENAI")
    started = time.monotonic()
    runtime.wait_until_idle(timeout=120)
    assert time.monotonic() - started < 60
    assert _finished(db, e, pid)
    assert len(fake.requests) == TURNS  # corrective turns, not provider retries
    assert participant(db, e, pid).agent_blocked_on is None
    (record,) = [r for r in errors(db, e) if "without an answer" in r.reason]
    assert record.document == f"experiments/{e}/participants/{pid}"
    assert not db.document(f"experiments/{e}/participants/{pid}/stageData/survey").get().exists


def test_an_agent_whose_creation_event_was_lost_is_started_by_the_watchdog(
    runtime, db, fake, monkeypatch
):
    monkeypatch.setenv("DLAB_STALLED_SECONDS", str(STALLED_S))
    e = _survey_experiment(db)
    losing = Losing(lambda d: d.function == "onParticipantCreated")
    with runtime.delivery_policy(losing):
        pid = agent(db, e, "intro", api_type="OPENAI")
        runtime.wait_until_idle(timeout=60)
    assert losing.lost, "the test lost no event"
    lost_at = time.monotonic()
    while not _finished(db, e, pid) and time.monotonic() - lost_at < 2 * STALLED_S + 30:
        runtime.tick()  # the local watchdog's tick, every 2 s
        runtime.wait_until_idle(timeout=60)
        time.sleep(2)
    assert _finished(db, e, pid)
    assert time.monotonic() - lost_at < STALLED_S + 30  # the threshold, a tick, the moves
    assert len(fake.requests) == 1


def test_a_provider_answering_503_for_20_s_costs_at_most_the_attempt_budget(
    runtime, db, fake, monkeypatch
):
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_S", "0.5")  # the production backoff
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_MAX_S", "20")
    back_at = [0.0]

    def outage(_request: Recorded) -> Step:
        return ANSWER if time.monotonic() >= back_at[0] else openai.error(503, "overloaded")

    fake.responder = outage
    e = _survey_experiment(db)
    back_at[0] = time.monotonic() + 20
    pid = agent(db, e, "intro", api_type="OPENAI")
    runtime.wait_until_idle(timeout=180)
    assert len(fake.requests) <= WORK_ATTEMPTS * PROVIDER_ATTEMPTS
    p = participant(db, e, pid)
    if p.current_status != ParticipantStatus.SUCCESS:  # the budget ran out within the outage
        blocked = p.agent_blocked_on or {}
        (record,) = [r for r in errors(db, e) if r.id == blocked.get("errorId")]
        assert "503" in record.reason and record.ended_after_attempts == 3
        assert "gave up after 3 attempt(s)" in blocked["reason"]
        while time.monotonic() < back_at[0]:
            time.sleep(0.5)
        db.document(f"experiments/{e}/participants/{pid}").update({"name": "Touched"})
        runtime.wait_until_idle(timeout=60)
    assert _finished(db, e, pid)
