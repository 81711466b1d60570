"""The society's row of the fault matrix (issue 27), on the real emulators and a fake OpenAI
server: each fault ends in a terminal state (the day closed, every member with an action or an
idle with its reason) within a stated bound, with at most the attempt budget of model calls,
and the day summary counts exactly what the provider received.

The day's deadline is far beyond the bound: a day that waits for its deadline fails the cell.
The watchdog is ticked every second, as ``make up`` does (production: every minute).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from delivery_policies import Losing
from google.cloud import firestore

from shared.society.models import DaySummary
from tests.fakes import Recorded, Step
from tests.fakes import fake_openai as openai
from tools.society import __main__ as society_cli
from tools.society import client

pytestmark = pytest.mark.usefixtures("clean")

AGENTS = 2
RETRIES = 1
"""Corrective re-prompts of a member's turn: a turn asks at most 1 + RETRIES times."""
WORK_ATTEMPTS = 3
MODEL_ATTEMPTS = 4
"""Provider attempts per ask (``DLAB_MODEL_MAX_ATTEMPTS``) within one attempt of the turn."""
SETTINGS = {
    "agents": AGENTS,
    "days": 1,
    "seed": 3,
    "dayDeadlineS": 300,
    "redriveS": 2,
    "maxRetries": RETRIES,
    "apiType": "OPENAI",
    "modelName": "fake-model",
}
BOUND_S = 30.0
"""A fault's day reaches its terminal state within this (its deadline is ten times later)."""
OUTAGE_S = 20.0
OUTAGE_MODEL_ATTEMPTS = 6
WORK = json.dumps({"action": "work", "work_type": "farm", "hours": 2})
PROSE = "I think we should all farm together and share the harvest with whoever needs it."


