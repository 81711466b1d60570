"""Conductor workflows on the real emulators: the example runs to an answer, a validator's
error goes back to the model, is_final hands back, the memory merges by field name, the
dispatch cap ends a loop, and chaos delivery never creates a step twice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conductor_state import (
    Scripted,
    attempts,
    conversation,
    errors,
    finished,
    load_example,
    start,
    steps,
)
from experiment_state import settle

from console.app import create_app
from emulator.chaos import ChaosSettings
from functions.conductor.wire import ConductorStep, publish_steps
from shared.conductor.documents import Conversation, Status

pytestmark = pytest.mark.usefixtures("clean")

STALLED_ENV = "DLAB_CONDUCTOR_STALLED_SECONDS"

QUERY = "Hi, I'm Dana. My firewall drops every packet to port 443; what should I check?"


def test_the_example_workflow_answers(runtime, db):
    load_example(db)
    start(db, "c1", QUERY)
    settle(runtime, finished(db, "c1"), rounds=5)
    conv = conversation(db, "c1")
    assert conv.status == Status.DONE, conv.error
    assert len(conv.answer) > 10
    kinds = [(s.kind, s.agent, s.agent_step) for s in steps(db, "c1")]
    assert kinds == [
        ("conductor", "conductor", 0),
        ("agent", "extractor", 1),
        ("conductor", "conductor", 0),
        ("agent", "answerer", 1),
        ("conductor", "conductor", 0),
    ]
    assert conv.dispatches == 2
    # memory merged by field name, each value with the agent and turn that set it
    assert {k: (v.agent, v.turn) for k, v in conv.memory.items()} == {
        "name": ("extractor", 1),
        "topic": ("extractor", 1),
        "user_question": ("extractor", 1),
        "answer": ("answerer", 2),
    }
    answerer = steps(db, "c1")[3]
    assert answerer.input["name"] == conv.memory["name"].value  # from memory, by field name
    assert conv.answer == conv.memory["answer"].value
    extractor = steps(db, "c1")[1]
    assert extractor.is_final and extractor.output["topic"] in ("firewall", "proxy", "connectivity")
    assert [a["response"]["status"] for a in attempts(db, "c1", "0001")] == ["OK"]


def test_a_validator_error_is_a_corrective_turn(runtime, db):
    load_example(db)
    model = Scripted()
    wrong = {"name": "Dana", "topic": "weather", "user_question": "why is it raining"}
    model.reply("Extract all the following entities", wrong)
    with runtime.model_wrapper(model.wrap):
        start(db, "c2", QUERY)
        settle(runtime, finished(db, "c2"), rounds=5)
    assert conversation(db, "c2").status == Status.DONE
    tries = attempts(db, "c2", "0001")
    assert [a["response"]["status"] for a in tries] == ["INVALID_RESPONSE", "OK"]
    assert "Please assign a valid topic" in tries[0]["response"]["errorMessage"]
    second = next(r for r in model.prompts if r.history)
    assert "Please assign a valid topic. Valid topics are" in second.history[-1].text
    assert steps(db, "c2")[1].output["topic"] != "weather"


def _never_valid(runtime, db, cid: str) -> Conversation:
    """The example, its extractor never giving a valid reply, run to its end."""
    load_example(db)
    model = Scripted()
    model.reply("Extract all the following entities", {"topic": "proxy"}, times=-1)
    with runtime.model_wrapper(model.wrap):
        start(db, cid, QUERY)
        settle(runtime, finished(db, cid), rounds=40)
    return conversation(db, cid)


def test_attempts_running_out_stop_the_conversation_with_the_reason(runtime, db, monkeypatch):
    """This project's semantics (``DLAB_CONDUCTOR_NO_VALID_REPLY=fail``)."""
    monkeypatch.setenv("DLAB_CONDUCTOR_NO_VALID_REPLY", "fail")
    conv = _never_valid(runtime, db, "c3")
    assert conv.status == Status.FAILED
    assert conv.error.document == "conversations/c3/steps/0001"
    assert conv.error.field == "output"
    assert "no valid reply after 3 attempt(s)" in conv.error.reason
    assert "concise description of the user's question" in conv.error.reason
    assert len(attempts(db, "c3", "0001")) == 3
    assert [e["field"] for e in errors(db, "c3")] == ["output"]


def test_attempts_running_out_carry_on_as_diskurs_does_until_the_dispatch_cap(runtime, db):
    """Diskurs' semantics (the default): the step ends with its arguments unchanged and 'No
    valid answer found after 3 trials.'; the turn goes on, hands back after maxAgentSteps, and
    the conductor's rules send the extractor again until the dispatch cap ends the loop."""
    conv = _never_valid(runtime, db, "c3c")
    assert conv.status == Status.FAILED and conv.error.field == "dispatches"
    turns = [s for s in steps(db, "c3c") if s.agent == "extractor"]
    assert len(turns) == 6 * 4  # maxDispatches turns of maxAgentSteps steps
    assert all(s.note.startswith("No valid answer found after 3 trials.") for s in turns)
    assert all(s.output["topic"] == "" and s.status == "done" for s in turns)
    assert len(attempts(db, "c3c", "0001")) == 3


