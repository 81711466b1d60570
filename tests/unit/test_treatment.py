"""Deliberate Lab's reserved treatment variables (PR #1171), as shared/treatment.py reads them."""

from __future__ import annotations

import json

import pytest

from shared import treatment
from shared.models import parse_stage
from shared.treatment import Treatment, TreatmentError

TREATMENT = {
    "treatmentName": "groupB",
    "_isObserver": True,
    "_numOtherAgents": 4,
    "_swapMediator": "",
    "_hasRepresentative": True,
    "displayName": "Group B",
    "_skipPrivateChats": False,
    "_numInactivePersonas": 0,
}
TOPIC = {
    "topicName": "Favorite books",
    "priorities": [
        "Fiction: Novels and short stories.",
        "Nonfiction: Essays and biographies.",
    ],
}


def test_match_hash_is_the_prs_cross_language_anchor() -> None:
    """The hex Deliberate Lab's persona_bank.utils.test.ts asserts for the same fixture: a
    persona generated for a condition there is found here."""
    expected = "ba04b332f5b23e57a0021c0d4849c3862eccaafeaacf522f92c1e0e18acee1a4"
    assert treatment.match_hash({"treatment": TREATMENT, "topic": TOPIC}) == expected
    reordered = {
        "topic": dict(reversed(TOPIC.items())),
        "treatment": dict(reversed(TREATMENT.items())),
    }
    assert treatment.match_hash(reordered) == expected
    tweaked = {**TOPIC, "priorities": [TOPIC["priorities"][1], TOPIC["priorities"][0]]}
    assert treatment.match_hash({"treatment": TREATMENT, "topic": tweaked}) != expected


def test_canonical_is_compact_sorted_json_with_javascript_numbers() -> None:
    assert treatment.canonical({"z": {"y": 2, "x": 1}, "a": [True, None]}) == (
        '{"a":[true,null],"z":{"x":1,"y":2}}'
    )
    assert treatment.canonical([4.0, 0.5, "é"]) == '[4,0.5,"é"]'


def test_round_variables_index_arrays_and_drop_the_rest() -> None:
    variables = {
        "treatment": json.dumps([{"a": 1}, {"a": 2}, {"a": 3}]),
        "topic": json.dumps([{"t": "x"}, {"t": "y"}, {"t": "z"}]),
        "plain": "not-json",
        "count": "5",
    }
    assert treatment.round_variables(variables, 1) == {"treatment": {"a": 2}, "topic": {"t": "y"}}
    assert treatment.round_variables({"treatment": json.dumps([{"a": 1}])}, 5) == {}


def test_hoisted_round_resets_what_the_scheme_uses_and_keeps_the_rest() -> None:
    rounds = [{"_isObserver": True, "_hasRepresentative": True}, {"treatmentName": "plain"}]
    variables = {"treatment": json.dumps(rounds)}
    first = treatment.hoisted(variables, 0, Treatment())
    assert first.represented and first.swap_mediator == ""
    # round 1 omits the keys: they are reset, not inherited from round 0
    assert treatment.hoisted(variables, 1, first) == Treatment()
    # a key the variables never use keeps the document's value (set by hand)
    by_hand = Treatment(swap_mediator="Skeptic")
    assert treatment.hoisted(variables, 1, by_hand).swap_mediator == "Skeptic"


def test_hoisted_reads_the_expanded_form_nested_keys_and_coerces() -> None:
    variables = {
        "treatment_1": json.dumps({"meta": {"_isObserver": "true"}, "_numOtherAgents": "2"}),
        "treatment_2": json.dumps({"_isObserver": "yes", "_swapMediator": 7}),
    }
    assert treatment.hoisted(variables, 0, Treatment()) == Treatment(
        is_observer=True, num_other_agents=2
    )
    assert treatment.hoisted(variables, 1, Treatment()) == Treatment(swap_mediator="7")


