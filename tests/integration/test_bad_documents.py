"""Malformed documents edited in the console: a clear error record, no crash loop or retry storm."""

from __future__ import annotations

import pytest
from chat_docs import add_mediator, chat_experiment
from experiment_state import doc, errors, participant
from raw_docs import agent, stage, write_experiment

from shared.models import ParticipantStatus

QUESTION = {"id": "q", "kind": "check", "questionTitle": "OK?", "isRequired": False}


def _one_error(db, e):
    records = errors(db, e)
    assert len(records) == 1, records
    return records[0]


def _no_storm(runtime, budget=12):
    """Each bad document costs a bounded number of deliveries, none of them failures."""
    participant_events = [d for d in runtime.deliveries if d.function.startswith("onParticipant")]
    assert len(participant_events) <= budget
    assert not [d for d in runtime.deliveries if d.outcome == "error"]


def test_missing_stage_document(runtime, db):
    e = write_experiment(db, [stage("intro", "info")], stage_ids=["intro", "ghost", "end"])
    pid = agent(db, e, "intro")
    runtime.wait_until_idle(timeout=60)
    record = _one_error(db, e)
    assert record.document == f"experiments/{e}/stages/ghost"
    assert "does not exist" in record.reason
    assert participant(db, e, pid).current_stage_id == "ghost"
    _no_storm(runtime)


def test_wrong_field_type_in_a_stage(runtime, db):
    e = write_experiment(
        db, [stage("intro", "info"), stage("survey", "survey", questions="q1, q2")]
    )
    agent(db, e, "intro")
    runtime.wait_until_idle(timeout=60)
    record = _one_error(db, e)
    assert (record.document, record.field) == (f"experiments/{e}/stages/survey", "questions")
    assert "valid list" in record.reason
    _no_storm(runtime)


def test_wrong_field_type_in_a_participant(runtime, db):
    e = write_experiment(db, [stage("intro", "info")])
    pid = agent(db, e, "intro", timestamps="yesterday")
    runtime.wait_until_idle(timeout=60)
    record = _one_error(db, e)
    assert (record.document, record.field) == (f"experiments/{e}/participants/{pid}", "timestamps")
    _no_storm(runtime)


def test_unknown_stage_kind_is_reported_and_the_agent_advances(runtime, db):
    e = write_experiment(db, [stage("odd", "mystery"), stage("end", "info")])
    pid = agent(db, e, "odd")
    runtime.wait_until_idle(timeout=60)
    record = _one_error(db, e)
    assert (record.document, record.field, record.severity) == (
        f"experiments/{e}/stages/odd",
        "kind",
        "warning",
    )
    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS


def test_participant_pointing_at_a_missing_cohort(runtime, db):
    e = write_experiment(db, [stage("intro", "info")])
    pid = agent(db, e, "intro", cohort="no-such-cohort")
    runtime.wait_until_idle(timeout=60)
    record = _one_error(db, e)
    assert (record.document, record.field) == (
        f"experiments/{e}/participants/{pid}",
        "currentCohortId",
    )
    assert "no-such-cohort" in record.reason
    _no_storm(runtime)


def test_stage_not_in_the_experiment(runtime, db):
    e = write_experiment(db, [stage("intro", "info")])
    pid = agent(db, e, "elsewhere")
    runtime.wait_until_idle(timeout=60)
    record = _one_error(db, e)
    assert (record.document, record.field) == (
        f"experiments/{e}/participants/{pid}",
        "currentStageId",
    )


@pytest.mark.parametrize(
    ("api_type", "field", "reason"),
    [
        ("BANANA", "agentConfig.modelSettings.apiType", "'BANANA'"),
        ("CLAUDE", "agentConfig.modelSettings", "no Claude API key"),
    ],
)
def test_model_without_a_provider_or_its_key(runtime, db, monkeypatch, api_type, field, reason):
    monkeypatch.delenv("DLAB_MODEL_OVERRIDE")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    e = write_experiment(db, [stage("survey", "survey", questions=[QUESTION])])
    pid = agent(db, e, "survey", api_type=api_type)
    runtime.wait_until_idle(timeout=60)
    record = _one_error(db, e)
    assert record.field == field and reason in record.reason
    assert doc(db, f"experiments/{e}/participants/{pid}")["currentStageId"] == "survey"
    _no_storm(runtime)


