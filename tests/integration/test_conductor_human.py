"""A person in the loop, on the real emulators: a human agent's step waits (no model call, no
re-drive) for an answer written from the console; the answer wakes it and counts once however
often the step is delivered; past its deadline the step leaves one record and the conversation
goes on, finishes or fails as the agent's ``onDeadline`` says; an answer that skipped the
checks is recorded and the step keeps waiting."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable

import pytest
import requests
from conductor_state import REPO_ROOT, attempts, conversation, errors, finished, start, steps
from experiment_state import settle
from tool_state import WF, logging_tools, tool_calls, with_tools

from console.app import create_app
from emulator.chaos import ChaosSettings
from functions import api_keys
from functions.conductor.wire import ConductorStep, publish_steps
from shared.conductor.documents import Status
from tools import export
from tools.load_workflow import load

pytestmark = pytest.mark.usefixtures("clean")

STALLED_ENV = "DLAB_CONDUCTOR_STALLED_SECONDS"
QUERY = "Hi, I'm Dana. My firewall drops every packet to port 443; what should I check?"
REVIEW = REPO_ROOT / "workflows" / "review"
HUMAN_STEP = "0005"
"""conductor, extractor, conductor, answerer, conductor, then the reviewer (a person)."""
BETTER = "Check that the firewall allows outbound TCP 443 to your proxy."


def _waiting(db, cid: str) -> Callable[[], bool]:
    return lambda: any(s.waiting is not None for s in steps(db, cid))


def _until(runtime, done: Callable[[], bool], seconds: float = 60) -> None:
    """Tick the watchdog as the clock runs (a deadline needs real time to pass)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        runtime.wait_until_idle(timeout=60)
        if done():
            return
        runtime.tick()
        time.sleep(0.2)
    raise AssertionError("not settled:\n" + runtime.deliveries_table(last=15))


def _model_calls(db, cid: str) -> int:
    return sum(
        len(attempts(db, cid, s.id)) for s in db.collection(f"conversations/{cid}/steps").get()
    )


def test_a_human_step_waits_and_its_answer_wakes_it_once(runtime, db, monkeypatch):
    monkeypatch.setenv(STALLED_ENV, "0")  # the watchdog would re-drive any other pending step
    load(db, REVIEW, "review")
    api = create_app(runtime.project, db).test_client()
    start(db, "h1", QUERY, workflow_id="review")
    settle(runtime, _waiting(db, "h1"), rounds=8)
    calls = _model_calls(db, "h1")
    runtime.clear_deliveries()
    for _ in range(3):  # waiting: the ticks publish no step, nobody calls a model
        runtime.tick()
        runtime.wait_until_idle(timeout=60)
    ran = [d.function for d in runtime.deliveries]
    assert ran.count("conductorWatchdog") == 3 and "onConductorStep" not in ran, ran
    conv = conversation(db, "h1")
    assert (conv.status, conv.active_agent, conv.current_step) == (Status.RUNNING, "reviewer", 5)
    waiting = steps(db, "h1")[5]
    assert (waiting.kind, waiting.status) == ("human", "pending")
    assert waiting.waiting is not None
    assert conv.memory["answer"].value in waiting.waiting.question  # the draft, to review
    verdict = waiting.waiting.answer_schema["properties"]["verdict"]
    assert verdict["enum"] == ["approve", "reject"]
    state = api.get("/api/conductor/h1/state").json
    assert state["waiting"]["step"] == 5 and state["waiting"]["question"]

    # the console checks the answer as the step will: nothing written when it is refused
    bad = api.post("/api/conductor/h1/answer", json={"values": {"verdict": "maybe"}})
    assert bad.status_code == 422 and "verdict must be one of" in bad.json["reason"]
    vague = api.post("/api/conductor/h1/answer", json={"values": {"verdict": "reject"}})
    assert vague.status_code == 422 and "needs a comment" in vague.json["reason"]
    assert not db.document(f"conversations/h1/humanAnswers/{HUMAN_STEP}").get().exists

    # the answer, duplicated by the platform and by a second click: it counts once
    chaos = ChaosSettings(duplicate_rate=0.7, seed=3)
    with runtime.chaos(chaos):
        good = {"values": {"verdict": "approve", "answer": BETTER}}
        assert api.post("/api/conductor/h1/answer", json=good).status_code == 201
        again = api.post("/api/conductor/h1/answer", json=good)
        assert again.status_code == 409
        publish_steps(*[ConductorStep(conversation_id="h1", index=5) for _ in range(3)])
        settle(runtime, finished(db, "h1"), rounds=5)
    conv = conversation(db, "h1")
    assert conv.status == Status.DONE, conv.error
    assert conv.answer == BETTER  # the person corrected the draft
    assert [(s.index, s.agent, s.status) for s in steps(db, "h1")][5:] == [
        (5, "reviewer", "done"),
        (6, "conductor", "done"),
    ]
    assert steps(db, "h1")[5].output["verdict"] == "approve"
    assert (conv.memory["verdict"].value, conv.memory["verdict"].agent) == ("approve", "reviewer")
    assert _model_calls(db, "h1") == calls  # the person's step called no model
    answer = db.document(f"conversations/h1/humanAnswers/{HUMAN_STEP}").get().to_dict()
    assert answer["by"] == "console"
    late = api.post("/api/conductor/h1/answer", json=good)
    assert late.status_code == 409 and late.json["field"] == "currentStep"


