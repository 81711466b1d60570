"""Running a conversation: its start (step 0), each step under the conversation's step lease,
and the re-drive of a step whose invocation died.

A step is one Pub/Sub turn. Deliveries of the same step coalesce on its lease (one model call);
the commit transaction decides which completion counts; the step it creates is published after
the commit. An invocation that dies between the two leaves a pending step that the watchdog
publishes again once it is older than ``DLAB_CONDUCTOR_STALLED_SECONDS``.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from typing import Any

from google.cloud import firestore

from functions import errors, store, transactions, work
from functions.conductor import commit, decide
from functions.conductor.decide import Completion, conversation_path, step_path
from functions.conductor.wire import ConductorStep, publish_steps
from shared import paths
from shared.conductor.documents import (
    CONDUCTOR,
    STEP_LEASE,
    Conversation,
    Status,
    Step,
    StepKind,
    StepStatus,
    step_id,
)
from shared.models import DocumentError, now, parse_document

log = logging.getLogger(__name__)

STALLED_ENV = "DLAB_CONDUCTOR_STALLED_SECONDS"
DEFAULT_STALLED_S = 360.0
"""A pending step this old lost its invocation (or its message): the watchdog re-drives it."""


def _seconds(env: str, default: float) -> float:
    return float(os.environ.get(env, default))


def start(conversation_id: str) -> bool:
    """A new conversation: create step 0 (the conductor) and mark it running, once."""
    path = conversation_path(conversation_id)

    def body(transaction: Any) -> bool:
        conv = parse_document(Conversation, path, store.snapshot_data(path, transaction))
        if conv.status != Status.PENDING or conv.current_step >= 0:
            return False
        stamp = now()
        first = Step(index=0, kind=StepKind.CONDUCTOR, agent=CONDUCTOR, created_at=stamp)
        transaction.create(store.ref(step_path(conversation_id, 0)), first.to_firestore())
        update = {
            "status": Status.RUNNING.value,
            "currentStep": 0,
            "activeAgent": CONDUCTOR,
            "createdAt": conv.created_at or stamp,
            "updatedAt": stamp,
        }
        transaction.update(store.ref(path), update)
        return True

    started = transactions.run(body)
    if started:
        publish_steps(ConductorStep(conversation_id=conversation_id, index=0, reason="start"))
    return started


def run_step(message: ConductorStep) -> None:
    """Run the step under the conversation's step lease (duplicates coalesce on it)."""
    lease = paths.build(
        STEP_LEASE, conversationId=message.conversation_id, stepId=step_id(message.index)
    )
    where = step_path(message.conversation_id, message.index)
    work.run(work.Unit(lease, where, lambda: _run_once(message.conversation_id, message.index)))


def _run_once(conversation_id: str, index: int) -> None:
    conv = store.read(Conversation, conversation_path(conversation_id))
    if conv.status != Status.RUNNING or conv.current_step != index:
        return  # finished, cancelled, or this step is behind us
    step = store.read(Step, step_path(conversation_id, index))
    if step.status != StepStatus.PENDING:
        return
    done = decide.decide(conversation_id, conv, step)
    if not commit.commit(conversation_id, step, done):
        return
    if done.problem is not None:
        _record(done)
    if done.next_step is not None:
        publish_steps(
            ConductorStep(
                conversation_id=conversation_id,
                index=done.next_step.index,
                reason=f"after step {index}",
            )
        )


def _record(done: Completion) -> None:
    assert done.problem is not None
    problem = DocumentError(done.problem.document, done.problem.field, done.problem.reason)
    errors.record_error(errors.current_function(), problem)


def redrive(limit: int = 200) -> int:
    """Publish again the pending step of every running conversation whose step is older than
    the stall limit (its invocation died, or its message was lost). Returns how many."""
    stalled_before = now() - timedelta(seconds=_seconds(STALLED_ENV, DEFAULT_STALLED_S))
    query = (
        store.db()
        .collection("conversations")
        .where(filter=firestore.FieldFilter("status", "==", Status.RUNNING.value))
        .limit(limit)
    )
    again = []
    for snap in query.get():
        data = snap.to_dict() or {}
        index = data.get("currentStep")
        if not isinstance(index, int) or index < 0:
            continue
        step = store.snapshot_data(step_path(snap.id, index)) or {}
        created = step.get("createdAt")
        if step.get("status") == StepStatus.PENDING.value and (
            created is None or created <= stalled_before
        ):
            again.append(ConductorStep(conversation_id=snap.id, index=index, reason="re-drive"))
    publish_steps(*again)
    return len(again)
