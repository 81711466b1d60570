"""Agent participants through every non-chat stage kind, on the real emulators and functions."""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from experiment_state import (
    ANSWER_MODELS,
    doc,
    errors,
    model_logs,
    participant,
    participants,
    settle,
    template,
)
from raw_docs import PROGRESS_OPEN, agent, human, move_human, stage, write_experiment

from functions import reads
from functions.agents.progression import advance_agent
from shared.models import ParticipantStatus
from shared.stages.ranking_results import winner
from shared.templates import template_stages
from tools.load_template import load


def test_demo_template_every_agent_reaches_success_with_valid_answers(runtime, db, monkeypatch):
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")  # each watchdog tick stands for time passing
    tpl = template("demo_all_stages.json")
    result = load(db, tpl, agents=3, api_type="SCRIPTED", seed=1)
    e = result.experiment_id
    settle(runtime, lambda: all(p.timestamps.end_experiment for p in participants(db, e)))
    stages = template_stages(tpl)
    agents = participants(db, e)
    assert len(agents) == 3
    public_ids = {a.public_id for a in agents}
    for a in agents:
        assert a.current_status == ParticipantStatus.SUCCESS, a
        assert a.timestamps.end_experiment is not None
        assert set(a.timestamps.completed_stages) == {s.id for s in stages}
        assert a.name and a.avatar and a.pronouns in {"she/her", "he/him", "they/them"}
        for s in stages:
            if s.kind in ANSWER_MODELS:
                data = doc(db, f"experiments/{e}/participants/{a.private_id}/stageData/{s.id}")
                answer = ANSWER_MODELS[s.kind].model_validate(data)
                assert answer.id == s.id
        ranking = doc(db, f"experiments/{e}/participants/{a.private_id}/stageData/ranking")
        items = next(s for s in stages if s.kind == "ranking").ranking_items
        assert sorted(ranking["rankingList"]) == sorted(i.id for i in items)
        spp = doc(db, f"experiments/{e}/participants/{a.private_id}/stageData/surveyPerParticipant")
        for per_person in spp["answerMap"].values():
            assert set(per_person) == public_ids - {a.public_id}

    cohort = f"experiments/{e}/cohorts/{result.cohort_id}/publicStageData"
    survey_public = doc(db, f"{cohort}/survey")
    assert set(survey_public["participantAnswerMap"]) == public_ids
    ranking_public = doc(db, f"{cohort}/ranking")
    assert set(ranking_public["participantAnswerMap"]) == public_ids
    assert ranking_public["winnerId"] in {i.id for i in items}

    kinds = {s.id: s.kind for s in stages}
    logs = [log for log in model_logs(db, e) if kinds[log.stage_id] != "chat"]
    assert len(logs) == 3 * 4  # profile, survey, survey per participant, ranking
    assert all(log.response.status == "OK" and log.response.usage.total_tokens > 0 for log in logs)
    assert all(log.prompt and log.response.parsed_response is not None for log in logs)
    for a in agents:  # the other members as read for the prompt: name and public id
        (log,) = [
            g for g in logs if (g.stage_id, g.private_id) == ("surveyPerParticipant", a.private_id)
        ]
        for other in agents:
            shown = f"{other.name} ({other.public_id})" in log.prompt
            assert shown == (other.public_id != a.public_id), (other.name, log.prompt)
    assert errors(db, e) == []
    assert not [d for d in runtime.deliveries if d.outcome == "error"]


def test_raw_console_documents_five_agents_and_unknown_kinds_advance(runtime, db):
    e = write_experiment(
        db,
        [
            stage("tos", "tos", tosLines=["Be kind."]),
            stage("profile", "profile", profileType="DEFAULT"),
            stage(
                "survey",
                "survey",
                questions=[
                    {
                        "id": "q1",
                        "kind": "text",
                        "questionTitle": "Why?",
                        "minCharCount": 20,
                        "maxCharCount": 60,
                    },
                    {
                        "id": "q2",
                        "kind": "scale",
                        "questionTitle": "How much?",
                        "lowerValue": 0,
                        "upperValue": 4,
                        "lowerText": "none",
                        "upperText": "lots",
                    },
                ],
            ),
            stage("chips", "chip"),  # a DL kind we do not model: no action, advance
            stage(
                "rank",
                "ranking",
                rankingType="participants",
                strategy="none",
                enableSelfVoting=True,
            ),
            stage("bye", "info", infoLines=["Thanks"]),
        ],
    )
    ids = [agent(db, e, "tos", number=i) for i in range(5)]
    runtime.wait_until_idle(timeout=120)
    for pid in ids:
        p = participant(db, e, pid)
        assert p.current_status == ParticipantStatus.SUCCESS
        text = doc(db, f"experiments/{e}/participants/{pid}/stageData/survey")["answerMap"]["q1"][
            "answer"
        ]
        assert 20 <= len(text) <= 60
        rank = doc(db, f"experiments/{e}/participants/{pid}/stageData/rank")["rankingList"]
        assert sorted(rank) == sorted(f"agent-{i}" for i in range(5))
    assert errors(db, e) == []


