"""A step's state as Diskurs' own ``Conversation`` (an ``ImmutableConversation``), for the user
code that takes one: routing rules' conditions, heuristic sequences, branch and join functions.

Only what a step knows is in it: the user's query as the first message, the step's prompt
argument, the long-term memory, the conversation's metadata. A function that reads the chat
history of earlier agents sees only the query: the steps are documents, not one chat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from diskurs.entities import ChatMessage, MessageType, Role
from diskurs.immutable_conversation import ImmutableConversation


def conversation(
    *,
    conversation_id: str,
    query: str,
    agent: str,
    prompt_argument: Any = None,
    longterm_memory: Any = None,
    metadata: Mapping[str, Any] | None = None,
) -> ImmutableConversation:
    first = ChatMessage(role=Role.USER, content=query, name="forum", type=MessageType.CONVERSATION)
    return ImmutableConversation(
        metadata=dict(metadata or {}),
        chat=[first],
        prompt_argument=prompt_argument,
        active_agent=agent,
        conversation_id=conversation_id,
        longterm_memory=longterm_memory,
    )
