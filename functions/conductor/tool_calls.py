"""A step's tool calls, recorded in the run's journal so that a redelivered step never runs a
tool twice (``functions.journal.RecordedToolCall``: ``{run}/journal/{round key}.{pp}``).

``StepTools`` is the ``ToolUse`` a step's model call runs its tools through (``model_call.ask``):
each round of calls (one reply's, keyed by the request that got the reply) is recorded before
any runs (the first delivery to record a round wins; a racing one continues from what was
recorded), each call claimed in a transaction before its tool runs and its result stored before
the model is asked again. A delivery that asks the same request again (a re-execution takes the
reply from the journal, a replay too) finds the round recorded and takes its results; a call it
finds claimed but unfinished was cut off by a crash and is marked interrupted, not run again.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping
from typing import Any

from functions import journal, store, transactions
from functions.journal import FINISHED, RecordedToolCall, ToolCallStatus, round_turns
from shared.errors import WorkError
from shared.llm.base import Message, ToolCall, ToolSpec
from shared.llm.tools import MAX_RESULT_CHARS, Tool, failure_text, invoke, result_text
from shared.models import now

INTERRUPTED = "the process running it stopped before it finished; it was not run again"


class ToolCallFailed(WorkError):
    """A heuristic sequence's tool call that raised (or was cut off): its recorded error."""


