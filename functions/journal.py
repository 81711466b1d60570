"""The journal of model calls: a reply that arrived is a fact, recorded once and read by every
re-execution of the work that asked for it, so a crash, a redelivery or a replay never pays for
the same logical call twice.

- **Key: a digest of the request** (model, system prompt, prompt, history, schema, generation
  config, tools and the seed, which names the agent, stage and purpose), under the run:
  ``{run}/journal/{key}``. A position in the unit ("its third call") would depend on the
  control flow that reached the call, which differs between a first run and a takeover, and
  shifts for every later call when a replay changes one prompt; the digest is the same for the
  same question wherever it is asked from, and differs as soon as anything the model sees does.
  Identical requests are one logical call: the scripted model answers them alike, and a real
  one is not asked to answer the same question twice.
- **Written in the batch that logs the call** (``spend.record``): with the step's own write for
  the reply the step uses, at once for the others. Recording costs no round trip, and a reply
  is never used without its record: both land in one commit.
- **Read only where the call may have been made before**: a unit's re-execution (a later
  attempt, a takeover, a run for requests marked pending; ``revisiting``) or a replay
  (``DLAB_JOURNAL_REPLAY``). A first execution, nearly every call, reads nothing.

A reply's **tool calls** are entries of the same journal (``RecordedToolCall``), keyed by the
request that made them and their position (``{request key}.{pp}``; a heuristic sequence's
``call_tool``, by a digest of its step, its place in the step, the tool and the arguments). A
round of calls is recorded before any of its tools runs, each call claimed in a transaction
before its tool runs and its result stored before the model is asked again; a call found
claimed but unfinished was cut off by a crash and is marked interrupted, never run again
(functions/conductor/tool_calls.py runs them). Unlike a reply, a round is looked for wherever
it is asked (its record is the claim that makes a tool run at most once).
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import dataclasses
import hashlib
import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from functions import store
from functions.settings import backbone_settings
from shared.llm import ModelReply, ModelRequest
from shared.llm.base import Message, ToolCall, ToolResult, Usage
from shared.models import DocModel, Timestamp, now
from shared.models._base import Count

JOURNAL = "journal"
"""The run's collection of recorded replies and tool calls."""

taken: collections.Counter[str] = collections.Counter()
"""Replies this process took from the journal, by run (what ``tools.replay`` reports)."""
tools_reused: collections.Counter[str] = collections.Counter()
"""Tool calls this process found finished in the journal and did not run, by run."""
tools_ran: collections.Counter[str] = collections.Counter()
"""Tools this process ran, by run."""

_revisiting: contextvars.ContextVar[bool] = contextvars.ContextVar("revisiting", default=False)


@contextlib.contextmanager
def revisiting(again: bool) -> Iterator[None]:
    """Within the block, the work may be running for the second time (``again``): its model
    calls look in the journal before they ask the provider."""
    token = _revisiting.set(again or _revisiting.get())
    try:
        yield
    finally:
        _revisiting.reset(token)


def _turn(message: Message) -> dict[str, Any]:
    return {
        "role": message.role,
        "text": message.text,
        "calls": [[c.id, c.name, c.arguments, c.malformed] for c in message.tool_calls],
        "results": [[r.call_id, r.name, r.content, r.is_error] for r in message.tool_results],
    }


