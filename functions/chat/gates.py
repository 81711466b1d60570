"""When an agent may speak (DL's canSendAgentChatMessage plus our moved-on check). Pure."""

from __future__ import annotations

from functions.chat.agents import ChatAgent
from functions.chat.messages import LEFT_CHAT_FIELD
from shared.models import ChatMessage, UserType


def own(history: list[ChatMessage], agent: ChatAgent) -> list[ChatMessage]:
    return [m for m in history if m.sender_id == agent.public_id and m.type == agent.type]


def moved_on(history: list[ChatMessage], trigger_chat_id: str) -> bool:
    """Someone spoke after the trigger (system messages do not count); a trigger that is itself
    a system message, such as a new-thread announcement, is answered like any other."""
    ids = [m.id for m in history]
    if trigger_chat_id not in ids:
        return True
    later = history[ids.index(trigger_chat_id) + 1 :]
    return any(m.type != UserType.SYSTEM for m in later)


def refusal(
    agent: ChatAgent,
    history: list[ChatMessage],
    *,
    opening: bool = False,
    may_follow_itself: bool = False,
) -> str | None:
    """Why this agent must not speak now, or None (the moved-on check is separate)."""
    settings = agent.settings
    if settings.max_responses is not None and len(own(history, agent)) >= settings.max_responses:
        return "max-responses"
    if len(history) < settings.min_messages_before_responding:
        return "min-messages"
    last = history[-1] if history else None
    if last is None or opening:
        return None
    if (
        not (settings.can_self_trigger_calls or may_follow_itself)
        and last.sender_id == agent.public_id
        and last.type == agent.type
    ):
        return "own-message"
    extra = last.model_extra or {}
    if last.type == UserType.SYSTEM and extra.get(LEFT_CHAT_FIELD) == agent.public_id:
        return "own-left-message"
    return None