@pytest.mark.parametrize(
    ("setting", "status", "verdict"),
    [
        ("continue", Status.DONE, "unreviewed"),
        ("finish", Status.DONE, None),
        ("fail", Status.FAILED, None),
    ],
)
def test_past_its_deadline_one_record_and_the_setting_decides(
    runtime, db, setting, status, verdict
):
    load(db, REVIEW, "review")
    db.document("workflows/review/agents/reviewer").update(
        {"human.deadlineSeconds": 1, "human.onDeadline": setting}
    )
    start(db, "h2", QUERY, workflow_id="review")
    _until(runtime, finished(db, "h2"))
    conv = conversation(db, "h2")
    assert conv.status == status, conv.error
    human = steps(db, "h2")[5]
    records = [e for e in errors(db, "h2") if e["field"] == "humanAnswer"]
    assert len(records) == 1, errors(db, "h2")
    assert records[0]["document"] == f"conversations/h2/steps/{HUMAN_STEP}"
    assert (
        "no answer by the deadline" in records[0]["reason"]
        and f"({setting})" in records[0]["reason"]
    )
    assert records[0]["severity"] == ("error" if setting == "fail" else "warning")
    if setting == "fail":
        assert (conv.error.document, conv.error.field) == (records[0]["document"], "humanAnswer")
        assert human.status == "failed" and len(steps(db, "h2")) == 6
    elif setting == "finish":
        assert human.status == "done" and human.note == records[0]["reason"]
        assert conv.answer == conv.memory["answer"].value and len(steps(db, "h2")) == 6
    else:
        assert human.note == records[0]["reason"]
        assert steps(db, "h2")[6].decision.next_agent == "FINISH"
        assert (conv.memory["verdict"].value, conv.memory["verdict"].agent) == (verdict, "reviewer")


def test_an_answer_that_skipped_the_checks_is_recorded_and_the_step_keeps_waiting(runtime, db):
    load(db, REVIEW, "review")
    api = create_app(runtime.project, db).test_client()
    start(db, "h3", QUERY, workflow_id="review")
    settle(runtime, _waiting(db, "h3"), rounds=8)
    raw = db.document(f"conversations/h3/humanAnswers/{HUMAN_STEP}")
    raw.set({"values": {"verdict": "sure"}, "by": "a raw write"})
    runtime.wait_until_idle(timeout=60)
    records = [e for e in errors(db, "h3") if e["document"] == raw.path]
    assert [(r["field"], "verdict must be one of" in r["reason"]) for r in records] == [
        ("values", True)
    ]
    assert conversation(db, "h3").status == Status.RUNNING
    assert steps(db, "h3")[5].status == "pending"
    assert (
        api.post("/api/conductor/h3/answer", json={"values": {"verdict": "approve"}}).status_code
        == 409
    )
    raw.delete()  # the fix: remove it, then answer
    runtime.wait_until_idle(timeout=60)
    assert (
        api.post("/api/conductor/h3/answer", json={"values": {"verdict": "approve"}}).status_code
        == 201
    )
    settle(runtime, finished(db, "h3"), rounds=5)
    assert conversation(db, "h3").status == Status.DONE


