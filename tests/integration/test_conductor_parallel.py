"""Parallel multi-step agents on the real emulators: Diskurs' examples/parallel_agent runs
unchanged (but for its llms: section) to its finalizer; each branch's model call is made once;
the join completes once under chaos delivery; a fan-out whose branch messages were lost is
re-driven by the watchdog through the join step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conductor_state import REPO_ROOT, Scripted, conversation, finished, start, steps
from experiment_state import settle

from emulator import model_faults
from emulator.chaos import ChaosSettings
from shared.conductor.documents import Status
from tools.load_workflow import load

pytestmark = pytest.mark.usefixtures("clean")

PROJECT = REPO_ROOT / "examples" / "diskurs" / "parallel_agent"
QUERY = (  # run_parallel.py's query
    "Please configure the following URLs: "
    "www.acme.com: add to whitelist"
    "www.example.com: add to whitelist"
    "add the following to our blacklist:"
    "www.google.com, 192.168.1.10"
    "remove the following from our blacklist:"
    "innocence.org, helpfule.com"
)
WANTED = {
    "www.acme.com": ("whitelist", "add"),
    "www.example.com": ("whitelist", "add"),
    "www.google.com": ("blacklist", "add"),
    "192.168.1.10": ("blacklist", "add"),
    "innocence.org": ("blacklist", "remove"),
    "helpfule.com": ("blacklist", "remove"),
}


def load_project(db: Any, monkeypatch: pytest.MonkeyPatch, workflow_id: str = "parallel") -> str:
    monkeypatch.setenv("DLAB_WORKFLOW_DIRS", str(PROJECT.parent))
    return load(db, PROJECT, workflow_id, config_file=PROJECT / "parallel_config.yaml")


def the_model(echo: bool = False) -> Scripted:
    """The scripted model, told what a good model would answer: the urls of the query in the
    main turn, each url's list and action in its branch (with ``echo``, also its url, the
    string value of the ``list[str] | str`` field ``urls``)."""
    model = Scripted()
    model.reply("Extract all urls", {"urls": list(WANTED)}, times=-1)
    for url, (list_name, action) in WANTED.items():
        reply = {"list_name": list_name, "action": action, **({"urls": url} if echo else {})}
        model.reply(f"related to this url: {url}", reply, times=-1)
    return model


def faulty(runtime: Any, run: Any, model: Scripted) -> Any:
    """The chaos block's model faults over the scripted answers (one wrapper at a time)."""
    return runtime.model_wrapper(
        lambda client: model_faults.wrapper(run.faults)(model.wrap(client))
    )


def branches(db: Any, cid: str, join: str) -> list[dict[str, Any]]:
    docs = db.collection(f"conversations/{cid}/steps/{join}/branches").get()
    return sorted((d.to_dict() for d in docs), key=lambda b: b["index"])


def ok_attempts(db: Any, path: str) -> int:
    docs = db.collection(f"{path}/attempts").get()
    return sum(1 for d in docs if d.to_dict()["response"]["status"] == "OK")


def check_parallel_run(db: Any, cid: str) -> None:
    """The run's shape: the main turn, one join step with one done branch per url (each
    answered by one model call), the join's instructions in branch order, the finalizer."""
    conv = conversation(db, cid)
    assert conv.status == Status.DONE, (cid, conv.error)
    got = steps(db, cid)
    assert [s.index for s in got] == list(range(len(got)))
    kinds = [(s.kind, s.agent) for s in got]
    assert kinds[:2] == [("agent", "Parallel_Agent"), ("join", "Parallel_Agent")], kinds
    assert [k for k in kinds if k[0] == "join"] == [("join", "Parallel_Agent")]
    assert kinds[2][1] == "Finalizing_Agent", kinds
    join = got[1]
    assert join.status == "done"
    done = branches(db, cid, "0001")
    assert [(b["input"]["urls"], b["status"], b["agentStep"]) for b in done] == [
        (url, "done", 1) for url in WANTED
    ]
    for b in done:
        assert ok_attempts(db, f"conversations/{cid}/steps/0001/branches/{b['index']:02d}") == 1
    assert ok_attempts(db, f"conversations/{cid}/steps/0000") == 1
    assert join.output is not None
    assert [(i["url"], i["list_name"], i["action"]) for i in join.output["instructions"]] == [
        (url, *WANTED[url]) for url in WANTED
    ]
    # The joined instructions are the Parallel_Agent's turn's result; the memory passes on
    # only output fields, into input fields (Diskurs' rules), and FinalizingUserPrompt's
    # `instructions` is neither: the finalizer's result is its default, as in Diskurs.
    assert (conv.outcome, conv.result) == ("finalizer", {"instructions": []})


