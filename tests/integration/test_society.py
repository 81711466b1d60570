"""The agent society on the real emulators: days advance on triggers alone, the invariants hold
at the end of every day, also under chaos, and the same seed gives the same final state."""

from __future__ import annotations

import time

import pytest

from console.app import create_app
from emulator.chaos import ChaosSettings
from shared.llm.base import ModelReply, ModelRequest, Usage
from shared.models import DocumentError
from tools.society import client

pytestmark = pytest.mark.usefixtures("clean")

SMALL = {"agents": 8, "days": 3, "seed": 5, "dayDeadlineS": 60, "proposalDays": 2, "quorum": 0.2}


def _run(db, runtime, settings=SMALL, timeout=60.0):
    sid = client.create(db, settings)
    runtime.wait_until_idle(timeout=timeout)
    return sid


def test_days_run_on_triggers_and_the_same_seed_gives_the_same_state_under_chaos(db, runtime):
    calm = _run(db, runtime)
    assert client.closed_days(db, calm) == 3
    audit = client.audit(db, calm)
    assert audit.ok, audit.problems
    sums = client.summaries(db, calm)
    assert [s.day for s in sums] == [1, 2, 3]
    calls = sum(s.model_calls for s in sums)
    agent_days = sum(len(d.acting) for d in client.days(db, calm) if d.status == "closed")
    assert calls <= 1.05 * agent_days, (calls, agent_days)
    assert {"work", "vote", "forum_post"} <= {e.kind for e in client.events(db, calm)}
    chaos = ChaosSettings(seed=3, fault_rate=0.15, max_delay_s=0.1)
    with runtime.chaos(chaos) as run:
        wild = _run(db, runtime, timeout=120.0)
    assert sum(run.faults.injected.values()) > 0  # the model failed now and then
    audit = client.audit(db, wild)
    assert audit.ok, audit.problems
    assert client.state_hash(db, wild) == client.state_hash(db, calm)


def _day(db, sid, n):
    return next(d for d in client.days(db, sid) if d.day == n)


def _errors(db, sid):
    return [s.to_dict() for s in db.collection(f"societies/{sid}/errors").stream()]


def test_humans_deadlines_interventions_pause_and_resume(db, runtime):
    """Driven from the console's API and its document editor, as a researcher would."""
    settings = {**SMALL, "agents": 4, "humans": [2], "days": 3, "dayDeadlineS": 60}
    sid = _run(db, runtime, settings)
    api = create_app(runtime.project, db).test_client()
    state = api.get(f"/api/societies/{sid}/state").get_json()
    assert (state["day"], state["day_status"], state["acted"], state["expected"]) == (
        1,
        "open",
        3,
        4,
    )
    assert api.post(f"/api/societies/{sid}/pause").status_code == 200
    bad = api.put(f"/api/docs/societies/{sid}", json={"settings": {"quorum": 7}})
    assert bad.status_code == 422 and bad.get_json()["field"] == "settings.quorum"
    with pytest.raises(DocumentError) as refused:  # the CLI's `set`: checked, not written
        client.set_setting(db, sid, "quorum", 7)
    assert refused.value.document == f"societies/{sid}" and "quorum" in str(refused.value)
    assert db.document(f"societies/{sid}").get().to_dict()["settings"]["quorum"] != 7
    client.set_setting(db, sid, "dayDeadlineS", 1.5)
    client.set_setting(db, sid, "farmYield", 2.0)
    gift = {"agentId": 3, "resource": "food", "amount": 5, "note": "test"}
    assert api.post(f"/api/societies/{sid}/give", json=gift).status_code == 200
    trade = {"action": "trade", "recipient_agent_id": 1, "resource_type": "food", "amount": 99}
    db.document(f"societies/{sid}/days/00001/actions/2-1").set(
        {"agentId": 2, "day": 1, "action": trade}
    )
    runtime.wait_until_idle(timeout=30)
    day1 = client.summaries(db, sid)[0]
    assert day1.rejected == [
        {"agentId": 2, "action": "trade", "reason": "has only 10 food, cannot give 99"}
    ]
    assert day1.flow.interventions["food"] == 5
    assert _day(db, sid, 2).status == "ready"  # paused: the next day waits
    assert api.post(f"/api/societies/{sid}/resume").status_code == 200
    runtime.wait_until_idle(timeout=30)
    assert _day(db, sid, 2).settings.farm_yield == 2.0
    for _ in (2, 3):  # the human stays silent past each deadline; the watchdog closes the day
        time.sleep(1.6)
        runtime.tick()
        runtime.wait_until_idle(timeout=30)
    assert client.closed_days(db, sid) == 3
    assert all(2 in s.no_action for s in client.summaries(db, sid)[1:])
    audit = client.audit(db, sid)
    assert audit.ok, audit.problems
    state = api.get(f"/api/societies/{sid}/state").get_json()
    assert [d["day"] for d in state["days"]] == [1, 2, 3] and len(state["members"]) == 4
    assert api.get(f"/societies/{sid}/live").status_code == 200
    assert sid in api.get("/societies").get_data(as_text=True)


def test_bad_input_is_recorded_with_document_and_field_and_nothing_sticks(db, runtime):
    sid = "broken-prompts"
    db.document(f"societies/{sid}/prompts/default").set({"system": "{{ agent_idd }}"})
    client.create(db, {**SMALL, "agents": 3, "days": 1}, society_id=sid)
    runtime.wait_until_idle(timeout=30)
    assert client.closed_days(db, sid) == 1  # every agent idled; the day closed
    (record,) = _errors(db, sid)
    assert record["document"] == f"societies/{sid}/prompts/default"
    assert record["field"] == "system" and "agent_idd" in record["reason"]
    assert client.summaries(db, sid)[0].invalid[0]["reason"].startswith("societies/")
    db.document(f"societies/{sid}").update({"settings.quorum": "lots"})
    runtime.wait_until_idle(timeout=30)
    fields = {(r["document"], r["field"]) for r in _errors(db, sid)}
    assert (f"societies/{sid}", "settings.quorum") in fields


class _Stubborn:
    """A model that keeps choosing an action that does not exist."""

    def generate(self, request: ModelRequest) -> ModelReply:
        return ModelReply(text='{"action": "fly", "to": "the moon"}', usage=Usage(10, 5))


def test_a_model_that_stays_invalid_is_re_prompted_then_idles_with_the_reason(db, runtime):
    with runtime.model_wrapper(lambda inner: _Stubborn()):
        sid = _run(db, runtime, {**SMALL, "agents": 2, "days": 1, "maxRetries": 2})
    (summary,) = client.summaries(db, sid)
    assert summary.model_calls == 6  # each agent: the first ask and two corrective re-prompts
    assert [i["agentId"] for i in summary.invalid] == [1, 2]
    assert "'action' must be one of forum_post" in summary.invalid[0]["reason"]
    kinds = [e.kind for e in client.events(db, sid)]
    assert kinds.count("invalid_action") == 2
    logs = [s.to_dict() for s in db.collection(f"societies/{sid}/logs").stream()]
    assert len(logs) == 6 and all(log["response"]["status"] == "INVALID_RESPONSE" for log in logs)