def test_the_export_has_every_step_attempt_answer_and_memory_change(runtime, db, tmp_path):
    load(db, REVIEW, "review")
    api = create_app(runtime.project, db).test_client()
    start(db, "h4", QUERY, workflow_id="review")
    settle(runtime, _waiting(db, "h4"), rounds=8)
    steer = api.put("/api/conductor/h4/memory/name", json={"value": "Dana"})
    assert steer.status_code == 200
    raw = db.document(f"conversations/h4/humanAnswers/{HUMAN_STEP}")
    raw.set({"values": {"verdict": "sure"}})  # an error record, then the fix
    runtime.wait_until_idle(timeout=60)
    raw.delete()
    answered = {"values": {"verdict": "approve", "answer": BETTER}}
    assert api.post("/api/conductor/h4/answer", json=answered).status_code == 201
    settle(runtime, finished(db, "h4"), rounds=5)
    assert (
        export.main(["--conversation", "h4", "--out", str(tmp_path), "--project", runtime.project])
        == 0
    )
    text = (tmp_path / "h4.jsonl").read_text()
    assert api.get("/api/conductor/h4/export.jsonl").data.decode() == text  # the console's too
    lines = [json.loads(line) for line in text.splitlines()]
    assert {r["conversationId"] for r in lines} == {"h4"}
    conv = conversation(db, "h4")
    assert lines[0]["type"] == "conversation" and lines[0]["data"]["status"] == "DONE"
    assert lines[0]["data"]["answer"] == conv.answer == BETTER
    by_type: dict[str, list[dict]] = {}
    for record in lines:
        by_type.setdefault(record["type"], []).append(record)
    assert [r["step"] for r in by_type["step"]] == list(range(7))
    assert by_type["step"][5]["data"]["agent"] == "reviewer"
    for record in by_type["step"]:  # each step's attempts, as stored under it
        index = record["step"]
        exported = [a["data"] for a in by_type["attempt"] if a["step"] == index]
        assert exported == [_plain(a) for a in attempts(db, "h4", record["id"])], index
    assert {a["step"] for a in by_type["attempt"]} == {1, 3}  # the model's steps only
    journal = {s.id: s.to_dict() for s in db.collection("conversations/h4/journal").get()}
    assert journal and {r["id"] for r in by_type["journal"]} == set(journal)  # each reply
    assert all(r["data"]["text"] == journal[r["id"]]["text"] for r in by_type["journal"])
    (answer,) = by_type["human_answer"]
    assert (answer["step"], answer["data"]["values"]["verdict"]) == (5, "approve")
    assert answer["data"]["by"] == "console"
    changes = [c["data"] | {"step": c["step"]} for c in by_type["memory_change"]]
    assert [c["field"] for c in changes if c["step"] == 1] == ["name", "topic", "user_question"]
    assert {(c["field"], c["after"]) for c in changes if c["step"] == 5} == {
        ("answer", BETTER),
        ("verdict", "approve"),
    }
    (edit,) = [c for c in changes if c["by"] == "console"]
    assert (edit["field"], edit["after"], edit["step"]) == ("name", "Dana", None)
    assert edit["before"] == next(c["after"] for c in changes if c["field"] == "name")
    replayed: dict[str, object] = {}  # the changes, in time order, make the final memory
    for change in sorted(changes, key=lambda c: c["at"]):
        assert replayed.get(change["field"]) == change["before"], change
        replayed[change["field"]] = change["after"]
    assert replayed == conv.memory_values()
    errors_ = [(e["data"]["document"], e["data"]["field"]) for e in by_type["error"]]
    assert errors_ == [(raw.path, "values")]


def _plain(data: dict) -> dict:
    """A stored document as the export writes it (times as ISO 8601)."""
    return json.loads(json.dumps(data, default=lambda t: t.isoformat()))


