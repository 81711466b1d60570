"""``python -m tools.replay`` on the emulator: a finished run replayed from its journal on a
database of its own writes the same documents with 0 model requests; re-run with one thing
changed, it reuses exactly the recorded replies whose requests did not change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conductor_state import conversation, finished, load_example, start
from experiment_state import all_succeeded, demo_without_chats, settle
from tool_state import WF, logging_tools, tool_calls, with_tools
from tool_state import runs as tool_runs

from functions import journal
from shared.conductor.documents import Status
from tools.debate import state as debate_state
from tools.load_template import load
from tools.replay import __main__ as replay
from tools.replay import compare, runs
from tools.society import client as society

pytestmark = pytest.mark.usefixtures("clean")
DEBATE = Path(__file__).resolve().parents[2] / "templates" / "debates" / "stock_trading.json"
QUERY = "Hi, I'm Dana. My firewall drops every packet to port 443; what should I check?"


def _journaled(db, run: str) -> int:
    return len(db.collection(f"{run}/journal").get())


def test_a_finished_conversation_replays_with_no_model_request(runtime, db, capsys):
    load_example(db)
    start(db, "r1", QUERY)
    settle(runtime, finished(db, "r1"), rounds=5)
    assert conversation(db, "r1").status == Status.DONE
    recorded = _journaled(db, "conversations/r1")
    assert recorded >= 2
    assert replay.replay(db, "conversations/r1", [], timeout=120) == 0
    out = capsys.readouterr().out
    assert f"reused {recorded} recorded replies, made 0 model calls" in out
    assert "documents: the same as the run's" in out


def test_a_changed_query_asks_the_model_from_the_first_request_that_differs(runtime, db, capsys):
    load_example(db)
    start(db, "r2", QUERY)
    settle(runtime, finished(db, "r2"), rounds=5)
    recorded = _journaled(db, "conversations/r2")
    status = replay.replay(db, "conversations/r2", ['conversations/r2:query="Hello?"'], 120)
    out = capsys.readouterr().out
    assert status == 0, out
    # the query is in the first request: nothing is reused, every call is made anew
    assert "reused 0 recorded replies" in out
    assert "made 0 model calls" not in out
    assert "changed: conversations/r2" in out and "place(s) differ from the run's" in out
    assert journal.taken["conversations/r2"] == 0 and recorded >= 2


def test_a_conversation_with_tools_replays_without_running_them(
    runtime, db, capsys, tmp_path, monkeypatch
):
    """The answerer's tool call is an entry of the journal: the replay takes the reply that
    asked for it and the call's recorded result, so the tool does not run again and the model
    is asked nothing."""
    log = logging_tools(tmp_path, monkeypatch)
    with_tools(db, "lookup")
    start(db, "r4", QUERY, WF)
    settle(runtime, finished(db, "r4"), rounds=5)
    assert conversation(db, "r4").status == Status.DONE
    [call] = tool_calls(db, "r4", "0003")
    assert tool_runs(log) == [f"lookup {call['result'].removeprefix('sunny in ')}"]
    replies = _journaled(db, "conversations/r4") - 1
    assert replay.replay(db, "conversations/r4", [], timeout=120) == 0
    out = capsys.readouterr().out
    assert f"{replies} recorded replies, 1 tool calls" in out
    assert f"reused {replies} recorded replies, made 0 model calls" in out
    assert "tools: reused 1 recorded tool calls, ran 0" in out
    assert "documents: the same as the run's" in out
    assert len(tool_runs(log)) == 1  # not run again


def test_a_changed_conversation_runs_its_tools_anew(runtime, db, capsys, tmp_path, monkeypatch):
    """A changed query changes every request: the reply asking for the tool is new, so its
    call is too, and the tool runs."""
    log = logging_tools(tmp_path, monkeypatch)
    with_tools(db, "lookup")
    start(db, "r5", QUERY, WF)
    settle(runtime, finished(db, "r5"), rounds=5)
    status = replay.replay(db, "conversations/r5", ['conversations/r5:query="Hello?"'], 120)
    out = capsys.readouterr().out
    assert status == 0, out
    assert "reused 0 recorded replies" in out
    assert "tools: reused 0 recorded tool calls, ran 1" in out
    assert len(tool_runs(log)) == 2


def test_bad_runs_and_changes_are_refused_before_anything_starts(runtime, db):
    with pytest.raises(runs.NotReplayable, match="is not a run"):
        runs.kind_of("experiments")
    with pytest.raises(runs.NotReplayable, match="does not exist"):
        replay.replay(db, "debates/none", [], 10)
    load_example(db)
    start(db, "r3", QUERY)
    with pytest.raises(replay.BadChange, match="PATH:FIELD=JSON"):
        replay.replay(db, "conversations/r3", ["query"], 10)
    with pytest.raises(replay.BadChange, match="not among the run's start documents"):
        replay.replay(db, "conversations/r3", ["stages/x:a=1"], 10)
    with pytest.raises(replay.BadChange, match="not JSON"):
        replay.replay(db, "conversations/r3", ["conversations/r3:query=Hello"], 10)


def test_the_comparison_sets_aside_times_and_drawn_ids_only():
    kept = {"experiments", "e1", "p1"}
    a = {"experiments/e1/chats/0b9b3c6e-8c8f-4a62-9d7e-1f2a3b4c5d6e": {"text": "hi", "by": "p1"}}
    b = {"experiments/e1/chats/7c9e6679-7425-40de-944b-e07fc1f90ae7": {"text": "hi", "by": "p1"}}
    assert compare.compare(a, b, kept).same
    c = {"experiments/e1/chats/7c9e6679-7425-40de-944b-e07fc1f90ae7": {"text": "ho", "by": "p1"}}
    (where,) = compare.compare(a, c, kept).differing
    assert where.startswith("experiments/e1/chats/<id>")
    renamed = {"experiments/e1/chats/x": {"text": "hi", "by": "p2"}}
    assert not compare.compare(a, renamed, kept).same


def test_an_experiment_replays_to_the_same_answers_with_no_model_request(runtime, db, capsys):
    loaded = load(db, demo_without_chats(), agents=3, api_type="SCRIPTED", seed=0)
    e = f"experiments/{loaded.experiment_id}"
    settle(runtime, all_succeeded(db, loaded.experiment_id), rounds=10)
    recorded = _journaled(db, e)
    assert recorded >= 3
    assert replay.replay(db, e, [], timeout=240) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert f"reused {recorded} recorded replies, made 0 model calls" in out
    assert "documents: the same as the run's" in out


def test_a_debate_and_a_society_replay_with_no_model_request(runtime, db, capsys):
    debate = json.loads(DEBATE.read_text()) | {"numRounds": 1}
    db.document("debates/rd").set(debate)
    settle(runtime, lambda: debate_state.read(db, "rd").done, rounds=30)
    sid = society.create(db, {"agents": 4, "days": 2, "seed": 5, "dayDeadlineS": 60})
    settle(runtime, lambda: society.closed_days(db, sid) == 2, rounds=10)
    for run in ("debates/rd", f"societies/{sid}"):
        recorded = _journaled(db, run)
        assert recorded >= 4, run
        assert replay.replay(db, run, [], timeout=300) == 0, capsys.readouterr().out
        out = capsys.readouterr().out
        assert f"reused {recorded} recorded replies, made 0 model calls" in out, out
        assert "documents: the same as the run's" in out, out


def test_a_changed_stage_reuses_the_calls_before_it_and_none_after(runtime, db, capsys):
    demo = demo_without_chats()
    loaded = load(db, demo, agents=2, api_type="SCRIPTED", seed=1)
    e = f"experiments/{loaded.experiment_id}"
    settle(runtime, all_succeeded(db, loaded.experiment_id), rounds=10)
    order = demo["experiment"]["stageIds"]
    changed = order.index("survey")
    stages = [d.to_dict()["stageId"] for d in db.collection(f"{e}/journal").get()]
    before = sum(order.index(s) < changed for s in stages)
    after = len(stages) - before
    assert before >= 2 and after >= 4, stages
    change = 'stages/survey:descriptions.primaryText="What would you change first?"'
    assert replay.replay(db, e, [change], timeout=240) == 0
    out = capsys.readouterr().out
    assert f"reused {before} recorded replies, made {after} model calls" in out, out
    assert "place(s) differ from the run's" in out
