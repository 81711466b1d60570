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
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import dataclasses
import hashlib
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from pydantic import Field

from functions import store
from functions.settings import backbone_settings
from shared.llm import ModelReply, ModelRequest
from shared.llm.base import Message, ToolCall, Usage
from shared.models import DocModel, Timestamp, now

JOURNAL = "journal"
"""The run's collection of recorded replies."""

taken: collections.Counter[str] = collections.Counter()
"""Replies this process took from the journal, by run (what ``tools.replay`` reports)."""

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


def entry(
    request_key: str,
    request: ModelRequest,
    reply: ModelReply,
    *,
    log: str,
    **asked_by: str,
) -> dict[str, Any]:
    """The journal document for ``reply`` (``asked_by``: description, stage_id, agent)."""
    retention = backbone_settings().journal_retention_days
    recorded = RecordedCall(
        key=request_key,
        model_name=request.model_name,
        text=reply.text,
        tool_calls=[dataclasses.asdict(call) for call in reply.tool_calls],
        prompt_tokens=reply.usage.prompt_tokens,
        completion_tokens=reply.usage.completion_tokens,
        log=log,
        recorded_at=now(),
        expire_at=now() + timedelta(days=retention) if retention else None,
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