def test_a_client_answers_through_the_rest_api(runtime, db):
    load(db, REVIEW, "review")
    owner, other = "owner@example.com", "someone@example.com"
    db.document("conversations/h5").set(
        {"query": QUERY, "workflowId": "review", "status": "PENDING", "creator": owner}
    )
    base = runtime.http_url("api") + "/v1/conversations/h5"

    def call(key: str, method: str, route: str = "", body: object = None) -> requests.Response:
        headers = {"Authorization": f"Bearer {key}"}
        return requests.request(method, base + route, json=body, headers=headers, timeout=60)

    mine, _ = api_keys.create(owner, "tests")
    theirs, _ = api_keys.create(other, "tests")
    settle(runtime, _waiting(db, "h5"), rounds=8)
    seen = call(mine, "GET").json()
    assert (seen["status"], seen["currentStep"], seen["waiting"]["step"]) == ("RUNNING", 5, 5)
    assert seen["waiting"]["answerSchema"]["properties"]["verdict"]["enum"] == ["approve", "reject"]
    assert "The drafted answer:" in seen["waiting"]["question"]
    assert call(theirs, "GET").status_code == 403
    refused = call(theirs, "POST", "/answer", {"values": {"verdict": "approve"}})
    assert refused.status_code == 403
    bad = call(mine, "POST", "/answer", {"values": {"verdict": "later"}})
    assert bad.status_code == 422 and "verdict must be one of" in bad.json()["error"]
    assert call(mine, "POST", "/answer", {"verdict": "approve"}).status_code == 400
    assert call(mine, "POST", "/answer", {"values": {"verdict": "approve"}}).status_code == 201
    assert call(mine, "POST", "/answer", {"values": {"verdict": "approve"}}).status_code == 409
    settle(runtime, finished(db, "h5"), rounds=5)
    assert conversation(db, "h5").status == Status.DONE
    answer = db.document(f"conversations/h5/humanAnswers/{HUMAN_STEP}").get().to_dict()
    assert answer["by"] == f"api:{owner}"
    assert call(mine, "GET").json()["waiting"] is None


