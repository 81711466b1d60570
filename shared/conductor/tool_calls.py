"""A step's tool calls: one document per call the model made, holding its result.

Layout::

    conversations/{c}/steps/{n}/toolCalls/{rr-pp}   ToolCallDoc (round rr, position pp)
    conversations/{c}/steps/{n}/branches/{bb}/toolCalls/{ss.rr-pp}
                                                    a parallel branch's, of its agent step ss

A round is one model turn of tool calls. Its calls are recorded (``requested``) before any of
them runs, claimed (``running``) in a transaction before the tool runs, and their result stored
(``done`` or ``failed``) before the model is asked again. A call found ``running`` by a later
delivery was cut off by a crash: it becomes ``interrupted`` and is not run again (a tool runs
at most once; a crash in a tool cannot loop), and the model reads that it was interrupted.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from shared import paths
from shared.llm.base import Message, ToolCall, ToolResult
from shared.models import DocModel, Timestamp
from shared.models._base import Count

TOOL_CALLS = "toolCalls"
"""The calls' collection, under the step (or branch) document."""
TOOL_CALL = paths.CONVERSATION_STEP + f"/{TOOL_CALLS}/{{callId}}"


def call_id(round_: int, position: int) -> str:
    """Zero-padded, so the calls list in the order they were made."""
    return f"{round_:02d}-{position:02d}"


class ToolCallStatus(StrEnum):
    REQUESTED = "requested"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    """The tool raised (or could not be called); ``result`` is the error the model read."""
    INTERRUPTED = "interrupted"
    """Its run was cut off (the process died): not run again."""


FINISHED = (ToolCallStatus.DONE, ToolCallStatus.FAILED, ToolCallStatus.INTERRUPTED)
MAX_ARGUMENT_CHARS = 100_000
"""A call's arguments as stored; longer ones are refused (the model reads why), so a runaway
call cannot make its round's documents too large to write (1 MiB each)."""
MAX_TEXT_CHARS = 20_000
"""The text the model wrote beside its calls, as kept."""
MAX_CALLS_PER_ROUND = 20
"""Calls run in one model turn; the ones past it are answered with an error, not run (a round
is one transaction, and what a turn may spend on tools is bounded)."""


class ToolCallDoc(DocModel):
    round: Count
    position: Count
    agent: str = ""
    name: str
    provider_call_id: str = ""
    """The provider's id of the call (OpenAI, Anthropic), sent back with its result."""
    arguments: str = "{}"
    """The arguments as JSON text (Firestore cannot store every JSON value, e.g. nested
    arrays)."""
    malformed: str = ""
    signature: str | None = None
    text: str = ""
    """The text the model wrote with the round's calls."""
    status: ToolCallStatus = ToolCallStatus.REQUESTED
    result: str = ""
    """What the model reads (a tool's error in Diskurs' words)."""
    value: str = ""
    """The tool's return value as JSON text, for code that called it (a heuristic sequence's
    ``call_tool``): what a redelivered step gets back instead of running the tool again."""
    is_error: bool = False
    holder: str = ""
    """The run that claimed it."""
    created_at: Timestamp | None = None
    started_at: Timestamp | None = None
    completed_at: Timestamp | None = None

    @classmethod
    def of(cls, round_: int, position: int, call: ToolCall, text: str, agent: str) -> ToolCallDoc:
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        malformed = call.malformed
        if len(arguments) > MAX_ARGUMENT_CHARS:
            malformed = f"arguments of {len(arguments):,} characters, over {MAX_ARGUMENT_CHARS:,}"
            arguments = "{}"
        if position >= MAX_CALLS_PER_ROUND:
            malformed = f"more than {MAX_CALLS_PER_ROUND} calls in one turn; call it next turn"
        return cls(
            round=round_,
            position=position,
            agent=agent,
            name=call.name[:200],
            provider_call_id=call.id[:200],
            arguments=arguments,
            malformed=malformed[:500],
            signature=call.signature,
            text=text[:MAX_TEXT_CHARS],
        )

    def call(self) -> ToolCall:
        arguments: Any = json.loads(self.arguments or "{}")
        return ToolCall(
            id=self.provider_call_id,
            name=self.name,
            arguments=arguments if isinstance(arguments, dict) else {},
            signature=self.signature,
            malformed=self.malformed,
        )

    def outcome(self) -> ToolResult:
        return ToolResult(self.provider_call_id, self.name, self.result, self.is_error)


def round_turns(docs: list[ToolCallDoc]) -> tuple[Message, Message]:
    """One finished round as the model's turn of calls and the tool turn of their results."""
    ordered = sorted(docs, key=lambda d: d.position)
    asked = Message("assistant", ordered[0].text, tool_calls=tuple(d.call() for d in ordered))
    return asked, Message("tool", "", tool_results=tuple(d.outcome() for d in ordered))
