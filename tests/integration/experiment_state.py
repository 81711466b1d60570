"""Reading an experiment's state back from Firestore, for assertions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.cloud import firestore

from shared.models import (
    ErrorRecord,
    ModelLogEntry,
    ParticipantProfile,
    ParticipantStatus,
    RankingStageAnswer,
    SurveyPerParticipantStageAnswer,
    SurveyStageAnswer,
)

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
ANSWER_MODELS = {
    "survey": SurveyStageAnswer,
    "surveyPerParticipant": SurveyPerParticipantStageAnswer,
    "ranking": RankingStageAnswer,
}
"""The stage kinds whose answer an agent writes to its stageData, and the answer's model."""


def template(name: str) -> dict[str, Any]:
    return json.loads((TEMPLATES / name).read_text())


def participants(db: firestore.Client, experiment_id: str) -> list[ParticipantProfile]:
    col = db.collection(f"experiments/{experiment_id}/participants")
    return [ParticipantProfile.model_validate(s.to_dict()) for s in col.get()]


def participant(db: firestore.Client, experiment_id: str, private_id: str) -> ParticipantProfile:
    snap = db.document(f"experiments/{experiment_id}/participants/{private_id}").get()
    return ParticipantProfile.model_validate(snap.to_dict())


def errors(db: firestore.Client, experiment_id: str) -> list[ErrorRecord]:
    return [
        ErrorRecord.model_validate(s.to_dict())
        for s in db.collection(f"experiments/{experiment_id}/errors").get()
    ]


def model_logs(db: firestore.Client, experiment_id: str) -> list[ModelLogEntry]:
    return [
        ModelLogEntry.model_validate(s.to_dict())
        for s in db.collection(f"experiments/{experiment_id}/logs").get()
    ]


def doc(db: firestore.Client, path: str) -> dict[str, Any] | None:
    snap = db.document(path).get()
    return snap.to_dict() if snap.exists else None


def settle(runtime: Any, done: Any, rounds: int = 40, timeout: float = 120) -> None:
    """Run until ``done()``: wait for idle, then tick the scheduled functions (the watchdog), as
    time passing would in production. Fails with the last deliveries if it never gets there."""
    for _ in range(rounds):
        runtime.wait_until_idle(timeout=timeout)
        if done():
            return
        runtime.tick()
    raise AssertionError("not settled:\n" + runtime.deliveries_table(last=15))


def demo_without_chats() -> dict[str, Any]:
    """The demo template's non-chat stages: a race-elected chat depends on timing by design, so
    a test that compares two runs leaves it out."""
    demo = template("demo_all_stages.json")
    chats = {s["id"] for s in demo["stageConfigs"] if s["kind"] in ("chat", "privateChat")}
    experiment = {**demo["experiment"]}
    experiment["stageIds"] = [s for s in experiment["stageIds"] if s not in chats]
    stages = [s for s in demo["stageConfigs"] if s["id"] not in chats]
    return {**demo, "experiment": experiment, "stageConfigs": stages}


def all_succeeded(db: firestore.Client, experiment_id: str) -> Any:
    """A ``settle`` condition: every participant of the experiment reached SUCCESS."""
    return lambda: all(
        p.current_status == ParticipantStatus.SUCCESS for p in participants(db, experiment_id)
    )