def test_repeated_delivery_updates_one_error_record(runtime, db):
    e = write_experiment(db, [stage("intro", "info")])
    pid = agent(db, e, "intro", cohort="gone")
    runtime.wait_until_idle(timeout=60)
    before = _one_error(db, e).occurrences
    db.document(f"experiments/{e}/participants/{pid}").update({"name": "touched"})
    runtime.wait_until_idle(timeout=60)
    assert _one_error(db, e).occurrences == before + 1
    blocked = doc(db, f"experiments/{e}/participants/{pid}")["agentBlockedOn"]
    assert blocked["document"] == f"experiments/{e}/cohorts/gone"


def test_fixing_the_bad_document_resumes_the_agent(runtime, db):
    e = write_experiment(db, [stage("intro", "info"), stage("survey", "survey", questions="oops")])
    pid = agent(db, e, "intro")
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, pid).current_stage_id == "survey"
    db.document(f"experiments/{e}/stages/survey").update({"questions": [QUESTION]})
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS


def test_documents_written_in_any_order(runtime, db):
    """Participants first, then the cohort, then the stages, then the experiment."""
    e = "exp-any-order"
    base = f"experiments/{e}"
    pid = agent(db, e, "intro")
    db.document(f"{base}/cohorts/cohort-a").set({"id": "cohort-a", "stageUnlockMap": {}})
    runtime.wait_until_idle(timeout=60)
    db.document(f"{base}/stages/intro").set(stage("intro", "info"))
    db.document(f"{base}/stages/survey").set(stage("survey", "survey", questions=[QUESTION]))
    runtime.wait_until_idle(timeout=60)
    db.document(base).set({"id": e, "stageIds": ["intro", "survey"]})
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS


# --- Bounded inputs (issue 11, item 5): a named error record, never a stall ---------------------


def _scale(low, high):
    return {
        "id": "rate",
        "kind": "scale",
        "questionTitle": "Rate",
        "lowerValue": low,
        "upperValue": high,
    }


def test_an_inverted_scale_is_named_and_fixing_it_resumes_the_agent(runtime, db):
    e = write_experiment(
        db, [stage("intro", "info"), stage("survey", "survey", questions=[_scale(7, 3)])]
    )
    pid = agent(db, e, "intro")
    runtime.wait_until_idle(timeout=60)
    record = _one_error(db, e)
    assert (record.document, record.field) == (
        f"experiments/{e}/stages/survey",
        "questions[0].upperValue",
    )
    assert "below lowerValue 7" in record.reason
    assert participant(db, e, pid).current_stage_id == "survey"
    _no_storm(runtime)
    db.document(f"experiments/{e}/stages/survey").update({"questions": [_scale(1, 5)]})
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("{{ range(10**9)|list }}", "range() of 1,000,000,000 items"),
        ("{{ 'a'*10**7 }}", "10,000,000 items"),
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "range() of 100,000 items",
        ),
    ],
)
def test_a_runaway_prompt_template_is_named_and_other_agents_go_on(runtime, db, template, why):
    e = write_experiment(
        db, [stage("survey", "survey", questions=[QUESTION]), stage("end", "info")]
    )
    persona = f"experiments/{e}/agentParticipants/odd"
    db.document(persona).set({"id": "odd", "name": "Odd"})
    db.document(f"{persona}/prompts/survey").set(
        {"id": "survey", "type": "survey", "prompt": [{"type": "TEXT", "text": template}]}
    )
    odd = agent(
        db, e, "survey", agentConfig={"agentId": "odd", "modelSettings": {"apiType": "SCRIPTED"}}
    )
    fine = agent(db, e, "survey", number=1)
    runtime.wait_until_idle(timeout=60)
    record = _one_error(db, e)
    assert (record.document, record.field) == (f"{persona}/prompts/survey", "prompt")
    assert "sandbox limit" in record.reason and why in record.reason
    assert participant(db, e, odd).current_stage_id == "survey"
    assert participant(db, e, fine).current_status == ParticipantStatus.SUCCESS
    _no_storm(runtime)


MEGABYTE = "N" * 1_000_000


@pytest.mark.parametrize("field", ["name", "agentConfig.promptContext"])
def test_a_megabyte_name_is_a_clear_error_not_a_stall(runtime, db, field):
    """Issue 28 row 6: the record names the participant's field, the agent is blocked on its
    own document, the other agents (whose prompts list it) go on, and the fix wakes it at once
    (no watchdog tick)."""
    e = write_experiment(
        db,
        [stage("rate", "surveyPerParticipant", questions=[QUESTION]), stage("end", "info")],
    )
    others = [agent(db, e, "rate", number=i) for i in (1, 2)]
    config = {
        "agentId": "",
        "promptContext": MEGABYTE,
        "modelSettings": {"apiType": "GEMINI", "modelName": "gemini-2.5-flash"},
    }
    bad = agent(
        db, e, "rate", **({"name": MEGABYTE} if field == "name" else {"agentConfig": config})
    )
    runtime.wait_until_idle(timeout=60)
    path = f"experiments/{e}/participants/{bad}"
    record = _one_error(db, e)
    assert (record.document, record.field) == (path, field)
    assert "over the 400,000 sent to a model" in record.reason
    assert doc(db, path)["agentBlockedOn"]["document"] == path
    assert participant(db, e, bad).current_stage_id == "rate"
    assert all(participant(db, e, p).current_status == ParticipantStatus.SUCCESS for p in others)
    _no_storm(runtime)
    db.document(path).update({field: "Fixed"})
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, bad).current_status == ParticipantStatus.SUCCESS