def test_the_diskurs_parallel_example_branches_joins_and_finalizes(runtime, db, monkeypatch):
    load_project(db, monkeypatch)
    model = the_model()
    with runtime.model_wrapper(model.wrap):
        start(db, "p1", QUERY, workflow_id="parallel")
        settle(runtime, finished(db, "p1"), rounds=8)
    check_parallel_run(db, "p1")
    branched = [r for r in model.prompts if "related to this url" in r.prompt]
    assert len(branched) == len(WANTED)  # one model call a branch, in parallel


def test_branch_values_keep_their_declared_types_through_the_join(runtime, db, monkeypatch):
    """Each branch's model echoes its url, a string of the ``list[str] | str`` field ``urls``
    (the main turn's reply: a list): kept a string, so the join's instructions name the urls,
    not their first characters (Diskurs' parser makes a list of the characters)."""
    load_project(db, monkeypatch)
    model = the_model(echo=True)
    with runtime.model_wrapper(model.wrap):
        start(db, "p2", QUERY, workflow_id="parallel")
        settle(runtime, finished(db, "p2"), rounds=8)
    check_parallel_run(db, "p2")
    assert [b["output"]["urls"] for b in branches(db, "p2", "0001")] == list(WANTED)
    assert steps(db, "p2")[0].output["urls"] == list(WANTED)


def test_under_chaos_each_join_completes_once(runtime, db, monkeypatch):
    load_project(db, monkeypatch)
    model = the_model()
    ids = [f"q{i}" for i in range(3)]
    settings = ChaosSettings(duplicate_rate=0.6, fault_rate=0.15, seed=11)
    with runtime.chaos(settings) as run, faulty(runtime, run, model):
        for cid in ids:
            start(db, cid, QUERY, workflow_id="parallel")
        settle(runtime, finished(db, *ids), rounds=30)
    print(run.describe())
    for cid in ids:
        check_parallel_run(db, cid)
    counts = run.counts()
    assert counts["duplicated"] > 0, counts
    assert sum(n for k, n in counts.items() if k.startswith("fault:")) > 0, counts


def test_a_fan_out_whose_branch_messages_were_lost_is_redriven(runtime, db, monkeypatch):
    """The step that branched committed (join step and branches created) but its instance
    died before publishing the branches: the join step, re-driven by the watchdog, publishes
    the branches that stand still; until they are done the join does nothing."""
    load_project(db, monkeypatch)
    model = the_model()
    from functions import pubsub

    lost: list[str] = []
    with runtime.model_wrapper(model.wrap):
        original = pubsub.publish_all

        def losing(topic: str, payloads: list[Any], **attributes: str) -> list[str]:
            if topic == "conductor-branch" and not lost:
                lost.append(topic)
                return []  # the instance died before the publish
            return original(topic, payloads, **attributes)

        monkeypatch.setattr(pubsub, "publish_all", losing)
        start(db, "p3", QUERY, workflow_id="parallel")
        runtime.wait_until_idle(timeout=60)
        conv = conversation(db, "p3")
        assert lost == ["conductor-branch"]
        assert conv.status == Status.RUNNING and conv.current_step == 1  # waiting at the join
        assert {b["status"] for b in branches(db, "p3", "0001")} == {"pending"}
        monkeypatch.setenv("DLAB_CONDUCTOR_STALLED_SECONDS", "0")
        settle(runtime, finished(db, "p3"), rounds=5)
    check_parallel_run(db, "p3")


def test_the_example_is_loaded_with_diskurs_names(db, monkeypatch):
    load_project(db, monkeypatch)
    agent = db.document("workflows/parallel/agents/Parallel_Agent").get().to_dict()
    assert agent["type"] == "parallel_multistep"
    assert agent["invokeOnFinal"] is False
    assert Path(agent["parallelLocation"]).name == "Parallel_Agent"
    assert agent["joinConversationsName"] == "join_conversations"
    warnings = db.document("workflows/parallel").get().to_dict()["warnings"]
    assert [w for w in warnings if "unknown" in w] == [], warnings
