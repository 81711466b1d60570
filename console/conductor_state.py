"""The conductor view's data: conversations, and one conversation with its steps, attempts,
memory and error records, as pydantic models built from Firestore (testable without a
browser)."""

from __future__ import annotations

import json
from typing import Any

from google.cloud import firestore
from pydantic import BaseModel

from functions.journal import JOURNAL, TOOL_CALL
from shared.conductor.documents import ACTIVE, Conversation, Status, Step
from tools import journal_data


class ConversationRow(BaseModel):
    id: str
    workflow: str
    status: str
    query: str
    dispatches: int
    answer: str


class AttemptView(BaseModel):
    attempt: int
    status: str
    error: str
    reply: str


class ToolCallView(BaseModel):
    id: str
    name: str
    arguments: str
    status: str
    result: str
    is_error: bool


class MemoryChangeView(BaseModel):
    """One change of a memory field: by a step's hand-back, or a console edit (step None)."""

    step: int | None
    who: str
    field: str
    before: str
    after: str


class StepView(BaseModel):
    index: int
    kind: str
    agent: str
    turn: int
    agent_step: int
    status: str
    summary: str
    is_final: bool
    error: str
    note: str = ""
    """What happened that is not an error (a human step's missed deadline, ...)."""
    attempts: list[AttemptView]
    tool_calls: list[ToolCallView] = []


class MemoryView(BaseModel):
    field: str
    value: str
    agent: str
    turn: int


class AnswerFieldView(BaseModel):
    """One field of a human step's answer form, from the answer's JSON Schema."""

    name: str
    type: str
    choices: list[str]
    value: str
    """The step's current value (a person may keep or correct it)."""


class WaitingView(BaseModel):
    """The human step the conversation waits for, and what to answer."""

    step: int
    agent: str
    question: str
    deadline: str
    on_deadline: str
    fields: list[AnswerFieldView]


class ConversationState(BaseModel):
    id: str
    workflow: str
    status: str
    active: bool
    query: str
    answer: str
    dispatches: int
    error: str
    memory: list[MemoryView]
    memory_fields: list[str]
    steps: list[StepView]
    errors: list[str]
    waiting: WaitingView | None = None
    memory_changes: list[MemoryChangeView] = []


def list_conversations(db: firestore.Client, limit: int = 200) -> list[ConversationRow]:
    rows = []
    for snap in db.collection("conversations").limit(limit).get():
        d = snap.to_dict() or {}
        rows.append(
            ConversationRow(
                id=snap.id,
                workflow=str(d.get("workflowId", "")),
                status=str(d.get("status", "")),
                query=str(d.get("query", ""))[:120],
                dispatches=int(d.get("dispatches") or 0),
                answer=str(d.get("answer", ""))[:120],
            )
        )
    return sorted(rows, key=lambda r: r.id)


def workflows(db: firestore.Client) -> list[str]:
    return sorted(s.id for s in db.collection("workflows").list_documents())


def _summary(step: Step) -> str:
    if step.decision is not None:
        d = step.decision
        return f"→ {d.next_agent} ({d.by}{': ' + d.reason if d.reason else ''})"
    if step.output is not None:
        return json.dumps(step.output, ensure_ascii=False, default=str)
    return json.dumps(step.input, ensure_ascii=False, default=str) if step.input else ""


def _attempts(ref: Any) -> list[AttemptView]:
    out = []
    for snap in ref.collection("attempts").get():
        d = snap.to_dict() or {}
        response = d.get("response") or {}
        out.append(
            AttemptView(
                attempt=int(d.get("attempt") or 0),
                status=str(response.get("status", "")),
                error=str(response.get("errorMessage") or ""),
                reply=str(response.get("text") or "")[:400],
            )
        )
    return sorted(out, key=lambda a: a.attempt)


def _tool_calls(conversation: Any) -> dict[str, list[ToolCallView]]:
    """The conversation's tool calls (entries of its journal) by the step that made them."""
    made = conversation.collection(JOURNAL).where(
        filter=firestore.FieldFilter("kind", "==", TOOL_CALL)
    )
    entries = [{**(snap.to_dict() or {}), "key": snap.id} for snap in made.get()]
    return {
        step: [
            ToolCallView(
                id=d["key"],
                name=str(d.get("name", "")),
                arguments=str(d.get("arguments", ""))[:400],
                status=str(d.get("status", "")),
                result=str(d.get("result", ""))[:400],
                is_error=bool(d.get("isError")),
            )
            for d in calls
        ]
        for step, calls in journal_data.tool_calls_by_step(entries).items()
    }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _memory_changes(steps: list[Step], edits: list[dict[str, Any]]) -> list[MemoryChangeView]:
    """The steps' recorded changes, then the console's edits, each in the order made."""
    by_steps = [
        MemoryChangeView(
            step=s.index, who=f"{s.agent} (turn {s.turn})", field=c.field,
            before=_json(c.before), after=_json(c.after),
        )
        for s in sorted(steps, key=lambda s: s.index)
        for c in s.memory_changes
    ]  # fmt: skip
    by_console = [
        MemoryChangeView(
            step=None, who=str(e.get("by") or "console"), field=str(e.get("field", "")),
            before=_json(e.get("before")), after=_json(e.get("after")),
        )
        for e in sorted(edits, key=lambda e: str(e.get("at") or ""))
    ]  # fmt: skip
    return by_steps + by_console


