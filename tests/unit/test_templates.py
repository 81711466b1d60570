"""Bundled templates validate against Deliberate Lab's schema and turn into the right documents."""

import copy
import json
from pathlib import Path

import pytest

from shared.stages.unlock import initial_unlock_map
from shared.templates import (
    TemplateError,
    initial_public_data,
    persona_documents,
    template_stages,
    validate_template,
)

TEMPLATES = sorted((Path(__file__).resolve().parents[2] / "templates").glob("*.json"))


def test_at_least_two_templates_are_bundled():
    assert len(TEMPLATES) >= 2


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_bundled_template_is_valid_and_parses(path):
    template = json.loads(path.read_text())
    validate_template(template)
    stages = template_stages(template)
    assert [s.id for s in stages] == template["experiment"]["stageIds"]


def test_schema_violations_are_reported_with_their_path():
    template = json.loads(TEMPLATES[0].read_text())
    broken = copy.deepcopy(template)
    del broken["stageConfigs"][0]["descriptions"]["helpText"]
    broken["experiment"]["versionId"] = "nineteen"
    with pytest.raises(TemplateError) as info:
        validate_template(broken)
    assert "experiment/versionId" in str(info.value)


def test_cohort_setup_matches_deliberate_lab():
    template = json.loads((TEMPLATES[0].parent / "group_decision_locked.json").read_text())
    stages = template_stages(template)
    unlocked = initial_unlock_map(stages)
    for stage in stages:
        expected = (
            stage.progress.min_participants == 0 and not stage.progress.wait_for_all_participants
        )
        assert unlocked.get(stage.id, False) == expected
    assert any(not v for v in [unlocked.get(s.id, False) for s in stages])
    kinds = {d["kind"] for d in initial_public_data(stages)}
    assert kinds == {s.kind for s in stages} & {
        "survey",
        "ranking",
        "chat",
        "role",
        "assetAllocation",
    }


def test_persona_defaults_follow_the_list_they_are_in():
    template = {
        "agentParticipants": [{"persona": {"id": "p", "name": "P"}, "promptMap": {}}],
        "agentMediators": [{"persona": {"id": "m", "name": "M"}, "promptMap": {}}],
    }
    docs = {pid: doc for _, pid, doc in persona_documents(template)}
    assert docs["p"]["type"] == "participant" and docs["p"]["isDefaultAddToCohort"] is False
    assert docs["m"]["type"] == "mediator" and docs["m"]["isDefaultAddToCohort"] is True


def test_a_stage_listed_twice_is_refused_at_load_naming_it():
    template = json.loads(TEMPLATES[0].read_text())
    cycle = copy.deepcopy(template)
    ids = cycle["experiment"]["stageIds"]
    cycle["experiment"]["stageIds"] = [*ids, ids[0]]  # tos, info, ..., tos: a cycle
    with pytest.raises(TemplateError, match=f"experiment/stageIds: stage '{ids[0]}' is listed"):
        validate_template(cycle)
    twice = copy.deepcopy(template)
    twice["stageConfigs"].append(copy.deepcopy(twice["stageConfigs"][0]))
    with pytest.raises(TemplateError, match=r"stageConfigs: stage .* is listed twice"):
        validate_template(twice)
