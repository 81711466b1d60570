"""The answerer's prompt arguments and rules: its turn is final with an answer of more than ten
characters on a topic."""

from __future__ import annotations

from shared.conductor.prompt_args import PromptArgument, PromptValidationError, hinted
from workflows.example.extractor.prompt import valid_topics


class AnswererSystemPromptArgument(PromptArgument):
    topic: str = "Cybersecurity"
    mode: str = "professional network engineers"


class AnswererUserPromptArgument(PromptArgument):
    name: str = ""
    topic: str = hinted("", enum=valid_topics)
    user_question: str = ""
    answer: str = hinted("", minLength=11)


def is_valid(arg: AnswererUserPromptArgument) -> bool:
    if arg.topic not in valid_topics:
        raise PromptValidationError(f"Keep the topic; valid topics are: {valid_topics}")
    return True


def is_final(arg: AnswererUserPromptArgument) -> bool:
    return len(arg.answer) > 10 and bool(arg.topic)