def key(request: ModelRequest) -> str:
    """The logical call's identity: everything the model sees and the seed; never the
    credentials or the time left."""
    asked = {
        "model": request.model_name,
        "seed": request.seed,
        "system": request.system,
        "prompt": request.prompt,
        "history": [_turn(m) for m in request.history],
        "schema": request.response_schema,
        "config": request.generation_config,
        "tools": [[t.name, t.description, t.parameters] for t in request.tools],
    }
    text = json.dumps(asked, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


class RecordedCall(DocModel):
    """``{run}/journal/{key}``: one reply as it arrived, enough to hand it back unchanged."""

    key: str
    model_name: str
    description: str = ""
    """Who asked for what (the call log's description)."""
    stage_id: str = ""
    agent: str = ""
    """The asking agent's private id."""
    text: str
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    log: str = ""
    """The call log entry written with it."""
    recorded_at: Timestamp
    expire_at: Timestamp | None = None
    """When Firestore's TTL policy may delete it (``DLAB_JOURNAL_RETENTION_DAYS``)."""

    @property
    def reply(self) -> ModelReply:
        calls = tuple(ToolCall(**call) for call in self.tool_calls)
        usage = Usage(self.prompt_tokens, self.completion_tokens)
        return ModelReply(text=self.text, usage=usage, raw=None, tool_calls=calls)


def path(run: str, request_key: str) -> str:
    return f"{run}/{JOURNAL}/{request_key}"


def run_of(document: str) -> str:
    """The run a document belongs to (``conversations/c`` of ``conversations/c/steps/0003``)."""
    return "/".join(document.split("/")[:2])


def _expiry() -> datetime | None:
    retention = backbone_settings().journal_retention_days
    return now() + timedelta(days=retention) if retention else None


def entry(
    request_key: str,
    request: ModelRequest,
    reply: ModelReply,
    *,
    log: str,
    **asked_by: str,
) -> dict[str, Any]:
    """The journal document for ``reply`` (``asked_by``: description, stage_id, agent)."""
    recorded = RecordedCall(
        key=request_key,
        model_name=request.model_name,
        text=reply.text,
        tool_calls=[dataclasses.asdict(call) for call in reply.tool_calls],
        prompt_tokens=reply.usage.prompt_tokens,
        completion_tokens=reply.usage.completion_tokens,
        log=log,
        recorded_at=now(),
        expire_at=_expiry(),
        **asked_by,
    )
    return recorded.to_firestore()


def lookups_on() -> bool:
    """Whether a call looks in the journal first (a re-execution, or a replay)."""
    return _revisiting.get() or backbone_settings().journal_replay


def recorded(run: str, request_key: str) -> ModelReply | None:
    """The reply recorded for this call, when it may have been made before and was."""
    if not lookups_on():
        return None
    data = store.snapshot_data(path(run, request_key))
    if data is None:
        return None
    taken[run] += 1
    return store.parse(RecordedCall, path(run, request_key), data).reply


# --- tool calls -----------------------------------------------------------------------------


class ToolCallStatus(StrEnum):
    REQUESTED = "requested"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    """The tool raised (or could not be called); ``result`` is the error the model read."""
    INTERRUPTED = "interrupted"
    """Its run was cut off (the process died): not run again."""


FINISHED = (ToolCallStatus.DONE, ToolCallStatus.FAILED, ToolCallStatus.INTERRUPTED)
TOOL_CALL = "toolCall"
"""A tool call's ``kind`` (a recorded reply has none)."""
MAX_ARGUMENT_CHARS = 100_000
"""A call's arguments as stored; longer ones are refused (the model reads why), so a runaway
call cannot make its round's documents too large to write (1 MiB each)."""
MAX_TEXT_CHARS = 20_000
"""The text the model wrote beside its calls, as kept."""
MAX_CALLS_PER_ROUND = 20
"""Calls run in one model turn; the ones past it are answered with an error, not run (a round
is one transaction, and what a turn may spend on tools is bounded)."""


def code_call_key(step: str, place: int, name: str, arguments: dict[str, Any]) -> str:
    """The round key of a call made by code (a heuristic sequence's ``call_tool``): its step,
    its place among the step's calls, the tool and its arguments."""
    asked = [step, place, name, arguments]
    text = json.dumps(asked, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def tool_call_key(round_key: str, position: int) -> str:
    """A call's journal key: its round's (the key of the request whose reply made it) and its
    position in the reply."""
    return f"{round_key}.{position:02d}"


class RecordedToolCall(DocModel):
    """``{run}/journal/{round key}.{pp}``: one tool call of a model's reply (or of code), its
    claim and its result."""

    kind: Literal["toolCall"] = "toolCall"
    key: str
    round_key: str
    """The key of the request whose reply made the call (its round's calls share it)."""
    step: str
    """The step (or parallel branch) document that made the call."""
    round: Count
    """The step's model turn of calls (or its code's k-th call) it was made in."""
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
    expire_at: Timestamp | None = None
    """When Firestore's TTL policy may delete it (``DLAB_JOURNAL_RETENTION_DAYS``)."""

    @classmethod
    def of(cls, round_key: str, step: str, round_: int, position: int, call: ToolCall,
           text: str, agent: str) -> RecordedToolCall:  # fmt: skip
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        malformed = call.malformed
        if len(arguments) > MAX_ARGUMENT_CHARS:
            malformed = f"arguments of {len(arguments):,} characters, over {MAX_ARGUMENT_CHARS:,}"
            arguments = "{}"
        if position >= MAX_CALLS_PER_ROUND:
            malformed = f"more than {MAX_CALLS_PER_ROUND} calls in one turn; call it next turn"
        return cls(
            key=tool_call_key(round_key, position),
            round_key=round_key,
            step=step,
            round=round_,
            position=position,
            agent=agent,
            name=call.name[:200],
            provider_call_id=call.id[:200],
            arguments=arguments,
            malformed=malformed[:500],
            signature=call.signature,
            text=text[:MAX_TEXT_CHARS],
            expire_at=_expiry(),
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


def round_calls(run: str, round_key: str) -> list[RecordedToolCall]:
    """The calls of the round ``round_key`` as recorded in the run's journal."""
    found = store.find(f"{run}/{JOURNAL}", ("roundKey", "==", round_key))
    return [
        store.parse(RecordedToolCall, snap.reference.path, store.data_of(snap)) for snap in found
    ]


def round_turns(docs: list[RecordedToolCall]) -> tuple[Message, Message]:
    """One finished round as the model's turn of calls and the tool turn of their results."""
    ordered = sorted(docs, key=lambda d: d.position)
    asked = Message("assistant", ordered[0].text, tool_calls=tuple(d.call() for d in ordered))
    return asked, Message("tool", "", tool_results=tuple(d.outcome() for d in ordered))
