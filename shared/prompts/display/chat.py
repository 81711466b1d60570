"""Group and private chat displays: DL's transcript format (chat_stage.prompts.ts)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC

from shared.models import ChatMessage, ChatStage, PrivateChatStage, UserType
from shared.prompts.constants import CHAT_PROMPT_TRANSCRIPT_EXPLANATION
from shared.prompts.context import MAX_NAME_SHOWN, bounded, display_name, profile_set_id, shown_name
from shared.prompts.display.view import StageView

MAX_SHOWN_CHARS = 4_000
"""Of one message (and of a sender's name) in a prompt's transcript: a 1 MB message an admin
wrote must not push every later prompt over the model's limit and kill the chat."""


def message_line(message: ChatMessage) -> str:
    """``(HH:MM) Name: message``, or ``(HH:MM) [SYSTEM]: ...``; times in UTC, as DL's servers."""
    ts = message.timestamp
    time = f"({ts.astimezone(UTC):%H:%M})" if ts else "(--:--)"
    text = bounded(message.message, MAX_SHOWN_CHARS)
    if message.type == UserType.SYSTEM:
        return f"{time} [SYSTEM]: {text}"
    return f"{time} {bounded(message.profile.name or message.sender_id, MAX_NAME_SHOWN)}: {text}"


def _thread_header(discussion: object) -> str:
    description = getattr(discussion, "description", "")
    items = (getattr(discussion, "model_extra", None) or {}).get("items")
    if getattr(discussion, "type", "DEFAULT") == "DEFAULT" or not isinstance(items, list):
        return f"Discussion thread: {description}"
    names = ", ".join(str(i.get("name", "")) for i in items if isinstance(i, dict))
    return f"Discussion thread comparing the following items: {names}. {description}"


def transcript(messages: Sequence[ChatMessage], stage: ChatStage | PrivateChatStage) -> str:
    """DL's getChatPromptMessageHistory: grouped by thread when the chat has discussions
    (messages outside every thread are left out, as in DL)."""
    if not messages:
        return "No messages yet."
    if isinstance(stage, ChatStage) and stage.discussions:
        parts: list[str] = []
        for discussion in stage.discussions:
            thread = [m for m in messages if m.discussion_id == discussion.id]
            if thread:
                parts.append(_thread_header(discussion))
                parts.append("\n".join(message_line(m) for m in thread))
        body = "\n".join(parts)
    else:
        body = "\n".join(message_line(m) for m in messages)
    return f"{CHAT_PROMPT_TRANSCRIPT_EXPLANATION}\n\n{body}"


def group_chat(stage: ChatStage, view: StageView) -> str:
    set_id = profile_set_id(stage.id)
    names = [display_name(p, set_id, avatar=True, pronouns=True) for p in view.ctx.participants]
    history = transcript(view.ctx.chat_messages.get(stage.id, ()), stage)
    if view.scaffolding:
        history = (
            f"\n\n--- Start of chat transcript ---\n{history}\n--- End of chat transcript ---\n"
        )
    return f"Participants in chat: {', '.join(names)}\n{history}"


def _partners(stage: PrivateChatStage, view: StageView) -> list[str]:
    """Who the agent talks to: the participant(s) for a mediator; for a participant, whoever
    else wrote in the conversation (a mediator)."""
    ctx = view.ctx
    if not ctx.agent_is_participant:
        return [shown_name(p) for p in ctx.answer_participants()]
    seen: dict[str, str] = {}
    for m in ctx.private_messages.get(stage.id, ()):
        if m.type != UserType.SYSTEM and m.sender_id != ctx.agent.public_id:
            name = bounded(m.profile.name or m.sender_id, MAX_NAME_SHOWN)
            seen.setdefault(m.sender_id, f"{name} ({m.sender_id})")
    return list(seen.values()) or ["a mediator"]


def private_chat(stage: PrivateChatStage, view: StageView) -> str:
    history = transcript(view.ctx.private_messages.get(stage.id, ()), stage)
    return f"Private chat with {', '.join(_partners(stage, view))}\n{history}"
