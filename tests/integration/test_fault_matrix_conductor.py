"""The fault matrix, the conductor's row (issue 27), on the real emulators and a fake
OpenAI-compatible server: each fault ends in a terminal state (DONE, or FAILED with one error
record naming the cause) within a stated bound, and the model calls stay within the attempt
budget: at most ``DLAB_WORK_MAX_ATTEMPTS`` x calls per attempt x units touched, and equal to
the attempts the conversation logged under its steps (what the fake received).

The workflow is the example (rules route: extractor, answerer, FINISH), so the model is called
by the two agents' steps only; a cell's fault hits the extractor's step (one unit).
"""

from __future__ import annotations

import json
import random
import sys
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conductor_state import conversation, errors, load_example, start, steps
from delivery_policies import Losing
from google.cloud import firestore

from functions import spend
from functions.settings import backbone_settings
from shared.conductor.documents import Conversation, Status
from shared.llm.policy import call_policy
from shared.llm.scripted import generate_value
from tests.fakes import Recorded, Step
from tests.fakes import fake_openai as openai
from tools import run_conversation
from workflows.example.extractor import prompt as extractor_prompt

pytestmark = pytest.mark.usefixtures("clean")


@pytest.fixture(autouse=True)
def failing_semantics(monkeypatch: pytest.MonkeyPatch) -> None:
    """This matrix measures this project's semantics: a step whose replies ran out FAILS the
    conversation (Diskurs' default carries on: tests/integration/test_diskurs.py)."""
    monkeypatch.setenv("DLAB_CONDUCTOR_NO_VALID_REPLY", "fail")


WF = "faults"
QUERY = "Hi, I'm Dana. My firewall drops every packet to port 443; what should I check?"
STALLED_ENV = "DLAB_CONDUCTOR_STALLED_SECONDS"
BOUND_S = 45.0
"""A cell's terminal state comes within this (generous: a loaded 2-core machine)."""
OUTAGE_S = 20.0
TURNS = 3
"""Replies per step (the example's agents' maxAttempts): the first and the corrective ones."""
FAST_BACKOFF = {"DLAB_MODEL_BACKOFF_S": "0.01", "DLAB_MODEL_BACKOFF_MAX_S": "0.05"}


def _valid(request: Recorded) -> Step:
    """A schema-valid reply for whatever step asks (the example's rules accept it)."""
    schema = request.body["response_format"]["json_schema"]["schema"]
    return openai.text(json.dumps(generate_value(random.Random(1), schema)))


def _per_attempt() -> int:
    """Model calls one attempt of a step may make: provider retries of each reply."""
    return call_policy().max_attempts * TURNS


def _budget(units: int) -> int:
    return backbone_settings().work_max_attempts * _per_attempt() * units


@pytest.fixture
def fake(db: firestore.Client, monkeypatch: pytest.MonkeyPatch) -> Iterator[openai.FakeOpenAI]:
    """The example workflow on the fake OpenAI server (valid replies unless a cell says)."""
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE")
    for name, value in FAST_BACKOFF.items():
        monkeypatch.setenv(name, value)
    with openai.FakeOpenAI(api_key="sk-test") as server:
        server.responder = _valid
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        load_example(db, WF)
        settings = {"modelSettings": {"apiType": "OPENAI", "modelName": "fake-model"}}
        for doc in (f"workflows/{WF}", *(f"workflows/{WF}/agents/{a}" for a in AGENTS)):
            db.document(doc).update(settings)
        yield server


AGENTS = ("extractor", "answerer")


def _user_module(monkeypatch: pytest.MonkeyPatch, db: firestore.Client, **rules: Any) -> str:
    """The extractor's prompt.py with ``rules`` (is_valid, is_final) replaced, as a user would
    deploy it; returns its module name."""
    module = types.ModuleType("workflows.faulty_extractor")
    module.__dict__.update({k: v for k, v in vars(extractor_prompt).items() if k[:2] != "__"})
    module.__dict__.update(rules)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    db.document(f"workflows/{WF}/agents/extractor").update({"module": module.__name__})
    return module.__name__