def test_locked_stages_wait_and_unlock_wakes_agents(runtime, db):
    tpl = template("group_decision_locked.json")
    result = load(db, tpl, agents=2, api_type="SCRIPTED")
    e = result.experiment_id
    h = human(db, e, "tos", cohort=result.cohort_id)
    runtime.wait_until_idle(timeout=60)

    cohort_path = f"experiments/{e}/cohorts/{result.cohort_id}"
    agents = [p for p in participants(db, e) if p.is_agent]
    assert {a.current_stage_id for a in agents} == {"survey"}  # waits for everyone
    assert all("survey" not in a.timestamps.completed_stages for a in agents)
    assert not doc(db, cohort_path)["stageUnlockMap"].get("survey")

    for to in ("info", "survey"):
        move_human(db, e, h, to)
    runtime.wait_until_idle(timeout=60)
    assert doc(db, cohort_path)["stageUnlockMap"]["survey"] is True
    agents = [p for p in participants(db, e) if p.is_agent]
    assert {a.current_stage_id for a in agents} == {"ranking"}  # needs 3 participants there

    move_human(db, e, h, "ranking")
    runtime.wait_until_idle(timeout=60)
    agents = [p for p in participants(db, e) if p.is_agent]
    assert all(a.current_status == ParticipantStatus.SUCCESS for a in agents)
    human_public = participant(db, e, h).public_id
    for a in agents:
        rank = doc(db, f"experiments/{e}/participants/{a.private_id}/stageData/ranking")[
            "rankingList"
        ]
        assert human_public in rank and a.public_id not in rank  # no self voting
    assert errors(db, e) == []


def _parked_agent(db, runtime, **fields):
    """An agent waiting at a transfer stage, where agents stay until a transfer is assigned."""
    e = write_experiment(
        db,
        [
            stage("intro", "info", infoLines=["Hi"]),
            stage(
                "transfer",
                "transfer",
                enableTimeout=False,
                timeoutSeconds=0,
                autoTransferConfig=None,
            ),
            stage("end", "info", infoLines=["Bye"]),
        ],
        cohorts=("cohort-a", "cohort-b"),
    )
    pid = agent(db, e, "intro", **fields)
    runtime.wait_until_idle(timeout=60)
    p = participant(db, e, pid)
    assert p.current_stage_id == "transfer" and p.current_status == ParticipantStatus.IN_PROGRESS
    return e, pid


def test_attention_check_set_in_console_is_resolved(runtime, db):
    e, pid = _parked_agent(db, runtime)
    db.document(f"experiments/{e}/participants/{pid}").update({"currentStatus": "ATTENTION_CHECK"})
    runtime.wait_until_idle(timeout=60)
    p = participant(db, e, pid)
    assert p.current_status == ParticipantStatus.IN_PROGRESS
    assert p.current_stage_id == "transfer"  # resolving the check is the whole move


def test_attention_check_on_a_finished_agent_returns_it_to_success(runtime, db):
    e = write_experiment(db, [stage("only", "info", infoLines=["Hi"])])
    pid = agent(db, e, "only")
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS
    db.document(f"experiments/{e}/participants/{pid}").update({"currentStatus": "ATTENTION_CHECK"})
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS


@pytest.mark.parametrize("status", ["TRANSFER_PENDING", "ATTENTION_CHECK"])
def test_pending_transfer_is_accepted_and_the_agent_moves_on(runtime, db, status):
    """A transfer set in the console (with or without an attention check first)."""
    e, pid = _parked_agent(db, runtime)
    db.document(f"experiments/{e}/participants/{pid}").update(
        {"transferCohortId": "cohort-b", "currentStatus": status}
    )
    runtime.wait_until_idle(timeout=60)
    p = participant(db, e, pid)
    assert p.current_cohort_id == "cohort-b" and p.transfer_cohort_id is None
    assert "cohort-a" in p.timestamps.cohort_transfers
    assert p.current_status == ParticipantStatus.SUCCESS


