"""The transaction that completes step n: it re-reads the conversation and the step, and only
if step n is still pending (and the conversation running) marks it done, applies the memory
merge and the conversation's new state, and creates step n+1. So step n+1 is created exactly
once, however often step n is delivered, retried or raced."""

from __future__ import annotations

from typing import Any

from functions import store, transactions
from functions.conductor.completion import (
    Completion,
    conversation_path,
    step_path,
    stored_path,
)
from shared.conductor import memory
from shared.conductor.branches import branch_path
from shared.conductor.documents import (
    Conversation,
    Queued,
    Remembered,
    Status,
    Step,
    StepKind,
    StepStatus,
    Stored,
    step_id,
)
from shared.models import now, parse_document


def _pending(
    conversation_id: str, index: int, transaction: store.Transaction
) -> Conversation | None:
    """The conversation, if it is running at step ``index`` and that step is still pending."""
    conv_path = conversation_path(conversation_id)
    conv = parse_document(Conversation, conv_path, store.snapshot_data(conv_path, transaction))
    if conv.status != Status.RUNNING or conv.current_step != index:
        return None
    path = step_path(conversation_id, index)
    step = parse_document(Step, path, store.snapshot_data(path, transaction))
    return conv if step.status == StepStatus.PENDING else None


def _merged(conv: Conversation, step: Step, done: Completion) -> dict[str, Remembered] | None:
    """The memory after the step's hand-back, if it hands back."""
    if done.hand_back is None:
        return None
    return memory.merge(
        conv.memory,
        done.memory_fields,
        done.hand_back,
        agent=step.agent,
        turn=step.turn,
        step=step.index,
    )


def _conversation_update(
    conv: Conversation, done: Completion, merged: dict[str, Remembered] | None
) -> dict[str, Any]:
    update: dict[str, Any] = {"status": done.status.value, "updatedAt": now()}
    if merged is not None:
        update["memory"] = {k: v.to_firestore() for k, v in merged.items()}
    if done.next_step is not None:
        update["currentStep"] = done.next_step.index
        update["activeAgent"] = done.next_step.agent
        if done.next_step.agent_step == 1:
            update["dispatches"] = store.increment(1)
    if done.problem is not None:
        update["error"] = done.problem.to_firestore()
    if done.outcome and (done.result is not None or conv.result is None):
        update["outcome"] = done.outcome  # an earlier topic's result stands (Diskurs' holder)
        update["result"] = done.result
        if done.answer:
            update["answer"] = done.answer
    elif done.answer and not done.outcome:
        update["answer"] = done.answer
    if done.warnings:
        update["warnings"] = store.array_union(list(done.warnings))
    return {**update, **_queue_update(conv, done, merged), **_visits_update(conv, done)}


def _visits_update(conv: Conversation, done: Completion) -> dict[str, Any]:
    """The next step's conductor's visit counted; a conductor that finalized or reached its cap
    remembered (``settled``) until its chain ends, when a queued topic taken up lets it count
    from 0 again."""
    update: dict[str, Any] = {}
    if done.resume is not None:
        for name in {*conv.settled, *([done.settles] if done.settles else [])}:
            update[f"visits.{name}"] = 0
        update["settled"] = []
    elif done.settles:
        update["settled"] = store.array_union([done.settles])
    nxt = done.next_step
    if nxt is not None and is_visit(nxt):
        key = f"visits.{nxt.agent}"
        update[key] = 1 if key in update else store.increment(1)
    return update


def _queue_update(
    conv: Conversation, done: Completion, merged: dict[str, Remembered] | None
) -> dict[str, Any]:
    """An agent's later ``topics`` queued with the memory it leaves; a queued topic taken up
    (the conversation would have ended) gives back its memory."""
    if done.resume is not None:
        rest = conv.queued[:-1]
        memory = done.resume.memory
        return {
            "queued": [q.to_firestore() for q in rest],
            "memory": {k: v.to_firestore() for k, v in memory.items()},
        }
    if not done.queue:
        return {}
    left = merged if merged is not None else conv.memory
    added = [Queued(agent=topic, memory=left) for topic in reversed(done.queue)]
    return {"queued": [q.to_firestore() for q in [*conv.queued, *added]]}


def is_visit(step: Step) -> bool:
    """A conductor's new visit (not a further reasoning step, nor back from its predicate)."""
    return step.kind == StepKind.CONDUCTOR and step.agent_step == 0 and step.predicate is None


def commit(conversation_id: str, step: Step, done: Completion) -> bool:
    """Apply ``done`` to step ``step.index``; False if another delivery already did (or the
    conversation was cancelled meanwhile)."""

    def body(transaction: store.Transaction) -> bool:
        conv = _pending(conversation_id, step.index, transaction)
        if conv is None:
            return False
        stamp = now()
        step_update: dict[str, Any] = {
            "status": (StepStatus.FAILED if done.problem else StepStatus.DONE).value,
            "output": done.output,
            "isFinal": done.is_final,
            "decision": done.decision.to_firestore() if done.decision else None,
            "error": done.problem.reason if done.problem else "",
            "note": done.note,
            "completedAt": stamp,
        }
        merged = _merged(conv, step, done)
        if merged is not None:
            changed = memory.changes(conv.memory, merged)
            step_update["memoryChanges"] = [c.to_firestore() for c in changed]
        transaction.update(store.ref(step_path(conversation_id, step.index)), step_update)
        transaction.update(
            store.ref(conversation_path(conversation_id)), _conversation_update(conv, done, merged)
        )
        if done.stored is not None and conv.store_id:  # Diskurs' store, as its finalizer persists
            kept = Stored(memory=done.stored, conversation=conversation_id, updated_at=stamp)
            path = stored_path(conv.workflow_id, conv.store_id)
            transaction.set(store.ref(path), kept.to_firestore())
        if done.next_step is not None:
            nxt = done.next_step.model_copy(update={"created_at": stamp})
            transaction.create(store.ref(step_path(conversation_id, nxt.index)), nxt.to_firestore())
            for branch in done.branches:  # a parallel agent's fan-out, with its join step
                path = branch_path(conversation_id, step_id(nxt.index), branch.index)
                made = branch.model_copy(update={"created_at": stamp, "updated_at": stamp})
                transaction.create(store.ref(path), made.to_firestore())
        return True

    return transactions.run(body, settled=lambda: _settled(conversation_id, step.index))


def _settled(conversation_id: str, index: int) -> bool | None:
    """Before a retry: another delivery completed the step already (False: nothing to do)."""
    data = store.snapshot_data(step_path(conversation_id, index)) or {}
    return False if data.get("status") != StepStatus.PENDING.value else None
