"""A bad document stops only what depends on it, is named in one error record, and fixing it
resumes the agents without a touch (the record then says when it was resolved)."""

from __future__ import annotations

import pytest
from chat_docs import add_mediator, all_done, chat_experiment, chat_messages, persona_prompt
from experiment_state import errors, participant, settle
from google.cloud import firestore
from raw_docs import PROGRESS_OPEN, agent, stage, write_experiment

from shared.models import ParticipantStatus

pytestmark = pytest.mark.usefixtures("clean")
QUESTION = {"id": "q", "kind": "check", "questionTitle": "OK?"}


def _survey_experiment(db, **progress):
    survey = stage("survey", "survey", questions=[QUESTION], progress={**PROGRESS_OPEN, **progress})
    return write_experiment(db, [stage("intro", "info"), survey, stage("end", "info")])


def test_a_fixed_persona_prompt_wakes_its_agents_and_resolves_the_record(runtime, db):
    e = _survey_experiment(db)
    prompt = f"experiments/{e}/agentParticipants/careful/prompts/survey"
    db.document(f"experiments/{e}/agentParticipants/careful").set({"id": "careful"})
    db.document(prompt).set({"id": "survey", "type": "survey", "numRetries": -1, "prompt": []})
    config = {"agentId": "careful", "modelSettings": {"apiType": "SCRIPTED", "modelName": "s"}}
    broken = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(2)]
    fine = agent(db, e, "intro", number=9)
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, fine).current_status == ParticipantStatus.SUCCESS
    assert all(participant(db, e, p).current_stage_id == "survey" for p in broken)
    (record,) = errors(db, e)
    assert (record.document, record.field) == (prompt, "numRetries")
    assert record.occurrences == len(broken) and record.resolved_at is None
    db.document(prompt).update({"numRetries": 1})  # the fix, as in the console
    runtime.wait_until_idle(timeout=60)
    assert all(participant(db, e, p).current_status == ParticipantStatus.SUCCESS for p in broken)
    (record,) = errors(db, e)
    assert record.resolved_at is not None and record.occurrences == len(broken)


def test_a_broken_mediator_silences_only_itself(runtime, db, monkeypatch):
    monkeypatch.setenv("DLAB_IDLE_AGENT_SECONDS", "0")  # each settle tick stands for time passing
    e = chat_experiment(db, mediator=False)
    add_mediator(db, e)
    prompt = f"experiments/{e}/agentMediators/host/prompts/chat"
    db.document(prompt).update({"chatSettings": "nope"})
    config = persona_prompt(db, e, max_responses=2)
    ids = [agent(db, e, "intro", number=i, agentConfig=config) for i in range(2)]
    settle(runtime, all_done(db, e, ids))
    said = [m for m in chat_messages(db, e) if m["type"] != "system"]
    assert said and all(m["type"] == "participant" for m in said)
    assert [(r.document, r.field) for r in errors(db, e)] == [(prompt, "chatSettings")]


def test_a_hand_written_human_without_arrival_stamps_is_named_and_the_fix_unlocks(runtime, db):
    e = _survey_experiment(db, waitForAllParticipants=True)
    human = "human-by-hand"
    doc = db.document(f"experiments/{e}/participants/{human}")
    doc.set(
        {
            "privateId": human,
            "publicId": human,
            "currentStageId": "survey",
            "currentCohortId": "cohort-a",
            "currentStatus": "IN_PROGRESS",
            "timestamps": {"startExperiment": firestore.SERVER_TIMESTAMP},
        }
    )
    ids = [agent(db, e, "intro", number=i) for i in range(2)]
    runtime.wait_until_idle(timeout=60)
    assert all(participant(db, e, p).current_stage_id == "survey" for p in ids)
    (record,) = errors(db, e)
    assert (record.document, record.field) == (doc.path, "timestamps.readyStages.survey")
    doc.update({"timestamps.readyStages.survey": firestore.SERVER_TIMESTAMP})
    runtime.wait_until_idle(timeout=60)
    assert all(participant(db, e, p).current_status == ParticipantStatus.SUCCESS for p in ids)


def test_an_agent_whose_private_id_names_a_human_never_moves_the_human(runtime, db):
    e = write_experiment(db, [stage("a", "info"), stage("b", "info")])
    human_doc = db.document(f"experiments/{e}/participants/human-1")
    human_doc.set(
        {
            "privateId": "human-1",
            "publicId": "human-1",
            "currentStageId": "a",
            "currentCohortId": "cohort-a",
            "currentStatus": "IN_PROGRESS",
            "timestamps": {"startExperiment": firestore.SERVER_TIMESTAMP},
        }
    )
    runtime.wait_until_idle(timeout=60)
    impostor = agent(db, e, "a", privateId="human-1")
    runtime.wait_until_idle(timeout=60)
    (record,) = errors(db, e)
    assert (record.document, record.field) == (
        f"experiments/{e}/participants/{impostor}",
        "privateId",
    )
    assert human_doc.get().to_dict()["currentStageId"] == "a"
    assert participant(db, e, impostor).current_stage_id == "a"
    db.document(f"experiments/{e}/participants/{impostor}").update({"privateId": impostor})
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, impostor).current_status == ParticipantStatus.SUCCESS
    assert human_doc.get().to_dict()["currentStageId"] == "a"
