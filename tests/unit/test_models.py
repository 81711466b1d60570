"""Document models: Deliberate Lab field names, lenient defaults, errors that name the field."""

import pytest

from shared.models import (
    DocumentError,
    OtherStage,
    ParticipantProfile,
    ParticipantStatus,
    SurveyStage,
    parse_document,
    parse_stage,
)

STAGE_PATH = "experiments/e1/stages/s1"


def test_participant_round_trip_keeps_deliberate_lab_names_and_unknown_fields():
    data = {
        "privateId": "p1",
        "publicId": "cat-red-0001",
        "currentStatus": "ATTENTION_CHECK",
        "timestamps": {"acceptedTOS": {"seconds": 10, "nanoseconds": 0}, "readyStages": {}},
        "agentConfig": {"agentId": "a", "modelSettings": {"apiType": "SCRIPTED", "modelName": "m"}},
        "someFutureField": {"x": 1},
    }
    p = ParticipantProfile.model_validate(data)
    assert p.current_status == ParticipantStatus.ATTENTION_CHECK
    assert p.timestamps.accepted_tos is not None and p.timestamps.accepted_tos.timestamp() == 10
    out = p.to_firestore()
    assert out["someFutureField"] == {"x": 1}
    assert "acceptedTOS" in out["timestamps"]
    assert out["agentConfig"]["modelSettings"]["apiType"] == "SCRIPTED"
    assert isinstance(out["currentStatus"], str)


def test_stage_parsed_by_kind_and_unknown_kind_kept_as_is():
    survey = parse_stage(STAGE_PATH, {"id": "s1", "kind": "survey", "questions": []})
    assert isinstance(survey, SurveyStage)
    other = parse_stage(STAGE_PATH, {"id": "s1", "kind": "chip", "chips": [1, 2]})
    assert isinstance(other, OtherStage)
    assert other.to_firestore()["chips"] == [1, 2]


@pytest.mark.parametrize(
    ("data", "field", "reason"),
    [
        ({"id": "s1", "kind": "survey", "questions": "oops"}, "questions", "valid list"),
        (
            {
                "id": "s1",
                "kind": "survey",
                "questions": [{"id": "q", "kind": "scale", "lowerValue": "x"}],
            },
            "questions[0].lowerValue",
            "valid integer",
        ),
        (
            {"id": "s1", "kind": "survey", "questions": [{"id": "q", "kind": "mc", "options": []}]},
            "questions[0].options",
            "at least 1",
        ),
        ({"id": "s1", "kind": "ranking", "rankingType": "people"}, "rankingType", "'items'"),
        ({"kind": "info"}, "id", "Field required"),
    ],
)
def test_bad_stage_error_names_path_field_and_reason(data, field, reason):
    with pytest.raises(DocumentError) as info:
        parse_stage(STAGE_PATH, data)
    assert info.value.document == STAGE_PATH
    assert info.value.field == field
    assert reason in info.value.reason
    assert STAGE_PATH in str(info.value) and field in str(info.value)


def test_missing_document_is_a_document_error():
    with pytest.raises(DocumentError, match="does not exist"):
        parse_document(ParticipantProfile, "experiments/e/participants/p", None)
