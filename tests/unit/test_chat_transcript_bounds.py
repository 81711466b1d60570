"""A runaway chat message (1 MB written by an admin) is cut in every prompt's transcript, with a
marker, so the chat goes on: the prompt stays within what a model is sent."""

from __future__ import annotations

from shared.llm.protocol import MAX_PROMPT_CHARS, check_prompt_size
from shared.models import ChatMessage, ChatStage
from shared.models.agent import ProfileBase
from shared.prompts.display.chat import MAX_SHOWN_CHARS, transcript


def test_a_huge_message_is_cut_with_a_marker_and_the_others_are_whole():
    huge = "x" * 1_000_000
    messages = [
        ChatMessage(id="m1", message=huge, profile=ProfileBase(name="Admin")),
        ChatMessage(id="m2", message="a normal reply", profile=ProfileBase(name="n" * 10_000)),
    ]
    text = transcript(messages, ChatStage(id="chat", kind="chat"))
    assert len(text) < MAX_SHOWN_CHARS * 2
    assert f"[cut: {1_000_000 - MAX_SHOWN_CHARS:,} more characters]" in text
    assert "a normal reply" in text
    check_prompt_size(text)  # would raise past MAX_PROMPT_CHARS
    assert len(huge) > MAX_PROMPT_CHARS
