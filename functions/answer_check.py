"""A participant's answer checked against its stage before it becomes public data.

The security rules check a client's answer where they can see the stage (the first ten
questions, options and items); the console and admin clients bypass them, and a ranking of
participants needs the cohort, which rules cannot list. An answer mirrored into public data is
research data and, for a ranking, decides the winner, so an invalid one is refused here with an
error record naming the field (what an agent's answer meets in shared/stages) instead.
"""

from __future__ import annotations

from google.cloud import firestore

from functions import store
from shared.models import (
    DocumentError,
    ParticipantProfile,
    RankingStage,
    RankingStageAnswer,
    SurveyAnswer,
    SurveyStage,
    SurveyStageAnswer,
)
from shared.stages.base import AnswerValidationError
from shared.stages.survey import parse_answer

VALUE_FIELDS = {"text": "answer", "check": "isChecked", "mc": "choiceId", "scale": "value"}
"""The field holding an answer's value, by answer kind (Deliberate Lab's names)."""


def check_survey(document: str, stage: SurveyStage, answer: SurveyStageAnswer) -> None:
    """DocumentError for the first answer that is not a valid answer to a question of the stage."""
    questions = {q.id: q for q in stage.questions}
    for question_id, given in answer.answer_map.items():
        where = f"answerMap.{question_id}"
        question = questions.get(question_id)
        if question is None:
            raise DocumentError(document, where, f"stage {stage.id} has no such question")
        if given.kind != question.kind or given.id != question_id:
            reason = f"must be a {question.kind} answer with id '{question_id}'"
            raise DocumentError(document, where, reason)
        try:
            parse_answer(question, _value(given), f"the answer to '{question_id}'")
        except AnswerValidationError as error:
            field = f"{where}.{VALUE_FIELDS[given.kind]}"
            raise DocumentError(document, field, str(error)) from None


def _value(answer: SurveyAnswer) -> object:
    return answer.model_dump(by_alias=True)[VALUE_FIELDS[answer.kind]]


def check_ranking(
    document: str,
    experiment_id: str,
    stage: RankingStage,
    participant: ParticipantProfile,
    answer: RankingStageAnswer,
) -> None:
    """DocumentError for an id ranked twice or not rankable: not one of the stage's items, or
    not a participant of the cohort (nor the participant itself unless self-voting is on)."""
    allowed = _candidates(experiment_id, stage, participant)
    seen: set[str] = set()
    for index, ranked in enumerate(answer.ranking_list):
        if ranked not in allowed:
            reason = f"'{ranked}' is not one of the {stage.ranking_type} ranked at stage {stage.id}"
            raise DocumentError(document, f"rankingList[{index}]", reason)
        if ranked in seen:
            raise DocumentError(document, f"rankingList[{index}]", f"'{ranked}' is ranked twice")
        seen.add(ranked)


def _candidates(
    experiment_id: str, stage: RankingStage, participant: ParticipantProfile
) -> set[str]:
    if stage.ranking_type == "items":
        return {item.id for item in stage.ranking_items}
    query = store.participants(experiment_id).where(
        filter=firestore.FieldFilter("currentCohortId", "==", participant.current_cohort_id)
    )
    snaps = query.select(["publicId"]).get()
    people = {str((snap.to_dict() or {}).get("publicId")) for snap in snaps}
    return people if stage.enable_self_voting else people - {participant.public_id}
