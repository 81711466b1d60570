"""Deliberate Lab's treatment roles (PR #1171) on the emulators: treatment rounds and the
private chats a round skips, observers and their representatives, inactive personas, swapped
mediators, the persona bank."""

from __future__ import annotations

import json

from experiment_state import errors, participant, settle
from raw_docs import agent, human, move_human, stage, write_experiment

ROUNDS_STAGES = [
    stage("intro", "info"),
    stage("pc1", "privateChat"),
    stage("t1", "transfer", treatmentIndex=0),
    stage("pc2", "privateChat"),
    stage("t2", "transfer", treatmentIndex=1),
    stage("end", "info"),
]


def _rounds(*conditions: dict) -> dict[str, str]:
    return {
        "treatment": json.dumps(list(conditions)),
        "topic": json.dumps([{"t": "a"}, {"t": "b"}]),
    }


def test_a_round_skips_its_own_private_chat_and_not_the_others(runtime, db):
    """Within subjects: the round of a private chat is the following transfer's
    treatmentIndex; skipping round 0's private chat does not skip round 1's."""
    e = write_experiment(db, ROUNDS_STAGES, cohorts=("cohort-a", "cohort-b"))
    skip_first = agent(
        db,
        e,
        "intro",
        number=0,
        variableMap=_rounds({"_skipPrivateChats": True}, {"_skipPrivateChats": False}),
    )
    skip_second = agent(
        db,
        e,
        "intro",
        number=1,
        variableMap=_rounds({"_skipPrivateChats": False}, {"_skipPrivateChats": True}),
    )
    settle(
        runtime,
        lambda: (
            participant(db, e, skip_first).current_stage_id == "t1"
            and "pc1" in participant(db, e, skip_second).timestamps.ready_stages
        ),
    )
    first = participant(db, e, skip_first)
    assert "pc1" not in first.timestamps.ready_stages  # never reached, never current
    assert "pc1" not in first.timestamps.completed_stages
    # the experimenter transfers it: round 1 starts, whose private chat is not skipped
    db.document(f"experiments/{e}/participants/{skip_first}").update(
        {"transferCohortId": "cohort-b", "currentStatus": "TRANSFER_PENDING"}
    )
    settle(runtime, lambda: participant(db, e, skip_first).current_stage_id == "pc2")
    assert errors(db, e) == []


def test_the_treatment_is_hoisted_for_the_round_the_participant_is_in(runtime, db):
    """Round 0 before the first transfer naming an index, round 1 after t2; a key the next
    round omits is reset, not inherited."""
    e = write_experiment(db, ROUNDS_STAGES)
    hid = human(db, e, "intro")
    variables = _rounds(
        {"_isObserver": True, "_hasRepresentative": "true", "_swapMediator": "Skeptic"},
        {"treatmentName": "direct"},
    )
    db.document(f"experiments/{e}/participants/{hid}").update({"variableMap": variables})
    settle(runtime, lambda: participant(db, e, hid).is_observer is True)
    p = participant(db, e, hid)
    assert p.has_representative is True and p.swap_mediator == "Skeptic"
    move_human(db, e, hid, "end")  # past t2 (treatmentIndex 1)
    settle(runtime, lambda: participant(db, e, hid).is_observer is False)
    p = participant(db, e, hid)
    assert p.has_representative is False and p.swap_mediator == ""
    assert p.other_agent_generation == {"numOtherAgents": 0, "numInactivePersonas": 0}


def test_a_count_that_is_not_a_number_is_one_record_naming_the_variable(runtime, db):
    e = write_experiment(db, ROUNDS_STAGES)
    hid = human(db, e, "intro")
    db.document(f"experiments/{e}/participants/{hid}").update(
        {"variableMap": {"cond": json.dumps({"_numOtherAgents": "lots", "_isObserver": True})}}
    )
    settle(runtime, lambda: bool(errors(db, e)))
    (record,) = errors(db, e)
    assert record.field == "variableMap.cond" and "'lots' is not a number" in record.reason
    assert participant(db, e, hid).is_observer is None  # nothing hoisted from a bad treatment
