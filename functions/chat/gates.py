"""When an agent may speak (DL's canSendAgentChatMessage plus our moved-on check). Pure."""

from __future__ import annotations

from enum import StrEnum

from functions.chat.agents import ChatAgent
from functions.chat.messages import LEFT_CHAT_FIELD, is_notice
from shared.models import ChatMessage, UserType


class Refusal(StrEnum):
    """Why an agent must not speak now."""

    MAX_RESPONSES = "max-responses"
    MIN_MESSAGES = "min-messages"
    OWN_MESSAGE = "own-message"
    OWN_LEFT_MESSAGE = "own-left-message"
    MOVED_ON = "moved-on"
    THREAD_CHANGED = "thread-changed"
    LEFT = "left-the-chat"


STALE = frozenset({Refusal.MOVED_ON, Refusal.THREAD_CHANGED, Refusal.LEFT})
"""Refusals that say the turn came too late, not that the agent may not speak: a turn holder
refused for one of these keeps the turn (a newer message gives it another)."""


def own(history: list[ChatMessage], agent: ChatAgent) -> list[ChatMessage]:
    return [m for m in history if m.sender_id == agent.public_id and m.type == agent.type]


def is_reply(message: ChatMessage) -> bool:
    """A message someone said: not a system message, and not an error message standing in for
    a reply that never came (DL's "Error fetching response")."""
    return message.type != UserType.SYSTEM and not message.is_error


def moved_on(history: list[ChatMessage], trigger_chat_id: str) -> bool:
    """Someone spoke after the trigger in its thread (system and error messages do not count); a
    trigger that is itself a system message, such as a new-thread announcement, is answered
    like any other. A late reply still in the old thread, posted just after the announcement,
    does not answer it: counting it left the new thread silent until the idle watchdog."""
    ids = [m.id for m in history]
    if trigger_chat_id not in ids:
        return True
    at = ids.index(trigger_chat_id)
    thread = history[at].discussion_id
    return any(is_reply(m) and m.discussion_id == thread for m in history[at + 1 :])


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
    extra = last.model_extra or {}
    if last.type == UserType.SYSTEM and extra.get(LEFT_CHAT_FIELD) == agent.public_id:
        return Refusal.OWN_LEFT_MESSAGE
    if not (settings.can_self_trigger_calls or may_follow_itself) and _spoke_last(agent, history):
        return Refusal.OWN_MESSAGE
    return None


def _spoke_last(agent: ChatAgent, history: list[ChatMessage]) -> bool:
    """The last message, notices aside, is the agent's own: someone leaving after it (a notice
    that lands when its leave commits) does not make it the agent's to answer."""
    said = next((m for m in reversed(history) if not is_notice(m)), None)
    return said is not None and said.sender_id == agent.public_id and said.type == agent.type


def stale(
    agent: ChatAgent, history: list[ChatMessage], trigger_chat_id: str, thread: str | None
) -> Refusal | None:
    """Why a reply to ``trigger_chat_id`` ('' for an opening) would come too late: someone
    answered it, the discussion moved to another thread since, or the agent has left the chat
    (a turn in flight while its author leaves must not post after its "X has left")."""
    if any((m.model_extra or {}).get(LEFT_CHAT_FIELD) == agent.public_id for m in history):
        return Refusal.LEFT
    if not trigger_chat_id:
        return None
    if moved_on(history, trigger_chat_id):
        return Refusal.MOVED_ON
    trigger = next(m for m in history if m.id == trigger_chat_id)
    if thread is not None and trigger.discussion_id not in (None, thread):
        return Refusal.THREAD_CHANGED
    return None


def refusal_to_answer(
    agent: ChatAgent,
    history: list[ChatMessage],
    trigger_chat_id: str,
    *,
    nudge: bool = False,
    thread: str | None = None,
) -> Refusal | None:
    """``refusal`` for a reply to ``trigger_chat_id`` ('' for an opening) in the discussion
    ``thread``, then whether the reply would be stale."""
    opening = not trigger_chat_id
    why_not = refusal(agent, history, opening=opening, may_follow_itself=nudge)
    return why_not or stale(agent, history, trigger_chat_id, thread)