def _until_terminal(runtime: Any, db: firestore.Client, cid: str, bound_s: float) -> float:
    """Deliver and tick (the watchdog) until the conversation ends; the seconds it took."""
    t0 = time.monotonic()
    while conversation(db, cid).status in (Status.PENDING, Status.RUNNING):
        left = bound_s - (time.monotonic() - t0)
        assert left > 0, f"{cid} still {conversation(db, cid).status} after {bound_s} s: " + str(
            runtime.deliveries_table(last=12)
        )
        runtime.wait_until_idle(timeout=left)
        runtime.tick()
    return time.monotonic() - t0


def _logged(db: firestore.Client, cid: str) -> int:
    """The model attempts the conversation logged under its steps, which must be its totals."""
    logged = sum(
        len(db.collection(f"conversations/{cid}/steps/{s.index:04d}/attempts").get())
        for s in steps(db, cid)
    )
    assert spend.totals(f"conversations/{cid}").calls == logged
    return logged


def _failed_with_one_record(db: firestore.Client, cid: str, *causes: str) -> Conversation:
    conv = conversation(db, cid)
    assert conv.status == Status.FAILED, conv
    assert conv.error is not None and conv.error.document.startswith(f"conversations/{cid}")
    # one record of the end, on the document that failed (a retried attempt's exception may
    # have its own record on the conversation, filed by the entry point)
    records = [r for r in errors(db, cid) if r["document"] == conv.error.document]
    assert len(records) == 1, errors(db, cid)
    (record,) = records
    text = f"{record['field']} {record['reason']}"
    assert any(cause in text for cause in causes), (causes, record)
    return conv


def _report(cell: str, calls: int, seconds: float) -> None:
    print(f"\nfault cell conductor/{cell}: {calls} model call(s), terminal in {seconds:.1f} s")


# --- user code that raises -------------------------------------------------------------------


def _boom(_: Any) -> bool:
    raise RuntimeError("the validator's own bug")


@pytest.mark.parametrize("rule", ["is_valid", "is_final"])
def test_a_user_rule_that_raises_ends_the_step_at_once(runtime, db, fake, monkeypatch, rule):
    """(a) is_valid raising anything but PromptValidationError, (b) is_final raising: one model
    call, then FAILED naming the user function (before: redelivered, a model call each time,
    the conversation RUNNING for ever)."""
    module = _user_module(monkeypatch, db, **{rule: _boom})
    start(db, "ua", QUERY, workflow_id=WF)
    took = _until_terminal(runtime, db, "ua", BOUND_S)
    conv = _failed_with_one_record(db, "ua", f"{module}.{rule}")
    assert conv.failure is not None
    assert conv.failure.document == "conversations/ua/steps/0001"
    assert conv.failure.field == f"{module}.{rule}" and conv.failure.attempts == 1
    assert "RuntimeError: the validator's own bug" in conv.failure.reason
    assert len(fake.requests) == 1 == _logged(db, "ua")  # the reply the rule saw, no other
    _report(rule, len(fake.requests), took)


def test_run_conversation_ends_at_once_on_a_failure(runtime, db, fake, monkeypatch, capsys):
    """``python -m tools.run_conversation`` exits non-zero as soon as the conversation FAILED,
    with its error record printed (before: tracebacks until its --timeout)."""
    module = _user_module(monkeypatch, db, is_valid=_boom)
    t0 = time.monotonic()
    argv = [QUERY, "--workflow", WF, "--id", "cli", "--project", runtime.project]
    assert run_conversation.main([*argv, "--timeout", "600"]) == 1
    assert time.monotonic() - t0 < BOUND_S
    printed = capsys.readouterr()
    assert "status   FAILED" in printed.out
    assert f"record   conversations/cli/steps/0001 · {module}.is_valid: user function" in (
        printed.err
    )
    assert "--resume cli" in printed.err