def test_an_agent_keeps_going_until_is_final(runtime, db):
    load_example(db)
    model = Scripted()
    # the extractor's first reply lacks the name: not final, so it takes another step
    first = {"name": "", "topic": "proxy", "user_question": "Which proxy port?"}
    model.reply("Extract all the following entities", first)
    with runtime.model_wrapper(model.wrap):
        start(db, "c4", QUERY)
        settle(runtime, finished(db, "c4"), rounds=5)
    got = [(s.agent, s.agent_step, s.is_final) for s in steps(db, "c4")][:4]
    assert got == [
        ("conductor", 0, False),
        ("extractor", 1, False),
        ("extractor", 2, True),
        ("conductor", 0, False),
    ]
    second = steps(db, "c4")[2]
    assert second.input["topic"] == "proxy"  # the step goes on from the previous arguments
    assert conversation(db, "c4").status == Status.DONE


def _looping_workflow(db, workflow_id: str) -> None:
    load_example(db, workflow_id)
    db.document(f"workflows/{workflow_id}").update(
        {"conductor.rules": [{"then": "extractor"}], "conductor.maxDispatches": 3}
    )


def test_the_dispatch_cap_ends_a_loop(runtime, db):
    _looping_workflow(db, "loop")
    start(db, "c5", QUERY, workflow_id="loop")
    settle(runtime, finished(db, "c5"), rounds=5)
    conv = conversation(db, "c5")
    assert conv.status == Status.FAILED
    assert conv.dispatches == 3
    assert conv.error.field == "dispatches" and "dispatch cap reached" in conv.error.reason
    assert [s.agent for s in steps(db, "c5")] == ["conductor", "extractor"] * 3 + ["conductor"]


def test_the_conductor_model_routes_without_rules(runtime, db):
    load_example(db, "free")
    db.document("workflows/free").update({"conductor.rules": []})
    model = Scripted()
    model.reply("The agents are:", {"next_agent": "extractor"})
    model.reply("The agents are:", {"next_agent": "FINISH"})  # no answer yet: corrected
    model.reply("The agents are:", {"next_agent": "FINISH", "answer": "Check the proxy rules."})
    with runtime.model_wrapper(model.wrap):
        start(db, "c6", QUERY, workflow_id="free")
        settle(runtime, finished(db, "c6"), rounds=5)
    conv = conversation(db, "c6")
    assert conv.status == Status.DONE and conv.answer == "Check the proxy rules."
    first = next(r.prompt for r in model.prompts if "The agents are:" in r.prompt)
    assert "- extractor: Extracts the user's name" in first
    assert "- answerer: Answers the user's question" in first
    last = steps(db, "c6")[-1]
    assert last.decision.by == "model"
    assert [a["response"]["status"] for a in attempts(db, "c6", f"{last.index:04d}")] == [
        "INVALID_RESPONSE",
        "OK",
    ]


def test_the_console_creates_steers_reads_and_cancels(runtime, db):
    api = create_app(runtime.project, db).test_client()
    _looping_workflow(db, "steer")
    db.document("workflows/steer").update(
        {"conductor.rules": [{"whenPresent": ["answer"], "then": "FINISH"}, {"then": "extractor"}]}
    )
    assert api.post("/api/conductor/conversations", json={"query": ""}).status_code == 422
    bad = api.post("/api/conductor/conversations", json={"query": "q", "workflowId": "nope"})
    assert bad.status_code == 422 and bad.json["field"] == "workflowId"
    made = api.post("/api/conductor/conversations", json={"query": QUERY, "workflowId": "steer"})
    assert made.status_code == 201
    cid = made.json["id"]
    steer = api.put(f"/api/conductor/{cid}/memory/answer", json={"value": "Restart the router."})
    assert steer.status_code == 200
    assert api.put(f"/api/conductor/{cid}/memory/a.b", json={"value": 1}).status_code == 422
    settle(runtime, finished(db, cid), rounds=5)
    state = api.get(f"/api/conductor/{cid}/state").json
    assert state["status"] == "DONE" and state["answer"] == "Restart the router."
    assert {m["field"]: m["agent"] for m in state["memory"]}["answer"] == "console"
    assert state["steps"][-1]["summary"] == "→ FINISH (rule: present ['answer'])"
    assert api.get("/conductor").status_code == 200
    assert api.get(f"/conductor/{cid}").status_code == 200
    # cancel: a running conversation stops; its pending step, delivered later, does nothing
    db.document("conversations/cx/steps/0000").set(
        {"index": 0, "kind": "conductor", "agent": "conductor", "status": "pending"}
    )
    db.document("conversations/cx").set(
        {"query": QUERY, "workflowId": "steer", "status": "RUNNING", "currentStep": 0}
    )
    assert api.post("/api/conductor/cx/cancel").json == {"status": "CANCELLED"}
    publish_steps(ConductorStep(conversation_id="cx", index=0))
    runtime.wait_until_idle(timeout=60)
    assert conversation(db, "cx").status == Status.CANCELLED
    assert steps(db, "cx")[0].status == "pending"
    assert api.post("/api/conductor/cx/cancel").json == {"status": "CANCELLED"}


