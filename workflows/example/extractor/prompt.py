"""The extractor's prompt arguments and rules (the seed's example, with its topic validator)."""

from __future__ import annotations

from shared.conductor.prompt_args import PromptArgument, PromptValidationError, hinted

valid_topics = ["firewall", "proxy", "connectivity"]


class ExtractorSystemPromptArgument(PromptArgument):
    topic: str = "Cybersecurity"
    mode: str = "professional network engineers"


class ExtractorUserPromptArgument(PromptArgument):
    name: str = ""
    topic: str = hinted("", enum=valid_topics)
    user_question: str = ""


def is_valid(arg: ExtractorUserPromptArgument) -> bool:
    if (topic := arg.topic) and topic not in valid_topics:
        raise PromptValidationError(
            f"Please assign a valid topic. Valid topics are: {valid_topics}"
        )
    if arg.topic and not arg.user_question:
        raise PromptValidationError("Please extract a concise description of the user's question")
    return True


def is_final(arg: ExtractorUserPromptArgument) -> bool:
    return bool(arg.name and arg.topic and arg.user_question)