@pytest.fixture
def fake(db: firestore.Client, monkeypatch: pytest.MonkeyPatch) -> Iterator[openai.FakeOpenAI]:
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("DLAB_LEASE_SECONDS", "3")
    monkeypatch.setenv("DLAB_WORK_MAX_ATTEMPTS", str(WORK_ATTEMPTS))
    monkeypatch.setenv("DLAB_MODEL_MAX_ATTEMPTS", str(MODEL_ATTEMPTS))
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_S", "0.2")
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_MAX_S", "1")
    with openai.FakeOpenAI(default=openai.text(WORK)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


def _settle(db: firestore.Client, runtime, sid: str, bound: float) -> float:  # type: ignore[no-untyped-def]
    """Seconds until the society's day closed (or it failed), ticking the watchdog each second;
    fails past ``bound``."""
    started = time.monotonic()
    while time.monotonic() - started < bound:
        society = client.read_society(db, sid)
        if client.closed_days(db, sid) >= 1 or society.status == "failed":
            runtime.wait_until_idle(timeout=30)
            return time.monotonic() - started
        runtime.tick()
        time.sleep(1.0)
    days = [(d.day, d.status) for d in client.days(db, sid)]
    raise AssertionError(f"no terminal state within {bound:.0f} s: days {days}")


def _summary(db: firestore.Client, sid: str) -> DaySummary:
    (summary,) = client.summaries(db, sid)
    return summary


def _counted(
    db: firestore.Client, sid: str, fake: openai.FakeOpenAI, budget: int, all_ok: bool = True
) -> int:
    """The summary's count equals the provider's and the model logs'; within ``budget``; its
    tokens are what the replies reported (``all_ok``: every reply was a 200)."""
    received = len(fake.requests)
    logs = len(list(db.collection(f"societies/{sid}/logs").list_documents()))
    summary = _summary(db, sid)
    print(f"model calls: provider {received}, summary {summary.model_calls}, logs {logs}")
    assert summary.model_calls == received == logs, (summary.model_calls, received, logs)
    assert received <= budget, (received, budget)
    if all_ok:  # the fake's every 200 reply reports 13 prompt and 9 completion tokens
        assert (summary.prompt_tokens, summary.completion_tokens) == (13 * received, 9 * received)
    return received


def _kinds(db: firestore.Client, sid: str) -> list[str]:
    return [e.kind for e in client.events(db, sid)]


def _corrective(request: Recorded) -> bool:
    return any(m.get("role") == "assistant" for m in request.body.get("messages", []))


def _by_turn(first: Step, corrective: Step) -> Callable[[Recorded], Step]:
    return lambda request: corrective if _corrective(request) else first


def test_a_reply_without_json_is_the_members_forum_post(db, runtime, fake):
    fake.default = openai.text(PROSE)
    sid = client.create(db, SETTINGS)
    _settle(db, runtime, sid, BOUND_S)
    assert _summary(db, sid).actions == {"forum_post": AGENTS}
    posts = [s.to_dict() for s in db.collection(f"societies/{sid}/posts").stream()]
    assert [p["content"] for p in posts] == [PROSE] * AGENTS
    assert _kinds(db, sid).count("text_reply") == AGENTS
    assert _counted(db, sid, fake, budget=AGENTS) == AGENTS  # one answer each, no retry


def test_broken_then_invalid_json_is_corrected_then_the_member_idles(db, runtime, fake):
    fake.responder = _by_turn(
        openai.text('{"action": "work", "work_type": "farm", "hours": }'),
        openai.text('{"action": "fly", "to": "the moon"}'),
    )
    sid = client.create(db, SETTINGS)
    _settle(db, runtime, sid, BOUND_S)
    summary = _summary(db, sid)
    assert [i["agentId"] for i in summary.invalid] == list(range(1, AGENTS + 1))
    assert all("'action' must be one of" in i["reason"] for i in summary.invalid)
    assert _kinds(db, sid).count("invalid_action") == AGENTS
    corrections = [r for r in fake.requests if _corrective(r)]
    assert len(corrections) == AGENTS * RETRIES
    sent_back = corrections[0].body["messages"][-1]["content"]
    assert "not valid JSON" in sent_back  # the exact reason went back to the model
    assert _counted(db, sid, fake, budget=AGENTS * (1 + RETRIES)) == AGENTS * (1 + RETRIES)


def test_an_empty_reply_is_corrected_then_the_member_idles(db, runtime, fake):
    fake.default = openai.empty()
    sid = client.create(db, SETTINGS)
    _settle(db, runtime, sid, BOUND_S)
    summary = _summary(db, sid)
    assert len(summary.invalid) == AGENTS and "empty" in summary.invalid[0]["reason"]
    assert _kinds(db, sid).count("invalid_action") == AGENTS
    assert _counted(db, sid, fake, budget=AGENTS * (1 + RETRIES)) == AGENTS * (1 + RETRIES)


def test_a_society_whose_creation_event_is_lost_is_set_up_by_the_watchdog(db, runtime, fake):
    lost = Losing(lambda d: d.function == "onSocietyWritten" and not lost.lost)
    with runtime.delivery_policy(lost):
        sid = client.create(db, SETTINGS)
        runtime.wait_until_idle(timeout=30)
    assert len(lost.lost) == 1 and client.days(db, sid) == []
    _settle(db, runtime, sid, BOUND_S)
    assert _summary(db, sid).actions == {"work": AGENTS}
    assert _counted(db, sid, fake, budget=AGENTS) == AGENTS


def test_a_close_that_keeps_failing_fails_the_society_and_stops_the_cli(
    db, runtime, fake, monkeypatch, capsys
):
    """A close that raises on every attempt (a document it resolves from is broken) ends after
    its attempts: the society FAILED with the cause, one record naming the day, and
    ``tools.society follow`` exits at once, non-zero, printing the record."""
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", runtime.project)
    sid = client.create(db, {**SETTINGS, "humans": [AGENTS]})  # the day waits for the human
    runtime.wait_until_idle(timeout=30)
    fixed = f"societies/{sid}/days/00001/close/fix-00000"  # the actions shard 0 resolves
    db.document(fixed).set({"actionIds": "broken"})
    followed: list[int] = []
    cli = threading.Thread(target=lambda: followed.append(society_cli.main(["follow", sid])))
    cli.start()
    human = {"agentId": AGENTS, "day": 1, "action": {"action": "idle"}}
    db.document(f"societies/{sid}/days/00001/actions/{AGENTS}-1").set(human)
    _settle(db, runtime, sid, BOUND_S)
    cli.join(timeout=10)  # it polls twice a second
    assert followed == [1]
    society = client.read_society(db, sid)
    assert society.status == "failed" and society.failure is not None
    assert society.failure.document == fixed  # the document that stopped the close
    assert society.failure.attempts == WORK_ATTEMPTS and society.failure.field == "actionIds"
    records = [r for r in client.error_records(db, sid) if r.get("endedAfterAttempts")]
    assert [r["document"] for r in records] == [fixed]  # one record, each attempt counted in it
    assert records[0]["endedAfterAttempts"] == WORK_ATTEMPTS
    err = capsys.readouterr().err
    assert "FAILED" in err and f"error record: {fixed}" in err
    assert len(fake.requests) == AGENTS - 1  # the agent's one answer; the close calls no model


def test_a_provider_down_for_20_s_ends_each_turn_within_its_budget(db, runtime, fake, monkeypatch):
    """Production's backoff shape, shortened: a turn's attempt tries the provider 6 times over
    about 11 s, so most turns outlast the outage; one that does not idles with the reason."""
    monkeypatch.setenv("DLAB_MODEL_MAX_ATTEMPTS", str(OUTAGE_MODEL_ATTEMPTS))
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_S", "1")
    monkeypatch.setenv("DLAB_MODEL_BACKOFF_MAX_S", "8")
    back = time.monotonic() + OUTAGE_S

    def outage(request: Recorded) -> Step:
        return openai.error(503, "overloaded") if time.monotonic() < back else openai.text(WORK)

    fake.responder = outage
    sid = client.create(db, SETTINGS)
    took = _settle(db, runtime, sid, OUTAGE_S + 40)
    summary = _summary(db, sid)
    assert summary.no_action == []  # every member acted or idled with the reason
    worked = summary.actions.get("work", 0)
    assert worked + len(summary.invalid) == AGENTS
    assert all("gave up after" in i["reason"] for i in summary.invalid)
    assert _kinds(db, sid).count("invalid_action") == len(summary.invalid)
    calls = _counted(
        db, sid, fake, budget=AGENTS * WORK_ATTEMPTS * OUTAGE_MODEL_ATTEMPTS, all_ok=False
    )
    print(f"outage: {took:.1f} s to close, {worked} worked, {calls} calls")