def test_a_template_error_names_the_document_and_field(runtime, db):
    api = create_app(runtime.project, db).test_client()
    load_example(db, "typo")
    bad = api.put("/api/docs/workflows/typo", json={"agents": ["FINISH"]})
    assert bad.status_code == 422 and bad.json["field"] == "agents"  # refused, nothing written
    db.document("workflows/typo/agents/extractor").update({"userPrompt": "Hello {{ nmae }}"})
    start(db, "c10", QUERY, workflow_id="typo")
    settle(runtime, finished(db, "c10"), rounds=5)
    conv = conversation(db, "c10")
    assert conv.status == Status.FAILED
    assert (conv.error.document, conv.error.field) == (
        "workflows/typo/agents/extractor",
        "userPrompt",
    )
    assert "undefined variable 'nmae'" in conv.error.reason
    records = [r.to_dict() for r in db.collection("workflows/typo/errors").get()]
    assert [r["field"] for r in records] == ["userPrompt"]


def test_a_missing_workflow_is_a_recorded_error(runtime, db):
    start(db, "c8", QUERY, workflow_id="loop-missing")
    settle(runtime, finished(db, "c8"), rounds=5)
    conv = conversation(db, "c8")
    assert conv.status == Status.FAILED and conv.error.document == "workflows/loop-missing"
    assert [e["document"] for e in errors(db, "c8")] == []  # filed under the workflow
    records = db.collection("workflows/loop-missing/errors").get()
    assert [r.to_dict()["field"] for r in records] == ["(document)"]


def _fingerprint(db, cid: str) -> tuple:
    """What the same seed must reproduce: every step's agent and output, and the memory."""
    return [(s.agent, s.output) for s in steps(db, cid)], conversation(db, cid).memory_values()


def test_under_chaos_no_step_is_created_twice_and_each_is_the_calm_runs(runtime, db):
    load_example(db)
    start(db, "x0", QUERY)
    settle(runtime, finished(db, "x0"), rounds=10)
    calm = _fingerprint(db, "x0")
    runtime.reset()
    load_example(db)
    ids = [f"x{i}" for i in range(4)]
    created: list[str] = []

    def audit(delivery) -> None:
        if delivery.function == "onConductorStep":
            created.append(delivery.body.decode(errors="replace"))

    settings = ChaosSettings(duplicate_rate=0.6, fault_rate=0.15, seed=5)
    with runtime.observing(audit), runtime.chaos(settings) as run:
        for cid in ids:
            start(db, cid, QUERY)
        settle(runtime, finished(db, *ids), rounds=30)
    print(run.describe())
    for cid in ids:
        conv = conversation(db, cid)
        assert conv.status == Status.DONE, (cid, conv.error)
        got = steps(db, cid)
        assert [s.index for s in got] == list(range(5)), cid
        assert [s.agent for s in got] == [
            "conductor",
            "extractor",
            "conductor",
            "answerer",
            "conductor",
        ]
        for step_id in ("0001", "0003"):  # each agent step's model call was answered once
            ok = [a for a in attempts(db, cid, step_id) if a["response"]["status"] == "OK"]
            assert len(ok) == 1, (cid, step_id, attempts(db, cid, step_id))
    assert _fingerprint(db, "x0") == calm  # garbled replies and duplicates changed nothing
    counts = run.counts()
    assert counts["duplicated"] > 0, counts
    assert sum(n for k, n in counts.items() if k.startswith("fault:")) > 0, counts


@pytest.mark.parametrize("dead_holder", [False, True])
def test_a_step_whose_invocation_died_is_redriven(runtime, db, monkeypatch, dead_holder):
    """Step 0 committed but its message never published (the instance died between the two),
    or its invocation died holding the step's lease: the scheduled watchdog publishes it again
    once it is older than the stall limit, and the delivery takes the expired lease over."""
    monkeypatch.setenv(STALLED_ENV, "0")
    load_example(db)
    if dead_holder:
        db.document("conversations/c9/leases/0000").set(
            {
                "token": "dead",
                "expiresAt": datetime.now(UTC) - timedelta(seconds=1),
                "pending": True,
            }
        )
    db.document("conversations/c9/steps/0000").set(
        {"index": 0, "kind": "conductor", "agent": "conductor", "status": "pending"}
    )
    db.document("conversations/c9").set(
        {"query": QUERY, "workflowId": "example", "status": "RUNNING", "currentStep": 0}
    )
    runtime.wait_until_idle(timeout=60)
    assert conversation(db, "c9").status == Status.RUNNING  # nothing runs it by itself
    settle(runtime, finished(db, "c9"), rounds=3)
    assert conversation(db, "c9").status == Status.DONE