def test_an_oversized_stage_text_blocks_its_agents_on_the_stage_until_fixed(runtime, db):
    """Issue 28 row 6: one record naming the stage's field, every agent at the stage blocked
    on it, and the fix wakes them at once (no watchdog tick)."""
    survey = stage("survey", "survey", questions=[QUESTION])
    survey["descriptions"] = {**survey["descriptions"], "primaryText": MEGABYTE}
    e = write_experiment(db, [survey, stage("end", "info")])
    ids = [agent(db, e, "survey", number=i) for i in (0, 1)]
    runtime.wait_until_idle(timeout=60)
    where = f"experiments/{e}/stages/survey"
    record = _one_error(db, e)
    assert (record.document, record.field) == (where, "descriptions.primaryText")
    assert "over the 400,000 sent to a model" in record.reason
    for p in ids:
        assert doc(db, f"experiments/{e}/participants/{p}")["agentBlockedOn"]["document"] == where
    db.document(where).update({"descriptions.primaryText": "Rate it."})
    runtime.wait_until_idle(timeout=60)
    assert all(participant(db, e, p).current_status == ParticipantStatus.SUCCESS for p in ids)


@pytest.mark.parametrize(
    ("settings", "field"),
    [({"wordsPerMinute": -3}, "chatSettings.wordsPerMinute"), ("nope", "chatSettings")],
)
def test_a_bad_mediator_setting_is_named(runtime, db, settings, field):
    e = chat_experiment(db, mediator=False)
    add_mediator(db, e)
    prompt = f"experiments/{e}/agentMediators/host/prompts/chat"
    db.document(prompt).update({"chatSettings": settings})
    agent(db, e, "intro")
    runtime.wait_until_idle(timeout=60)
    records = [r for r in errors(db, e) if r.document == prompt]
    assert [r.field for r in records] == [field], errors(db, e)


@pytest.mark.parametrize(
    "stage_ids",
    [["tos", "info", "tos", "end"], ["tos", "info", "profile", "tos", "info", "end"]],
    ids=["listed-twice", "cycle"],
)
def test_a_stage_listed_twice_is_named_and_fixing_the_list_resumes_the_agent(
    runtime, db, stage_ids
):
    stages = [stage(s, "info") for s in dict.fromkeys(stage_ids)]
    e = write_experiment(db, stages, stage_ids=stage_ids)
    pid = agent(db, e, "tos")
    runtime.wait_until_idle(timeout=60)
    record = _one_error(db, e)
    assert (record.document, record.field) == (f"experiments/{e}", "stageIds")
    assert "'tos' is listed twice" in record.reason
    blocked = doc(db, f"experiments/{e}/participants/{pid}")["agentBlockedOn"]
    assert blocked["document"] == f"experiments/{e}"
    db.document(f"experiments/{e}").update({"stageIds": list(dict.fromkeys(stage_ids))})
    runtime.wait_until_idle(timeout=60)
    assert participant(db, e, pid).current_status == ParticipantStatus.SUCCESS


def test_agents_added_by_hand_with_ids_alike_get_public_ids_of_their_own(runtime, db):
    """Issue 28 row 4: two agents added in the console with only their agentConfig, their ids
    alike in their first 8 characters, got the same default publicId (per-participant answers
    are keyed by it)."""
    e = write_experiment(db, [stage("intro", "info"), stage("end", "info")])
    config = {"agentId": "", "modelSettings": {"apiType": "SCRIPTED", "modelName": "s"}}
    ids = ["zoeteam1-A", "zoeteam1-B"]
    for private_id in ids:
        db.document(f"experiments/{e}/participants/{private_id}").set({"agentConfig": config})
    runtime.wait_until_idle(timeout=60)
    public = [participant(db, e, p).public_id for p in ids]
    assert len(set(public)) == 2, public
    assert all(p.startswith("zoeteam1") for p in public)
    assert all(participant(db, e, p).current_status == ParticipantStatus.SUCCESS for p in ids)