def _waiting(steps: list[Step]) -> WaitingView | None:
    """The pending human step with its question, if the conversation waits for a person."""
    step = next((s for s in steps if s.waiting is not None and s.status == "pending"), None)
    if step is None or step.waiting is None:
        return None
    props = step.waiting.answer_schema.get("properties") or {}
    fields = [
        AnswerFieldView(
            name=name,
            type=str(prop.get("type") or "string"),
            choices=[str(c) for c in prop.get("enum") or []],
            value="" if step.input.get(name) is None else str(step.input.get(name)),
        )
        for name, prop in props.items()
    ]
    return WaitingView(
        step=step.index,
        agent=step.agent,
        question=step.waiting.question,
        deadline=step.waiting.deadline.isoformat(timespec="seconds"),
        on_deadline=step.waiting.on_deadline,
        fields=fields,
    )


def read_conversation(db: firestore.Client, conversation_id: str) -> ConversationState | None:
    snap = db.document(f"conversations/{conversation_id}").get()
    if not snap.exists:
        return None
    conv = Conversation.model_validate(snap.to_dict())
    steps, models = [], []
    tool_calls = _tool_calls(snap.reference)
    for step_snap in snap.reference.collection("steps").get():
        step = Step.model_validate(step_snap.to_dict())
        models.append(step)
        steps.append(
            StepView(
                index=step.index,
                kind=step.kind,
                agent=step.agent,
                turn=step.turn,
                agent_step=step.agent_step,
                status=step.status,
                summary=_summary(step),
                is_final=step.is_final,
                error=step.error,
                note=step.note,
                attempts=_attempts(step_snap.reference),
                tool_calls=tool_calls.get(step_snap.reference.path, []),
            )
        )
    workflow = db.document(f"workflows/{conv.workflow_id}").get().to_dict() or {}
    fields = list((workflow.get("conductor") or {}).get("memoryFields") or [])
    errors = [
        f"{e.get('document')} · {e.get('field')}: {e.get('reason')}"
        for e in (s.to_dict() or {} for s in snap.reference.collection("errors").get())
    ]
    return ConversationState(
        id=conversation_id,
        workflow=conv.workflow_id,
        status=conv.status,
        active=conv.status in ACTIVE,
        query=conv.query,
        answer=conv.answer,
        dispatches=conv.dispatches,
        error=f"{conv.error.document} · {conv.error.field}: {conv.error.reason}"
        if conv.error
        else "",
        memory=[
            MemoryView(
                field=k, value=json.dumps(v.value, ensure_ascii=False), agent=v.agent, turn=v.turn
            )
            for k, v in conv.memory.items()
        ],
        memory_fields=fields,
        steps=sorted(steps, key=lambda s: s.index),
        errors=errors,
        waiting=_waiting(models),
        memory_changes=_memory_changes(
            models, [e.to_dict() or {} for e in snap.reference.collection("memoryEdits").get()]
        ),
    )


def cancel(db: firestore.Client, conversation_id: str) -> str:
    """CANCELLED if still running (a transaction: a conversation that just finished stays)."""
    ref = db.document(f"conversations/{conversation_id}")

    @firestore.transactional
    def body(transaction: Any) -> str:
        data = ref.get(transaction=transaction).to_dict() or {}
        status = data.get("status", "")
        if status in ACTIVE:
            transaction.update(ref, {"status": Status.CANCELLED.value})
            return Status.CANCELLED.value
        return str(status)

    return body(db.transaction())


def set_memory(db: firestore.Client, conversation_id: str, field: str, value: Any) -> None:
    """Steer: set one memory field (the next conductor step reads it), marked as the console's,
    and record the change (``memoryEdits``, exported with the steps' own changes). ``field`` is
    a plain identifier (the route checks it)."""
    ref = db.document(f"conversations/{conversation_id}")
    edit = ref.collection("memoryEdits").document()  # one id: a retried transaction rewrites it
    kept = {"value": value, "agent": "console", "turn": 0, "step": 0}

    @firestore.transactional
    def body(transaction: Any) -> None:
        data = ref.get(transaction=transaction).to_dict() or {}
        before = ((data.get("memory") or {}).get(field) or {}).get("value")
        transaction.update(ref, {f"memory.{field}": kept})
        change = {"field": field, "before": before, "after": value, "by": "console"}
        transaction.set(edit, {**change, "at": firestore.SERVER_TIMESTAMP})

    body(db.transaction())
