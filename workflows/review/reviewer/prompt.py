"""The reviewer's answer: a person's verdict on the drafted answer (a human agent: its user
prompt is the question put to the person, this class the fields of their answer)."""

from __future__ import annotations

from shared.conductor.prompt_args import PromptArgument, PromptValidationError, hinted

VERDICTS = ["approve", "reject"]


class ReviewerAnswer(PromptArgument):
    name: str = ""
    topic: str = ""
    user_question: str = ""
    answer: str = ""
    verdict: str = hinted("", enum=VERDICTS)
    comment: str = ""


def is_valid(arg: ReviewerAnswer) -> bool:
    if arg.verdict not in VERDICTS:
        raise PromptValidationError(f"verdict must be one of {VERDICTS}")
    if arg.verdict == "reject" and not arg.comment.strip():
        raise PromptValidationError("a rejection needs a comment")
    return True
