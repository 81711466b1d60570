"""Experiments written as raw documents, the way an experimenter edits them in the console.

Deliberately independent of the loader: plain dicts with Deliberate Lab's field names.
"""

from __future__ import annotations

import uuid
from typing import Any

from google.cloud import firestore

PROGRESS_OPEN = {
    "minParticipants": 0,
    "waitForAllParticipants": False,
    "showParticipantProgress": True,
}
TEXT = {"primaryText": "", "infoText": "", "helpText": ""}


def stage(stage_id: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": stage_id,
        "kind": kind,
        "name": stage_id,
        "descriptions": TEXT,
        "progress": PROGRESS_OPEN,
        **fields,
    }


def write_experiment(
    db: firestore.Client,
    stages: list[dict[str, Any]],
    *,
    stage_ids: list[str] | None = None,
    cohorts: tuple[str, ...] = ("cohort-a",),
    experiment_id: str = "",
) -> str:
    """The experiment's documents; ``experiment_id`` fixed where a test writes the same
    experiment twice (ids seed what the backend derives from them), else drawn."""
    experiment_id = experiment_id or "exp-" + uuid.uuid4().hex[:8]
    base = f"experiments/{experiment_id}"
    ids = stage_ids or [s["id"] for s in stages]
    db.document(base).set(
        {
            "id": experiment_id,
            "versionId": 19,
            "stageIds": ids,
            "metadata": {"name": "raw", "creator": "x@y.z"},
        }
    )
    for s in stages:
        db.document(f"{base}/stages/{s['id']}").set(s)
    unlocked = {
        s["id"]: True
        for s in stages
        if s["progress"]["minParticipants"] == 0 and not s["progress"]["waitForAllParticipants"]
    }
    for cohort in cohorts:
        db.document(f"{base}/cohorts/{cohort}").set({"id": cohort, "stageUnlockMap": unlocked})
    return experiment_id


def agent(
    db: firestore.Client,
    experiment_id: str,
    first_stage: str,
    *,
    cohort: str = "cohort-a",
    api_type: str = "GEMINI",
    number: int = 0,
    private_id: str = "",
    **fields: Any,
) -> str:
    """An agent participant; ``private_id`` fixed where a test needs the scripted model's
    answers fixed too (they are seeded by the asking agent's id), else drawn."""
    private_id = private_id or f"agent-{number}-{uuid.uuid4().hex[:6]}"
    db.document(f"experiments/{experiment_id}/participants/{private_id}").set(
        {
            "privateId": private_id,
            "publicId": f"agent-{number}",
            "currentStageId": first_stage,
            "currentCohortId": cohort,
            "currentStatus": "IN_PROGRESS",
            "timestamps": {"completedStages": {}, "readyStages": {}, "cohortTransfers": {}},
            "agentConfig": {
                "agentId": "",
                "promptContext": "A curious resident.",
                "modelSettings": {"apiType": api_type, "modelName": "gemini-2.5-flash"},
            },
            **fields,
        }
    )
    return private_id


def human(
    db: firestore.Client, experiment_id: str, first_stage: str, *, cohort: str = "cohort-a"
) -> str:
    private_id = "human-" + uuid.uuid4().hex[:6]
    stamp = firestore.SERVER_TIMESTAMP
    db.document(f"experiments/{experiment_id}/participants/{private_id}").set(
        {
            "privateId": private_id,
            "publicId": private_id,
            "name": "Hu",
            "currentStageId": first_stage,
            "currentCohortId": cohort,
            "currentStatus": "IN_PROGRESS",
            "agentConfig": None,
            "timestamps": {
                "startExperiment": stamp,
                "acceptedTOS": stamp,
                "completedStages": {},
                "readyStages": {first_stage: stamp},
                "cohortTransfers": {},
            },
        }
    )
    return private_id


def move_human(db: firestore.Client, experiment_id: str, private_id: str, to_stage: str) -> None:
    """What the participant's browser does on 'next stage'."""
    stamp = firestore.SERVER_TIMESTAMP
    doc = db.document(f"experiments/{experiment_id}/participants/{private_id}")
    current = doc.get().to_dict()["currentStageId"]
    doc.update(
        {
            "currentStageId": to_stage,
            f"timestamps.completedStages.`{current}`": stamp,
            f"timestamps.readyStages.`{to_stage}`": stamp,
        }
    )


SURVEY_QUESTIONS = [
    {"id": "why", "kind": "text", "questionTitle": "Why?", "minCharCount": 10, "maxCharCount": 80},
    {
        "id": "pick",
        "kind": "mc",
        "questionTitle": "Pick one",
        "options": [
            {"id": "a", "imageId": "", "text": "A"},
            {"id": "b", "imageId": "", "text": "B"},
        ],
    },
    {
        "id": "rate",
        "kind": "scale",
        "questionTitle": "Rate",
        "lowerValue": 1,
        "upperValue": 5,
        "lowerText": "low",
        "upperText": "high",
    },
]
"""A text, a multiple-choice and a scale question: a survey whose answer a provider must shape."""
