"""When an agent may speak (DL's canSendAgentChatMessage plus our moved-on check). Pure."""

from __future__ import annotations

from enum import StrEnum

from functions.chat.agents import ChatAgent
from functions.chat.messages import LEFT_CHAT_FIELD
from shared.models import ChatMessage, UserType


class Refusal(StrEnum):
    """Why an agent must not speak now."""

    MAX_RESPONSES = "max-responses"
    MIN_MESSAGES = "min-messages"
    OWN_MESSAGE = "own-message"
    OWN_LEFT_MESSAGE = "own-left-message"
    MOVED_ON = "moved-on"


def own(history: list[ChatMessage], agent: ChatAgent) -> list[ChatMessage]:
    return [m for m in history if m.sender_id == agent.public_id and m.type == agent.type]


def is_reply(message: ChatMessage) -> bool:
    """A message someone said: not a system message, and not an error message standing in for
    a reply that never came (DL's "Error fetching response")."""
    return message.type != UserType.SYSTEM and not message.is_error


def moved_on(history: list[ChatMessage], trigger_chat_id: str) -> bool:
    """Someone spoke after the trigger (system and error messages do not count); a trigger that
    is itself a system message, such as a new-thread announcement, is answered like any other."""
    ids = [m.id for m in history]
    if trigger_chat_id not in ids:
        return True
    later = history[ids.index(trigger_chat_id) + 1 :]
    return any(is_reply(m) for m in later)


def refusal(
    agent: ChatAgent,
    history: list[ChatMessage],
    *,
    opening: bool = False,
    may_follow_itself: bool = False,
) -> Refusal | None:
    """Why this agent must not speak now, or None (the moved-on check is separate)."""
    settings = agent.settings
    if settings.max_responses is not None and len(own(history, agent)) >= settings.max_responses:
        return Refusal.MAX_RESPONSES
    if len(history) < settings.min_messages_before_responding:
        return Refusal.MIN_MESSAGES
    last = history[-1] if history else None
    if last is None or opening:
        return None
    if (
        not (settings.can_self_trigger_calls or may_follow_itself)
        and last.sender_id == agent.public_id
        and last.type == agent.type
    ):
        return Refusal.OWN_MESSAGE
    extra = last.model_extra or {}
    if last.type == UserType.SYSTEM and extra.get(LEFT_CHAT_FIELD) == agent.public_id:
        return Refusal.OWN_LEFT_MESSAGE
    return None


def refusal_to_answer(
    agent: ChatAgent, history: list[ChatMessage], trigger_chat_id: str, *, nudge: bool = False
) -> Refusal | None:
    """``refusal`` for a reply to ``trigger_chat_id`` ('' for an opening), with the moved-on
    check: a reply to a message others have already answered is stale."""
    opening = not trigger_chat_id
    why_not = refusal(agent, history, opening=opening, may_follow_itself=nudge)
    if why_not is None and not opening and moved_on(history, trigger_chat_id):
        return Refusal.MOVED_ON
    return why_not
