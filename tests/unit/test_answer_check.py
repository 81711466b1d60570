"""A human's survey answer checked against its stage before it is mirrored."""

from __future__ import annotations

from typing import Any

import pytest

from functions.answer_check import check_survey
from shared.models import DocumentError, SurveyStage, SurveyStageAnswer

DOC = "experiments/e/participants/p/stageData/s"
STAGE = SurveyStage.model_validate(
    {
        "id": "s",
        "questions": [
            {"id": "t", "kind": "text", "maxCharCount": 5},
            {"id": "c", "kind": "check"},
            {"id": "m", "kind": "mc", "options": [{"id": "a"}, {"id": "b"}]},
            {"id": "n", "kind": "scale", "lowerValue": 1, "upperValue": 5},
        ],
    }
)


def answer(**answers: dict[str, Any]) -> SurveyStageAnswer:
    kinds = {"t": "text", "c": "check", "m": "mc", "n": "scale"}
    answer_map = {k: {"id": k, "kind": kinds.get(k, "text"), **v} for k, v in answers.items()}
    return SurveyStageAnswer.model_validate({"id": "s", "answerMap": answer_map})


def test_valid_answers_at_the_bounds_pass() -> None:
    check_survey(DOC, STAGE, answer(t={"answer": "five!"}, c={"isChecked": False}))
    check_survey(DOC, STAGE, answer(m={"choiceId": "b"}, n={"value": 1}))
    check_survey(DOC, STAGE, answer(n={"value": 5}))


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"x": {"answer": "hi"}}, "answerMap.x"),  # an invented question
        ({"n": {"value": 999}}, "answerMap.n.value"),
        ({"n": {"value": 0}}, "answerMap.n.value"),
        ({"m": {"choiceId": "z"}}, "answerMap.m.choiceId"),
        ({"t": {"answer": "sixsix"}}, "answerMap.t.answer"),
        ({"t": {"kind": "check", "isChecked": True}}, "answerMap.t"),  # the question's kind
        ({"n": {"id": "m", "value": 3}}, "answerMap.n"),  # another question's id
    ],
)
def test_an_invalid_answer_names_its_field(given: dict[str, Any], field: str) -> None:
    with pytest.raises(DocumentError) as raised:
        check_survey(DOC, STAGE, answer(**given))
    assert (raised.value.document, raised.value.field) == (DOC, field)