# --- replies that are not answers ------------------------------------------------------------


@pytest.mark.parametrize(
    "reply", [openai.text("Sure! Check the firewall rules for port 443."), openai.empty()]
)
def test_a_reply_that_is_not_json_ends_the_step(runtime, db, fake, reply):
    """(c) prose where JSON was asked, (d) an empty reply, every time: the step ends FAILED
    with its cause recorded, within the step's attempt budget."""
    fake.default, fake.responder = reply, None
    start(db, "nj", QUERY, workflow_id=WF)
    took = _until_terminal(runtime, db, "nj", BOUND_S)
    _failed_with_one_record(db, "nj", "JSON", "json", "empty", "EMPTY", "valid reply")
    assert 1 <= len(fake.requests) <= _budget(units=1)
    assert len(fake.requests) == _logged(db, "nj")
    _report("not JSON" if reply.body.count(b"Sure") else "empty", len(fake.requests), took)


# --- the first event lost --------------------------------------------------------------------


def test_a_conversation_whose_creation_event_was_lost_is_started(runtime, db, fake, monkeypatch):
    """(e) The runtime died before onConversationCreated ran (it is not retried): the watchdog
    starts the conversation, which then answers (before: PENDING for ever)."""
    lost = Losing(lambda d: d.function == "onConversationCreated")
    with runtime.delivery_policy(lost):
        start(db, "lost", QUERY, workflow_id=WF)
        runtime.wait_until_idle(timeout=60)
    assert len(lost.lost) == 1 and conversation(db, "lost").status == Status.PENDING
    monkeypatch.setenv(STALLED_ENV, "0")  # one tick after the event was lost (default 30 s)
    took = _until_terminal(runtime, db, "lost", BOUND_S)
    conv = conversation(db, "lost")
    assert conv.status == Status.DONE, conv.error
    assert len(fake.requests) == len(AGENTS) == _logged(db, "lost")
    _report("first event lost", len(fake.requests), took)


# --- a provider outage -----------------------------------------------------------------------


def _unavailable_for(seconds: float) -> Callable[[Recorded], Step]:
    until = time.monotonic() + seconds

    def respond(request: Recorded) -> Step:
        if time.monotonic() < until:
            return openai.error(503, "The server is overloaded.")
        return _valid(request)

    return respond


def test_a_provider_outage_fails_the_step_in_budget_and_a_resume_finishes_it(
    runtime, db, fake, monkeypatch
):
    """(f) The provider answers 503 for 20 s: the step's attempts (each with its provider
    retries) run out, the conversation FAILED naming the outage, within the budget. Its user
    sets it back to RUNNING once the provider is back: the watchdog re-arms the step and the
    conversation answers."""
    t0 = time.monotonic()
    fake.responder = _unavailable_for(OUTAGE_S)
    start(db, "out", QUERY, workflow_id=WF)
    took = _until_terminal(runtime, db, "out", BOUND_S)
    conv = _failed_with_one_record(db, "out", "503", "PROVIDER_UNAVAILABLE")
    assert conv.failure is not None and conv.failure.document == "conversations/out/steps/0001"
    during = len(fake.requests)
    assert 1 <= during <= _budget(units=1) and during == _logged(db, "out")
    _report("503 for 20 s", during, took)
    # the resume: the outage over, its user sets the conversation RUNNING again
    while time.monotonic() - t0 < OUTAGE_S:
        time.sleep(0.5)  # the outage is a span of wall time
    monkeypatch.setenv(STALLED_ENV, "0")
    db.document("conversations/out").update({"status": "RUNNING"})
    _until_terminal(runtime, db, "out", BOUND_S)
    conv = conversation(db, "out")
    assert conv.status == Status.DONE and conv.failure is None and conv.error is None
    assert len(fake.requests) == during + len(AGENTS) == _logged(db, "out")