def test_an_answer_over_the_size_limit_is_refused_and_never_fails_the_conversation(runtime, db):
    """1 MB through the API: 422, nothing written; a raw write over the limit: one record, the
    step keeps waiting; a good answer then finishes it."""
    load(db, REVIEW, "review")
    owner = "owner@example.com"
    db.document("conversations/h6").set(
        {"query": QUERY, "workflowId": "review", "status": "PENDING", "creator": owner}
    )
    key, _ = api_keys.create(owner, "tests")
    url = runtime.http_url("api") + "/v1/conversations/h6/answer"
    settle(runtime, _waiting(db, "h6"), rounds=8)
    huge = {"values": {"verdict": "reject", "answer": "x" * 1_000_000}}
    answered = requests.post(url, json=huge, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    assert answered.status_code == 422, answered.text
    assert answered.json()["error"] == (
        "values: the answer is 1000035 bytes, over the limit of 65536 bytes"
    )
    raw = db.document(f"conversations/h6/humanAnswers/{HUMAN_STEP}")
    assert not raw.get().exists
    raw.set({"values": {"verdict": "reject", "answer": "y" * 100_000}, "by": "a raw write"})
    runtime.wait_until_idle(timeout=60)
    records = [e for e in errors(db, "h6") if e["document"] == raw.path]
    assert [(r["field"], "over the limit of 65536 bytes" in r["reason"]) for r in records] == [
        ("values", True)
    ]
    assert conversation(db, "h6").status == Status.RUNNING
    raw.delete()
    runtime.wait_until_idle(timeout=60)
    good = {"values": {"verdict": "approve", "answer": BETTER}}
    assert (
        requests.post(
            url, json=good, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ).status_code
        == 201
    )
    settle(runtime, finished(db, "h6"), rounds=5)
    assert conversation(db, "h6").status == Status.DONE


def test_the_export_and_the_console_show_a_steps_tool_calls(runtime, db, tmp_path, monkeypatch):
    logging_tools(tmp_path, monkeypatch)
    with_tools(db, "lookup")  # the example, its answerer (step 3) given a tool
    start(db, "h6", QUERY, WF)
    settle(runtime, finished(db, "h6"), rounds=5)
    assert conversation(db, "h6").status == Status.DONE
    [stored] = tool_calls(db, "h6", "0003")
    assert (
        export.main(["--conversation", "h6", "--out", str(tmp_path), "--project", runtime.project])
        == 0
    )
    lines = [json.loads(line) for line in (tmp_path / "h6.jsonl").read_text().splitlines()]
    [call] = [r for r in lines if r["type"] == "tool_call"]
    assert (call["step"], call["id"]) == (3, stored["key"])  # an entry of the journal
    assert call["data"] == _plain(stored)
    assert stored["key"] not in [r["id"] for r in lines if r["type"] == "journal"]
    assert call["data"]["name"] == "lookup" and call["data"]["result"].startswith("sunny in ")
    order = [(r["type"], r["step"]) for r in lines if r["step"] == 3]
    assert order[:4] == [("step", 3), ("attempt", 3), ("attempt", 3), ("tool_call", 3)]
    state = create_app(runtime.project, db).test_client().get("/api/conductor/h6/state").json
    [shown] = state["steps"][3]["tool_calls"]
    assert (shown["name"], shown["status"], shown["result"]) == ("lookup", "done", stored["result"])


DISKURS_PROJECT = {
    "config.yml": """\
        first_contact: drafter
        llms: [{name: fake, type: scripted}]
        agents:
          - name: drafter
            type: multistep
            llm: fake
            prompt: {type: multistep_prompt, location: drafter, promptArgumentClass: Draft}
            topics: [approver]
          - name: approver
            type: multistep
            human: {deadlineSeconds: 3600, onDeadline: fail}
            prompt: {type: multistep_prompt, location: approver, promptArgumentClass: Verdict}
            topics: []
        """,
    "drafter/prompt.py": """\
        from dataclasses import dataclass
        from diskurs import PromptArgument


        @dataclass
        class Draft(PromptArgument):
            draft: str = ""
        """,
    "drafter/system_template.jinja2": "Draft a reply.",
    "drafter/user_template.jinja2": "Draft so far: {{ draft }}",
    "drafter/agent_description.txt": "drafts",
    "approver/prompt.py": """\
        from dataclasses import dataclass
        from diskurs import PromptArgument, PromptValidationError


        @dataclass
        class Verdict(PromptArgument):
            verdict: str = ""


        def is_valid(arg):
            if arg.verdict not in ("yes", "no"):
                raise PromptValidationError("Say yes or no.")
            return True
        """,
    "approver/system_template.jinja2": "",
    "approver/user_template.jinja2": "Approve the draft? (yes or no)",
    "approver/agent_description.txt": "a person approves",
}


def test_a_person_answers_in_a_diskurs_project(runtime, db, tmp_path, monkeypatch):
    """A Diskurs project's agent given a ``human`` map (Diskurs itself ignores the key): its
    dataclass is the answer, its is_valid's message goes back verbatim, its topics apply."""
    monkeypatch.setenv("DLAB_WORKFLOW_DIRS", str(tmp_path))
    for name, text in DISKURS_PROJECT.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    load(db, tmp_path, "approving")
    api = create_app(runtime.project, db).test_client()
    start(db, "h7", QUERY, workflow_id="approving")
    settle(runtime, _waiting(db, "h7"), rounds=8)
    waiting = steps(db, "h7")[1]
    assert (waiting.kind, waiting.agent) == ("human", "approver")
    assert waiting.waiting.question == "Approve the draft? (yes or no)"
    bad = api.post("/api/conductor/h7/answer", json={"values": {"verdict": "maybe"}})
    assert (bad.status_code, bad.json["reason"]) == (422, "Say yes or no.")
    assert (
        api.post("/api/conductor/h7/answer", json={"values": {"verdict": "yes"}}).status_code == 201
    )
    settle(runtime, finished(db, "h7"), rounds=5)
    conv = conversation(db, "h7")
    assert conv.status == Status.DONE, conv.error
    assert conv.outcome == "no topic"  # Diskurs: an agent without topics ends the conversation
    assert steps(db, "h7")[1].output == {"verdict": "yes"}
