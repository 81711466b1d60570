"""Stage answer specs with the scripted model: every generated reply is a valid answer, and
invalid replies are rejected with a message that says what is wrong."""

import json
import random
from pathlib import Path

import pytest

from shared.llm import ModelRequest
from shared.llm.json_output import parse_json_reply
from shared.llm.scripted import ScriptedModel, generate_value
from shared.models import (
    ParticipantProfile,
    ProfileBase,
    RankingStageAnswer,
    SurveyPerParticipantStageAnswer,
    SurveyStageAnswer,
    parse_stage,
)
from shared.stages import (
    ANSWER_SPECS,
    AgentAction,
    AnswerContext,
    AnswerValidationError,
    Peer,
    agent_action,
)
from shared.stages.ranking_results import winner

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = json.loads((ROOT / "templates" / "demo_all_stages.json").read_text())
STAGES = {s["id"]: parse_stage(f"stages/{s['id']}", s) for s in TEMPLATE["stageConfigs"]}
CTX = AnswerContext(
    participant=ParticipantProfile(private_id="p1", public_id="cat-red-0001", name="Ann"),
    peers=(Peer("dog-blue-0002", "Bo"), Peer("fox-gold-0003", "Cy")),
)
ANSWERED = [s for s in STAGES.values() if agent_action(s) == AgentAction.ANSWER]


def test_demo_template_needs_model_answers_for_the_four_kinds():
    assert sorted(s.kind for s in ANSWERED) == [
        "profile",
        "ranking",
        "survey",
        "surveyPerParticipant",
    ]


@pytest.mark.parametrize("stage", ANSWERED, ids=lambda s: s.kind)
def test_scripted_replies_are_valid_answers_for_many_seeds(stage):
    spec = ANSWER_SPECS[stage.kind]
    schema = spec.schema(stage, CTX)
    model = ScriptedModel()
    for seed in range(150):
        reply = model.generate(
            ModelRequest(prompt="p", response_schema=schema, model_name="m", seed=str(seed))
        )
        answer = spec.extract(stage, CTX, parse_json_reply(reply.text))
        assert answer is not None
        assert reply.usage.total_tokens > 0


def test_scripted_model_is_deterministic_per_seed():
    schema = ANSWER_SPECS["survey"].schema(STAGES["survey"], CTX)
    model = ScriptedModel()
    make = lambda seed: model.generate(ModelRequest("p", schema, "m", seed)).text  # noqa: E731
    assert make("a") == make("a")
    assert len({make(str(i)) for i in range(10)}) > 1


def test_survey_answer_shapes_and_bounds():
    stage = STAGES["survey"]
    samples = {"text": "A long enough answer.", "check": True}
    reply = {
        q.id: samples.get(
            q.kind, q.options[0].id if q.kind == "mc" else getattr(q, "lower_value", 0)
        )
        for q in stage.questions
    }
    answer = ANSWER_SPECS["survey"].extract(stage, CTX, reply)
    assert isinstance(answer, SurveyStageAnswer)
    assert set(answer.answer_map) == {q.id for q in stage.questions}
    scale = next(q for q in stage.questions if q.kind == "scale")
    with pytest.raises(
        AnswerValidationError, match=f"between {scale.lower_value} and {scale.upper_value}"
    ):
        ANSWER_SPECS["survey"].extract(stage, CTX, {**reply, scale.id: scale.upper_value + 1})
    mc = next(q for q in stage.questions if q.kind == "mc")
    with pytest.raises(AnswerValidationError, match="option ids"):
        ANSWER_SPECS["survey"].extract(stage, CTX, {**reply, mc.id: "nope"})
    text = next(q for q in stage.questions if q.kind == "text")
    with pytest.raises(AnswerValidationError, match="at least"):
        ANSWER_SPECS["survey"].extract(stage, CTX, {**reply, text.id: "short"})
    with pytest.raises(AnswerValidationError, match="missing"):
        ANSWER_SPECS["survey"].extract(stage, CTX, {})


def test_survey_per_participant_covers_every_peer_and_accepts_dl_list_form():
    stage = STAGES["surveyPerParticipant"]
    spec = ANSWER_SPECS[stage.kind]
    reply = spec.schema(stage, CTX)
    value = generate_value(random.Random(1), reply)
    answer = spec.extract(stage, CTX, value)
    assert isinstance(answer, SurveyPerParticipantStageAnswer)
    for per_person in answer.answer_map.values():
        assert set(per_person) == {"dog-blue-0002", "fox-gold-0003"}
    q = stage.questions[0]
    as_list = {**value, q.id: [{"participantId": k, "answer": v} for k, v in value[q.id].items()]}
    assert (
        spec.extract(stage, CTX, as_list).answer_map[q.id].keys() == answer.answer_map[q.id].keys()
    )
    del value[q.id]["dog-blue-0002"]
    with pytest.raises(AnswerValidationError, match="dog-blue-0002"):
        spec.extract(stage, CTX, value)


def test_ranking_must_be_a_permutation():
    stage = STAGES["ranking"]
    ids = [i.id for i in stage.ranking_items]
    spec = ANSWER_SPECS["ranking"]
    answer = spec.extract(stage, CTX, list(reversed(ids)))
    assert isinstance(answer, RankingStageAnswer) and answer.ranking_list == list(reversed(ids))
    with pytest.raises(AnswerValidationError, match="repeated"):
        spec.extract(stage, CTX, [ids[0]] * len(ids))
    with pytest.raises(AnswerValidationError, match="missing"):
        spec.extract(stage, CTX, ids[:-1])


def test_profile_answer():
    stage = STAGES["profile"]
    profile = ANSWER_SPECS["profile"].extract(
        stage, CTX, {"name": " Ann ", "emoji": "🦊", "pronouns": "she/her"}
    )
    assert profile == ProfileBase(name="Ann", avatar="🦊", pronouns="she/her")
    with pytest.raises(AnswerValidationError, match="'emoji'"):
        ANSWER_SPECS["profile"].extract(stage, CTX, {"name": "Ann", "pronouns": "she/her"})


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Sure! Here it is: ["x", "y"] hope it helps', ["x", "y"]),
        ('{"a": [1, 2,], "b": 3,}', {"a": [1, 2], "b": 3}),
        ('```\n{"a": 1,}\n```', {"a": 1}),
    ],
)
def test_json_reply_parsing(text, value):
    assert parse_json_reply(text) == value


@pytest.mark.parametrize("text", ["", "no json here", "{broken"])
def test_json_reply_parsing_errors_say_so(text):
    with pytest.raises(AnswerValidationError, match=r"JSON|empty"):
        parse_json_reply(text)


def test_condorcet_winner_and_fallback():
    assert winner([["a", "b", "c"], ["a", "c", "b"], ["b", "a", "c"]]) == "a"
    # a cycle: no Condorcet winner, stable fallback
    cycle = [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    assert winner(cycle) == winner(list(reversed(cycle))) == "a"
    assert winner([]) == ""


def test_schema_check_names_the_place():
    from shared.llm.json_output import check_schema

    schema = ANSWER_SPECS["survey"].schema(STAGES["survey"], CTX)
    scale = next(q for q in STAGES["survey"].questions if q.kind == "scale")
    valid = generate_value(random.Random(3), schema)
    check_schema(valid, schema)
    with pytest.raises(AnswerValidationError, match=f"{scale.id}: .*maximum"):
        check_schema({**valid, scale.id: 99}, schema)
    check_schema(None, None)  # no schema: nothing to check
