import pytest

from shared import paths


def test_match_extracts_params_and_rejects_other_paths():
    assert paths.match(paths.STAGE_DATA, "experiments/e/participants/p/stageData/s") == {
        "experimentId": "e",
        "participantId": "p",
        "stageId": "s",
    }
    assert paths.match(paths.STAGE_DATA, "experiments/e/participants/p") is None
    assert paths.match(paths.PARTICIPANT, "experiments/e/cohorts/p") is None


def test_build_refuses_empty_or_nested_ids():
    assert paths.build(paths.COHORT, experimentId="e", cohortId="c") == "experiments/e/cohorts/c"
    with pytest.raises(ValueError):
        paths.build(paths.COHORT, experimentId="e", cohortId="")
    with pytest.raises(ValueError):
        paths.build(paths.COHORT, experimentId="e", cohortId="a/b")
