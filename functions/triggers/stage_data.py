"""Stage data trigger: mirror a participant's answer into the cohort's public stage data."""

from __future__ import annotations

import contextlib
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud.firestore_v1.field_path import FieldPath

from functions import answer_check, store, transactions
from functions._events import FirestoreEvent
from functions.chat import readiness
from functions.rooms import Room
from shared.models import (
    ChatStage,
    ParticipantProfile,
    PrivateChatStage,
    RankingPublicData,
    RankingStage,
    RankingStageAnswer,
    StageKind,
    SurveyStage,
    SurveyStageAnswer,
    parse_document,
)
from shared.stages.ranking_results import winner


def _field(*parts: str) -> str:
    return FieldPath(*parts).to_api_repr()


def on_stage_data_written(event: FirestoreEvent) -> None:
    if event.after is None:
        return
    experiment_id = event.params["experimentId"]
    participant = store.read(
        ParticipantProfile, store.participant_path(experiment_id, event.params["participantId"])
    )
    stage = store.read_stage(experiment_id, event.params["stageId"])
    if not participant.current_cohort_id or not participant.public_id:
        return
    public_path = store.public_stage_data_path(
        experiment_id, participant.current_cohort_id, stage.id
    )
    if isinstance(stage, SurveyStage):
        answer = parse_document(SurveyStageAnswer, event.document, event.after)
        answer_check.check_survey(event.document, stage, answer)
        _merge(
            public_path,
            stage.id,
            stage.kind,
            "participantAnswerMap",
            participant.public_id,
            answer.to_firestore()["answerMap"],
        )
    elif isinstance(stage, RankingStage):
        ranking = parse_document(RankingStageAnswer, event.document, event.after)
        answer_check.check_ranking(event.document, experiment_id, stage, participant, ranking)
        _mirror_ranking(public_path, stage, participant.public_id, ranking.ranking_list)
    elif isinstance(stage, ChatStage):
        readiness.mirror_thread_readiness(experiment_id, stage, participant, event.after)
    elif isinstance(stage, PrivateChatStage) and event.after.get("readyToEndChat") is True:
        # DL's updateParticipantReadyToEndChat: the participant (human or agent) moves on
        room = Room(experiment_id, participant.current_cohort_id, stage.id, participant.private_id)
        readiness.participant_ready(room, stage, participant, record=False)
    elif stage.kind == StageKind.ASSET_ALLOCATION and "allocation" in event.after:
        _merge(
            public_path,
            stage.id,
            stage.kind,
            "participantAllocations",
            participant.public_id,
            event.after["allocation"],
        )


def _merge(path: str, stage_id: str, kind: str, field: str, public_id: str, value: Any) -> None:
    """Set one participant's entry without touching the others' (safe under concurrency)."""
    doc = store.ref(path)

    def write() -> None:
        doc.set({"id": stage_id, "kind": kind}, merge=True)
        doc.update({_field(field, public_id): value})

    transactions.retry_contended(write)


def _mirror_ranking(path: str, stage: Any, public_id: str, ranking: list[str]) -> None:
    """The answer by field path, then the winner from a fresh read, written only if nothing
    changed since that read. A hundred rankings arriving at once then never contend (a
    transaction per answer did, and failed); whoever writes last recomputes from everything."""
    _merge(path, stage.id, stage.kind, "participantAnswerMap", public_id, ranking)
    if stage.strategy != "condorcet":
        return
    doc = store.ref(path)
    snap = doc.get()
    public = RankingPublicData.model_validate(snap.to_dict() or {"id": stage.id})
    best = winner(list(public.participant_answer_map.values()))
    if public.winner_id == best:
        return
    with contextlib.suppress(gexc.FailedPrecondition):
        # changed since our read: that later write's own recompute sees our answer too
        doc.update(
            RankingPublicData.fields(winner_id=best),
            option=store.db().write_option(last_update_time=snap.update_time),
        )