@pytest.mark.parametrize("bad", ["many", -1, 1.5, 1000])
def test_a_count_that_cannot_be_used_names_its_variable(bad: object) -> None:
    variables = {"cond": json.dumps({"_numInactivePersonas": bad})}
    with pytest.raises(TreatmentError) as caught:
        treatment.hoisted(variables, 0, Treatment())
    assert caught.value.variable == "cond"


def _stages(*kinds: tuple[str, str, int | None]) -> list:
    out = []
    for stage_id, kind, index in kinds:
        data = {"id": stage_id, "kind": kind, "name": stage_id}
        if index is not None:
            data["treatmentIndex"] = index
        out.append(parse_stage(stage_id, data))
    return out


def test_private_chats_are_skipped_per_round_through_the_following_transfer() -> None:
    stages = _stages(
        ("intro", "info", None),
        ("pc1", "privateChat", None),
        ("t1", "transfer", 0),
        ("chat1", "chat", None),
        ("pc2", "privateChat", None),
        ("t2", "transfer", 1),
        ("chat2", "chat", None),
        ("pc3", "privateChat", None),
    )
    variables = {
        "treatment": json.dumps([{"_skipPrivateChats": True}, {"_skipPrivateChats": False}])
    }
    assert treatment.skips_private_chat(variables, stages, "pc1")
    assert not treatment.skips_private_chat(variables, stages, "pc2")
    # pc3 has no following transfer: any round's flag counts (the PR's fallback)
    assert treatment.skips_private_chat(variables, stages, "pc3")
    assert [treatment.round_of(stages, s) for s in ("pc1", "chat1", "pc2", "chat2")] == [0, 0, 0, 1]


def test_stripped_variables_keep_content_without_the_treatment() -> None:
    variables = {"treatment": json.dumps([TREATMENT]), "topic": json.dumps(TOPIC), "x": "plain"}
    out = treatment.stripped(variables)
    assert json.loads(out["treatment"]) == [{"treatmentName": "groupB", "displayName": "Group B"}]
    assert out["topic"] == variables["topic"] and out["x"] == "plain"


def test_select_to_claim_least_used_never_twice_by_one_claimant() -> None:
    bank = [
        {"id": "c", "usageCount": 2, "usedBy": []},
        {"id": "a", "usageCount": 0, "usedBy": ["pid"]},
        {"id": "b", "usageCount": 1, "usedBy": []},
    ]
    assert treatment.select_to_claim(bank, "pid") == "b"
    assert treatment.select_to_claim(bank, "other") == "a"
    assert treatment.select_to_claim([{"id": "a", "usedBy": ["pid"]}], "pid") is None


def test_the_bundled_template_names_its_rounds_through_its_transfers() -> None:
    """templates/treatment_roles.json: validates (with the PR's treatmentIndex), each private
    chat belongs to the round of the transfer after it, each group chat to the one before."""
    from pathlib import Path

    from shared.templates import template_stages, validate_template

    path = Path(__file__).resolve().parents[2] / "templates" / "treatment_roles.json"
    template = json.loads(path.read_text())
    validate_template(template)
    stages = template_stages(template)
    assert [treatment.private_chat_round(stages, s) for s in ("interview1", "interview2")] == [0, 1]
    assert [treatment.round_of(stages, s) for s in ("discussion1", "discussion2")] == [0, 1]
    (config,) = [c for c in template["experiment"]["variableConfigs"] if c["id"] == "treatment"]
    variables = {"treatment": json.dumps([json.loads(v) for v in config["values"]])}
    # the "direct" round skips its interview, the represented one does not
    direct = [json.loads(v)["_skipPrivateChats"] for v in config["values"]].index(True)
    assert treatment.skips_private_chat(variables, stages, ("interview1", "interview2")[direct])
    assert not treatment.skips_private_chat(
        variables, stages, ("interview1", "interview2")[1 - direct]
    )