def stored_value(value: Any) -> str:
    """The value as JSON text, for the code that called the tool (a value JSON cannot hold,
    as its text); '' when too large to keep beside the result (the result's text is used)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_RESULT_CHARS else ""


class StepTools:
    """The tools of one step and their durable calls, made by ``step`` (the step's document,
    ``conversations/{c}/steps/{n}``, or a parallel branch's, whose agent steps share it: their
    code calls' keys include ``prefix``), recorded in the run's journal."""

    def __init__(
        self,
        step: str,
        agent: str,
        tools: Mapping[str, Tool],
        context: Mapping[str, Any] | None = None,
        prefix: str = "",
    ) -> None:
        self.step, self.prefix, self.agent = step, prefix, agent
        self.run = journal.run_of(step)
        self.tools = dict(tools)
        self.context = dict(context or {})
        """Values for the tools' invisible arguments (the conversation's memory)."""
        self.holder = uuid.uuid4().hex
        self.rounds = 0

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self.tools.values())

    def path(self, key: str) -> str:
        return journal.path(self.run, key)

    def answer(self, calls: tuple[ToolCall, ...], text: str, asked: str) -> tuple[Message, ...]:
        docs = self._record(asked, self.rounds, calls, text)
        self.rounds += 1
        return self._finish(docs)

    # --- the record ---------------------------------------------------------------------------

    def _record(
        self, round_key: str, round_: int, calls: tuple[ToolCall, ...], text: str
    ) -> list[RecordedToolCall]:
        """Create the round's call entries, unless a racing delivery (or the run a replay
        replays) recorded the round first: then its calls are the round's (the model's turn as
        the record has it). Where the round may have been recorded before (a re-execution, a
        replay: ``journal.lookups_on``), it is read first, without a transaction."""
        if journal.lookups_on():
            found = journal.round_calls(self.run, round_key)
            if found:
                return found
        docs = [
            RecordedToolCall.of(round_key, self.step, round_, i, c, text, self.agent)
            for i, c in enumerate(calls)
        ]

        def body(transaction: store.Transaction) -> list[RecordedToolCall]:
            first = store.snapshot_data(self.path(docs[0].key), transaction)
            if first is not None:
                return []
            stamp = now()
            for doc in docs:
                data = doc.model_copy(update={"created_at": stamp}).to_firestore()
                transaction.create(store.ref(self.path(doc.key)), data)
            return docs

        return transactions.run(body) or journal.round_calls(self.run, round_key)

    def _finish(self, docs: list[RecordedToolCall]) -> tuple[Message, Message]:
        return round_turns(self._settle(docs))

    def _settle(self, docs: list[RecordedToolCall]) -> list[RecordedToolCall]:
        """Every call of the round finished: run the requested ones (each once), mark the
        ones cut off by a crash interrupted; the ones finished before are taken as recorded."""
        settled = []
        for doc in sorted(docs, key=lambda d: d.position):
            if doc.status in FINISHED:
                journal.tools_reused[self.run] += 1
                settled.append(doc)
            else:
                settled.append(self._run_once(doc))
        return settled

    # --- a heuristic sequence's call_tool ---------------------------------------------------

    async def call_tool(
        self, function_name: str, arguments: dict[str, Any], metadata: dict[str, Any] | None = None
    ) -> Any:
        """Diskurs' ``ToolExecutor.call_tool``, for a heuristic sequence: the step's k-th call
        is recorded as round k (keyed by the step, k, the tool and its arguments), so a
        redelivered step gets the recorded value back instead of running the tool again. A
        tool that raised (or was interrupted) raises ToolCallFailed, as the tool's own
        exception reaches the sequence in Diskurs."""
        return await asyncio.to_thread(self._code_call, function_name, dict(arguments), metadata)

    def _code_call(
        self, name: str, arguments: dict[str, Any], metadata: dict[str, Any] | None
    ) -> Any:
        if metadata:
            self.context = {**self.context, **metadata}
        round_ = self.rounds
        self.rounds += 1
        call = ToolCall(f"code-{round_}", name, arguments)
        key = journal.code_call_key(f"{self.step}/{self.prefix}", round_, name, arguments)
        [doc] = self._settle(self._record(key, round_, (call,), ""))
        if doc.is_error:
            raise ToolCallFailed(doc.result)
        return json.loads(doc.value) if doc.value else doc.result

    def _run_once(self, doc: RecordedToolCall) -> RecordedToolCall:
        path = self.path(doc.key)
        claimed = self._move(
            path, ToolCallStatus.REQUESTED, {"status": ToolCallStatus.RUNNING.value}
        )
        if claimed.status != ToolCallStatus.RUNNING or claimed.holder != self.holder:
            # claimed before: by a run that died (or lost its lease) before storing a result
            interrupted = {
                "status": ToolCallStatus.INTERRUPTED.value,
                "result": failure_text(doc.name, INTERRUPTED),
                "is_error": True,
            }
            return self._move(path, ToolCallStatus.RUNNING, interrupted)
        return self._move(path, ToolCallStatus.RUNNING, self._outcome(doc), mine=True)

    def _outcome(self, doc: RecordedToolCall) -> dict[str, Any]:
        """Run the call: its result as the model reads it, and its value for code."""
        journal.tools_ran[self.run] += 1
        try:
            value = invoke(self.tools, doc.call(), self.context)
        except Exception as error:  # the tool's failure is the caller's to read
            return {
                "status": ToolCallStatus.FAILED.value,
                "result": failure_text(doc.name, error)[:2000],
                "is_error": True,
            }
        return {
            "status": ToolCallStatus.DONE.value,
            "result": result_text(value),
            "value": stored_value(value),
            "is_error": False,
        }

    def _move(
        self, path: str, expected: ToolCallStatus, fields: dict[str, Any], mine: bool = False
    ) -> RecordedToolCall:
        """Apply ``fields`` if the call is still ``expected`` (and, ``mine``, still claimed by
        this run); the call as it then is."""
        stamp = now()

        def body(transaction: store.Transaction) -> RecordedToolCall:
            doc = store.parse(RecordedToolCall, path, store.snapshot_data(path, transaction))
            if doc.status != expected or (mine and doc.holder != self.holder):
                return doc
            changes: dict[str, Any] = {**fields}
            if fields["status"] == ToolCallStatus.RUNNING:
                changes.update(holder=self.holder, started_at=stamp)
            else:
                changes["completed_at"] = stamp
            moved = doc.model_copy(update=changes)
            transaction.set(store.ref(path), moved.to_firestore())
            return moved

        return transactions.run(body)