def test_concurrent_moves_for_one_agent_complete_each_stage_once(runtime, db):
    """Duplicate and concurrent deliveries: many advance calls at once, plus the runtime's own."""
    survey = stage(
        "s",
        "survey",
        questions=[{"id": "q", "kind": "check", "questionTitle": "OK?", "isRequired": False}],
    )
    ranking = stage(
        "r",
        "ranking",
        rankingType="items",
        strategy="none",
        rankingItems=[{"id": x, "imageId": "", "text": x} for x in "abc"],
    )
    locked = {
        **stage("gate", "info", infoLines=["wait"]),
        "progress": {**PROGRESS_OPEN, "minParticipants": 2},
    }
    e = write_experiment(db, [locked, survey, ranking, stage("end", "info")])
    pid = agent(db, e, "gate")
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, pid).current_stage_id == "gate"

    db.document(f"experiments/{e}/cohorts/cohort-a").update({"stageUnlockMap.gate": True})
    failures: list[BaseException] = []

    def move() -> None:
        try:
            advance_agent(e, pid)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=move) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    runtime.wait_until_idle(timeout=60)
    p = participant(db, e, pid)
    assert p.current_status == ParticipantStatus.SUCCESS
    for answered in ("s", "r"):  # a double advance would skip a stage without answering it
        assert doc(db, f"experiments/{e}/participants/{pid}/stageData/{answered}") is not None
    completions = [s for s in ("gate", "s", "r", "end") if s in p.timestamps.completed_stages]
    assert completions == ["gate", "s", "r", "end"]


def test_a_move_read_before_its_lease_asks_no_model_for_a_stage_another_move_passed(
    runtime, db, monkeypatch
):
    """A move's first read goes beside its lease, so another move can land between the two:
    here the participant is moved past the survey right after the read that still shows it
    there. The move must not ask the model for the survey (no failed write undoes a model
    call): it reads the participant again under the lease, and moves on from where it is."""
    survey = stage(
        "s",
        "survey",
        questions=[{"id": "q", "kind": "check", "questionTitle": "OK?", "isRequired": False}],
    )
    e = write_experiment(db, [stage("start", "info"), survey, stage("end", "info")])
    pid = "agent-stale-read"
    path = f"experiments/{e}/participants/{pid}"
    passed: list[str] = []
    lock = threading.Lock()
    read_now = reads.Reads.read_now

    def read_then_moved_elsewhere(self: reads.Reads, paths: Any) -> list[Any]:
        snapshots = read_now(self, paths)
        mine = [s for s in snapshots if s.reference.path == path and s.exists]
        with lock:
            if not mine or passed or (mine[0].to_dict() or {}).get("currentStageId") != "s":
                return snapshots
            passed.append("s")
        stamp = datetime.now(UTC)
        db.document(path).update(
            {
                "currentStageId": "end",
                "timestamps.completedStages.s": stamp,
                "timestamps.readyStages.end": stamp,
            }
        )
        return snapshots  # the read as it was, before that write

    monkeypatch.setattr(reads.Reads, "read_now", read_then_moved_elsewhere)
    assert agent(db, e, "start", private_id=pid) == pid
    runtime.wait_until_idle(timeout=60)
    assert passed == ["s"]  # a move read the participant at the survey, and it was moved on
    p = participant(db, e, pid)
    assert p.current_status == ParticipantStatus.SUCCESS
    assert set(p.timestamps.completed_stages) == {"start", "s", "end"}
    assert [log.stage_id for log in model_logs(db, e)] == []
    assert doc(db, f"{path}/stageData/s") is None
    assert errors(db, e) == []


def test_many_rankings_at_once_are_all_mirrored_and_the_winner_counts_them_all(runtime, db):
    items = [{"id": i, "imageId": "", "text": i} for i in ("a", "b", "c")]
    e = write_experiment(
        db,
        [
            stage(
                "ranking", "ranking", rankingType="items", strategy="condorcet", rankingItems=items
            ),
            stage("end", "info"),
        ],
    )
    people = [human(db, e, "ranking") for _ in range(20)]
    rng = random.Random(4)
    lists = {p: rng.sample(["a", "b", "c"], 3) for p in people}
    batch = [
        threading.Thread(
            target=db.document(f"experiments/{e}/participants/{p}/stageData/ranking").set,
            args=({"id": "ranking", "kind": "ranking", "rankingList": lists[p]},),
        )
        for p in people
    ]
    for t in batch:
        t.start()
    for t in batch:
        t.join()
    runtime.wait_until_idle(timeout=120)
    public = doc(db, f"experiments/{e}/cohorts/cohort-a/publicStageData/ranking")
    assert public["participantAnswerMap"] == lists  # humans' public ids are their private ids
    assert public["winnerId"] == winner(list(lists.values()))
    assert not [d for d in runtime.deliveries if d.outcome == "error"]
