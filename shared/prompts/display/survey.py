"""Survey and survey-per-participant displays in DL's format (survey_stage.prompts.ts): the
questions, or each participant's answers when the item asks for them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared.models import (
    CheckQuestion,
    MultipleChoiceQuestion,
    ParticipantProfile,
    ScaleQuestion,
    SurveyPerParticipantStage,
    SurveyQuestion,
    SurveyStage,
    TextQuestion,
)
from shared.prompts.context import shown_name
from shared.prompts.display.view import StageView, js_number


def _scale_text(q: ScaleQuestion) -> str:
    text = f"Scale: {q.lower_value} = {q.lower_text}"
    if q.middle_text:
        text += f", {(q.lower_value + q.upper_value) // 2} = {q.middle_text}"
    return f"{text}, {q.upper_value} = {q.upper_text}"


def question_text(q: SurveyQuestion) -> str:
    """``* title (kind details)``: what the question asks and how it is answered."""
    if isinstance(q, TextQuestion):
        limits = []
        if q.min_char_count:
            limits.append(f"min {q.min_char_count} chars")
        if q.max_char_count:
            limits.append(f"max {q.max_char_count} chars")
        details = f"Text response: {', '.join(limits)}" if limits else "Text response"
    elif isinstance(q, CheckQuestion):
        details = "Checkbox, required" if q.is_required else "Checkbox"
    elif isinstance(q, MultipleChoiceQuestion):
        details = "Multiple choice: " + ", ".join(f"{o.text} ({o.id})" for o in q.options)
    else:
        details = _scale_text(q)
    return f"* {q.question_title} ({details})"


def answer_text(answer: Any, q: SurveyQuestion) -> str:
    """One stored answer (a stageData dict entry) in words."""
    if not isinstance(answer, dict):
        return "(unknown answer type)"
    kind = answer.get("kind")
    if kind == "text":
        return str(answer.get("answer") or "(no response)")
    if kind == "check":
        return "Checked" if answer.get("isChecked") else "Not checked"
    if kind == "mc":
        options = q.options if isinstance(q, MultipleChoiceQuestion) else []
        chosen = next((o.text for o in options if o.id == answer.get("choiceId")), None)
        return chosen if chosen is not None else "(no selection)"
    if kind == "scale" and isinstance(q, ScaleQuestion):
        return f"{js_number(answer.get('value'))} ({_scale_text(q)})"
    return "(unknown answer type)"


def _questions(questions: Sequence[SurveyQuestion]) -> str:
    return "\n".join(question_text(q) for q in questions)


def survey(stage: SurveyStage, view: StageView) -> str:
    answered = view.answers(stage.id)
    if not answered:
        return _questions(stage.questions)
    blocks = []
    for participant, answer in answered:
        answer_map = answer.get("answerMap") or {}
        lines = [
            f"  * {q.question_title}: "
            + (answer_text(answer_map[q.id], q) if q.id in answer_map else "(not answered yet)")
            for q in stage.questions
        ]
        if not lines:
            continue
        if view.scaffolding or len(answered) > 1:
            name = view.answer_name(participant, stage.id)
            lines.insert(0, f"* Participant {name}'s answers:")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def surveyed(stage: SurveyPerParticipantStage, view: StageView) -> list[ParticipantProfile]:
    """Who is asked about: the cohort's participants, the agent itself only with self survey."""
    return [p for p in view.ctx.participants if stage.enable_self_survey or not view.is_self(p)]


def answers_about(answer_map: dict[str, Any], q: SurveyQuestion) -> list[tuple[str, Any]]:
    """(participant id, answer) for ``q``, from our question-first answerMap or from the
    participant-first layout DL's parser writes."""
    if isinstance(answer_map.get(q.id), dict) and "kind" not in answer_map[q.id]:
        return list(answer_map[q.id].items())
    return [
        (pid, per[q.id]) for pid, per in answer_map.items() if isinstance(per, dict) and q.id in per
    ]


def survey_per_participant(stage: SurveyPerParticipantStage, view: StageView) -> str:
    people = ", ".join(shown_name(p) for p in surveyed(stage, view))
    intro = (
        "In this stage, answer each survey question with each of the following participants "
        f"in question: {people}"
    )
    answered = view.answers(stage.id)
    if not answered:
        return f"{intro}\n{_questions(stage.questions)}"
    blocks = []
    for participant, answer in answered:
        answer_map = answer.get("answerMap") or {}
        lines = [f"* Participant {view.answer_name(participant, stage.id)}'s answers:"]
        for q in stage.questions:
            lines.append(f"  * {q.question_title}:")
            lines += [
                f"    * About {pid}: {answer_text(a, q)}" for pid, a in answers_about(answer_map, q)
            ]
        blocks.append("\n".join(lines))
    return f"{intro}\n" + "\n".join(blocks)
