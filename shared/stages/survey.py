"""Survey and survey-per-participant stages: reply schemas, prompt display, answer extraction."""

from __future__ import annotations

from typing import Any

from shared.models import (
    CheckAnswer,
    CheckQuestion,
    MultipleChoiceAnswer,
    MultipleChoiceQuestion,
    ScaleAnswer,
    ScaleQuestion,
    SurveyAnswer,
    SurveyPerParticipantStage,
    SurveyPerParticipantStageAnswer,
    SurveyQuestion,
    SurveyStage,
    SurveyStageAnswer,
    TextAnswer,
    TextQuestion,
)
from shared.stages.base import AnswerContext, AnswerValidationError


def question_schema(question: SurveyQuestion) -> dict[str, Any]:
    """JSON Schema for one answer, with the bounds Deliberate Lab only puts in descriptions."""
    title = question.question_title
    if isinstance(question, TextQuestion):
        schema: dict[str, Any] = {"type": "string", "description": title}
        if question.min_char_count:
            schema["minLength"] = question.min_char_count
        if question.max_char_count:
            schema["maxLength"] = question.max_char_count
        return schema
    if isinstance(question, CheckQuestion):
        return {"type": "boolean", "description": title}
    if isinstance(question, MultipleChoiceQuestion):
        return {"type": "string", "description": title, "enum": [o.id for o in question.options]}
    return {
        "type": "integer",
        "description": f"{title} (from {question.lower_value} to {question.upper_value})",
        "minimum": question.lower_value,
        "maximum": question.upper_value,
    }


def _object(properties: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


def _text_answer(question: TextQuestion, raw: Any, where: str) -> TextAnswer:
    if not isinstance(raw, str) or not raw.strip():
        raise AnswerValidationError(f"{where} must be a non-empty string")
    text = raw.strip()
    if question.min_char_count and len(text) < question.min_char_count:
        raise AnswerValidationError(
            f"{where} has {len(text)} characters; at least {question.min_char_count} are needed"
        )
    if question.max_char_count and len(text) > question.max_char_count:
        raise AnswerValidationError(
            f"{where} has {len(text)} characters; at most {question.max_char_count} are allowed"
        )
    return TextAnswer(id=question.id, answer=text)


def _check_answer(question: CheckQuestion, raw: Any, where: str) -> CheckAnswer:
    if not isinstance(raw, bool):
        raise AnswerValidationError(f"{where} must be true or false")
    return CheckAnswer(id=question.id, is_checked=raw)


def _choice_answer(question: MultipleChoiceQuestion, raw: Any, where: str) -> MultipleChoiceAnswer:
    ids = [o.id for o in question.options]
    if raw not in ids:
        raise AnswerValidationError(f"{where} must be one of the option ids {ids}, got {raw!r}")
    return MultipleChoiceAnswer(id=question.id, choice_id=raw)


def _scale_answer(question: ScaleQuestion, raw: Any, where: str) -> ScaleAnswer:
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise AnswerValidationError(f"{where} must be a whole number, got {raw!r}")
    if not question.lower_value <= raw <= question.upper_value:
        raise AnswerValidationError(
            f"{where} must be between {question.lower_value} and {question.upper_value}, got {raw}"
        )
    return ScaleAnswer(id=question.id, value=raw)


def parse_answer(question: SurveyQuestion, raw: Any, where: str) -> SurveyAnswer:
    """A typed answer for ``question``; AnswerValidationError naming ``where`` if invalid."""
    if isinstance(question, TextQuestion):
        return _text_answer(question, raw, where)
    if isinstance(question, CheckQuestion):
        return _check_answer(question, raw, where)
    if isinstance(question, MultipleChoiceQuestion):
        return _choice_answer(question, raw, where)
    return _scale_answer(question, raw, where)


def _require_object(reply: Any, what: str) -> dict[str, Any]:
    if not isinstance(reply, dict):
        raise AnswerValidationError(f"the reply must be a JSON object {what}")
    return reply


class SurveySpec:
    def schema(self, stage: SurveyStage, ctx: AnswerContext) -> dict[str, Any]:
        return _object({q.id: question_schema(q) for q in stage.questions})

    def extract(self, stage: SurveyStage, ctx: AnswerContext, reply: Any) -> SurveyStageAnswer:
        reply = _require_object(reply, "mapping each question id to its answer")
        answers = {}
        for question in stage.questions:
            if question.id not in reply:
                raise AnswerValidationError(f"the answer to question '{question.id}' is missing")
            answers[question.id] = parse_answer(question, reply[question.id], f"'{question.id}'")
        return SurveyStageAnswer(id=stage.id, answer_map=answers)


def surveyed_peers(stage: SurveyPerParticipantStage, ctx: AnswerContext) -> list[tuple[str, str]]:
    """(public id, name) of everyone this agent answers about."""
    people = [(p.public_id, p.name) for p in ctx.peers]
    if stage.enable_self_survey:
        me = ctx.participant
        people.insert(0, (me.public_id, me.display_name + " (you)"))
    return people


class SurveyPerParticipantSpec:
    """Reply shape: question id -> participant public id -> answer (an object, so the schema
    itself says who must be answered about; DL's list-of-pairs form is also accepted)."""

    def schema(self, stage: SurveyPerParticipantStage, ctx: AnswerContext) -> dict[str, Any]:
        people = [pid for pid, _ in surveyed_peers(stage, ctx)]
        return _object(
            {q.id: _object({pid: question_schema(q) for pid in people}) for q in stage.questions}
        )

    def extract(
        self, stage: SurveyPerParticipantStage, ctx: AnswerContext, reply: Any
    ) -> SurveyPerParticipantStageAnswer:
        reply = _require_object(reply, "mapping each question id to answers per participant id")
        people = [pid for pid, _ in surveyed_peers(stage, ctx)]
        answers: dict[str, dict[str, SurveyAnswer]] = {}
        for question in stage.questions:
            per_person = reply.get(question.id)
            if isinstance(per_person, list):  # DL's [{participantId, answer}] form
                per_person = {
                    i.get("participantId"): i.get("answer")
                    for i in per_person
                    if isinstance(i, dict)
                }
            if not isinstance(per_person, dict):
                raise AnswerValidationError(f"the answers to question '{question.id}' are missing")
            answers[question.id] = {}
            for pid in people:
                if pid not in per_person:
                    raise AnswerValidationError(
                        f"question '{question.id}' has no answer about participant '{pid}'"
                    )
                where = f"'{question.id}' about '{pid}'"
                answers[question.id][pid] = parse_answer(question, per_person[pid], where)
        return SurveyPerParticipantStageAnswer(id=stage.id, answer_map=answers)
