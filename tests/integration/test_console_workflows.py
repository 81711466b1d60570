"""What an experimenter does in the Firebase console while an experiment runs, as raw
document writes: the backend reacts, or says clearly what is wrong."""

from __future__ import annotations

from datetime import UTC, datetime

from chat_docs import chat_experiment, chat_messages, trigger_logs
from experiment_state import errors, model_logs, participant
from raw_docs import PROGRESS_OPEN, human, stage, write_experiment

from functions.agents.progression import default_public_id
from shared.models import ParticipantStatus

QUESTION = {"id": "q", "kind": "text", "questionTitle": "Your view?"}
MINIMAL_AGENT = {
    "agentConfig": {"agentId": "", "modelSettings": {"apiType": "GEMINI", "modelName": "m"}}
}


def test_an_agent_added_by_hand_with_minimal_fields_starts(runtime, db):
    e = write_experiment(db, [stage("intro", "info"), stage("end", "info")])
    db.document(f"experiments/{e}/participants/hand-added-1").set(MINIMAL_AGENT)
    runtime.wait_until_idle(timeout=60)
    p = participant(db, e, "hand-added-1")
    assert p.current_status == ParticipantStatus.SUCCESS
    assert (p.private_id, p.current_cohort_id) == ("hand-added-1", "cohort-a")
    assert p.public_id.startswith("hand-add-") and p.public_id == default_public_id("hand-added-1")
    assert set(p.timestamps.completed_stages) == {"intro", "end"}
    assert errors(db, e) == []


def test_a_minimal_agent_in_an_experiment_with_several_cohorts_is_told_which_field(runtime, db):
    e = write_experiment(db, [stage("intro", "info")], cohorts=("cohort-a", "cohort-b"))
    path = f"experiments/{e}/participants/hand-added-2"
    db.document(path).set(MINIMAL_AGENT)
    runtime.wait_until_idle(timeout=60)
    (record,) = errors(db, e)
    assert (record.document, record.field) == (path, "currentCohortId")
    assert "2 cohorts" in record.reason
    db.document(path).update({"currentCohortId": "cohort-b"})  # the fix resumes it
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, "hand-added-2").current_status == ParticipantStatus.SUCCESS


def test_an_edited_persona_prompt_is_used_by_the_next_call(runtime, db):
    locked = {**PROGRESS_OPEN, "minParticipants": 2}
    e = write_experiment(db, [stage("survey", "survey", questions=[QUESTION], progress=locked)])
    persona = f"experiments/{e}/agentParticipants/resident"
    db.document(persona).set({"id": "resident", "name": "Resident"})
    db.document(f"{persona}/prompts/survey").set(
        {"id": "survey", "type": "survey", "prompt": [{"type": "TEXT", "text": "ORIGINAL"}]}
    )
    config = {"agentId": "resident", "modelSettings": {"apiType": "GEMINI", "modelName": "m"}}
    db.document(f"experiments/{e}/participants/a1").set({**MINIMAL_AGENT, "agentConfig": config})
    runtime.wait_until_idle(timeout=60)  # waiting: the stage is locked
    assert model_logs(db, e) == []
    db.document(f"{persona}/prompts/survey").update(
        {"prompt": [{"type": "TEXT", "text": "EDITED in the console"}]}
    )
    db.document(f"experiments/{e}/cohorts/cohort-a").update({"stageUnlockMap": {"survey": True}})
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, "a1").current_status == ParticipantStatus.SUCCESS
    (log,) = model_logs(db, e)
    assert "EDITED in the console" in log.prompt and "ORIGINAL" not in log.prompt


def _say(db, e, pid, message_id, text):
    db.document(f"experiments/{e}/cohorts/cohort-a/publicStageData/chat/chats/{message_id}").set(
        {
            "id": message_id,
            "type": "participant",
            "message": text,
            "senderId": pid,
            "timestamp": datetime.now(UTC),
            "profile": {"name": "Hu"},
        }
    )


def test_a_paused_mediator_goes_silent(runtime, db):
    e = chat_experiment(db)
    db.document(f"experiments/{e}/cohorts/cohort-a").update({"stageUnlockMap": {"chat": True}})
    pid = human(db, e, "chat")
    runtime.wait_until_idle(timeout=60)  # the mediator's opening
    _say(db, e, pid, "h1", "Hello?")
    runtime.wait_until_idle(timeout=60)
    assert "h1-mediator" in trigger_logs(db, e)  # active: it answers
    db.document(f"experiments/{e}/mediators/med-1").update({"currentStatus": "paused"})
    calls = len(model_logs(db, e))
    _say(db, e, pid, "h2", "Anyone there?")
    runtime.wait_until_idle(timeout=60)
    assert chat_messages(db, e)[-1]["id"] == "h2"
    assert "h2-mediator" not in trigger_logs(db, e)
    assert len(model_logs(db, e)) == calls  # not even a model call
