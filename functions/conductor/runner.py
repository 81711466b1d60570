"""Running a conversation: its start and each step as units of work (``functions.work``), and
the watchdog's re-drive of every conversation that does not move.

A step is one Pub/Sub turn. Deliveries of the same step coalesce on its lease (one model call);
the commit transaction decides which completion counts; the step it creates is published after
the commit. A unit (the start, a step) whose attempts run out, or whose user code (a workflow's
``is_valid``, ``is_final``) raised, ends: one error record under ``conversations/{c}/errors``
and the conversation FAILED with its ``failure``, so nothing calls the model for it again.
The watchdog starts a conversation whose creation event was lost, publishes again a pending
step whose invocation died or whose message was lost, and re-arms the ended unit of a FAILED
conversation its user set back to RUNNING or PENDING (docs/CONDUCTOR.md).
"""

from __future__ import annotations

import functools
import logging
from datetime import datetime, timedelta
from typing import Any

from functions import store, transactions, work
from functions.conductor import (
    commit,
    decide,
    history,
    human,
    parallel,
    parallel_steps,
    planner,
    workflow,
)
from functions.conductor.completion import stored_path
from functions.conductor.decide import Completion, conversation_path, step_path
from functions.conductor.settings import conductor_settings
from functions.conductor.wire import ConductorBranch, ConductorStep, publish_branches, publish_steps
from functions.errors import current_function, record_error
from shared import paths
from shared.conductor.documents import (
    ACTIVE,
    CONDUCTOR,
    START,
    STEP_LEASE,
    Conversation,
    Problem,
    Remembered,
    Status,
    Step,
    StepKind,
    StepStatus,
    Stored,
    UnitFailure,
    WorkflowFormat,
    step_id,
)
from shared.models import DocumentError, now, parse_document

log = logging.getLogger(__name__)

_ACTIVE = [status.value for status in ACTIVE]
_EMPTY: tuple[Any, ...] = (None, "", [], {})
STORE = "store"
"""Who set a memory value taken from Diskurs' conversation store."""


def lease_path(conversation_id: str, unit: str) -> str:
    """The lease of the conversation's unit ``unit``: ``START`` or a step's id."""
    return paths.build(STEP_LEASE, conversationId=conversation_id, stepId=unit)


def start(conversation_id: str) -> bool:
    """A new conversation: create step 0 (the conductor) and mark it running, once. A unit of
    work, so a conversation that cannot start ends FAILED instead of staying PENDING."""
    unit = work.Unit(
        lease_path(conversation_id, START),
        conversation_path(conversation_id),
        lambda: _start_once(conversation_id),
        ended=functools.partial(_fail, conversation_id),
    )
    return bool(work.run(unit).result)


def _start_once(conversation_id: str) -> bool:
    path = conversation_path(conversation_id)

    def body(transaction: store.Transaction) -> bool:
        conv = parse_document(Conversation, path, store.snapshot_data(path, transaction))
        if conv.status != Status.PENDING or conv.current_step >= 0:
            return False
        kept = _stored(conv, transaction)
        stamp = now()
        first = _first_step(conv).model_copy(update={"created_at": stamp})
        transaction.create(store.ref(step_path(conversation_id, 0)), first.to_firestore())
        update = {
            "status": Status.RUNNING.value,
            "currentStep": 0,
            "activeAgent": first.agent,
            "visits": {first.agent: 1} if commit.is_visit(first) else {},
            "createdAt": conv.created_at or stamp,
            "updatedAt": stamp,
        }
        if kept is not None:  # Diskurs' store: the conversation goes on from its memory
            update["memory"] = {k: v.to_firestore() for k, v in kept.items()}
        transaction.update(store.ref(path), update)
        return True

    started = transactions.run(body)
    if started:
        publish_steps(ConductorStep(conversation_id=conversation_id, index=0, reason="start"))
    return started


def _stored(conv: Conversation, transaction: Any) -> dict[str, Remembered] | None:
    """The memory a Diskurs conversation of this ``conversation_id`` left in its project's
    store (None: none stored yet), each value marked as the store's."""
    if not conv.store_id:
        return None
    path = stored_path(conv.workflow_id, conv.store_id)
    data = store.snapshot_data(path, transaction)
    if data is None:
        return None
    kept = parse_document(Stored, path, data)
    return {k: Remembered(value=v, agent=STORE) for k, v in kept.memory.items() if v not in _EMPTY}


def _first_step(conv: Conversation) -> Step:
    """Step 0: the conductor, or the workflow's first contact agent (a Diskurs project's
    ``first_contact``). A workflow that cannot be read starts with the conductor, whose step
    fails naming the document."""
    try:
        wf = workflow.read_workflow(conv.workflow_id)
    except DocumentError:
        return Step(index=0, kind=StepKind.CONDUCTOR, agent=CONDUCTOR)
    name = wf.starts_with()
    if name not in wf.agents:
        agent = CONDUCTOR if wf.format == WorkflowFormat.DLAB else name
        return Step(index=0, kind=StepKind.CONDUCTOR, agent=agent)
    return Step(index=0, kind=StepKind.AGENT, agent=name, turn=1, agent_step=1)


def run_step(message: ConductorStep) -> None:
    """Run the step as a unit of work under its lease (duplicates coalesce on it)."""
    cid, index = message.conversation_id, message.index
    unit = work.Unit(
        lease_path(cid, step_id(index)),
        step_path(cid, index),
        lambda: _run_once(cid, index),
        ended=functools.partial(_fail, cid),
    )
    work.run(unit)


def run_branch(message: ConductorBranch) -> None:
    """One agent step of a parallel agent's branch (``parallel.run_branch``), a unit of work
    whose end fails the conversation as a step's does."""
    fail = functools.partial(_fail, message.conversation_id)
    turns: dict[str, parallel.BranchTurn] = {
        "agent": functools.partial(parallel_steps.branch_reply, decide.multistep),
        planner.CALL: planner.call_turn,
    }
    parallel.run_branch(message, turns, fail)


def _run_once(conversation_id: str, index: int) -> None:
    conv = store.read(Conversation, conversation_path(conversation_id))
    if conv.status != Status.RUNNING or conv.current_step != index:
        return  # finished, cancelled, or this step is behind us
    step = store.read(Step, step_path(conversation_id, index))
    if step.status != StepStatus.PENDING:
        return
    rearm = functools.partial(_rearm, conversation_id)
    if step.kind == StepKind.JOIN and not parallel.ready(conversation_id, step, rearm):
        return  # its branches still run (those standing still were published again)
    done = (human.decide if step.kind == StepKind.HUMAN else decide.decide)(
        conversation_id, conv, step
    )
    if done is None:
        return  # a human step: it waits for its answer or its deadline
    if not commit.commit(conversation_id, step, done):
        return
    if done.problem is not None:
        _record(done)
    publish_branches(*parallel.branch_messages(conversation_id, done.next_step, done.branches))
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
    record_error(current_function(), problem)


def _fail(conversation_id: str, failure: work.Failure) -> None:
    """A unit of the conversation ended (``Unit.ended``): the conversation FAILED with the
    cause, where the console and ``tools.run_conversation`` show it. Idempotent; a conversation
    that ended meanwhile is left as it is."""
    path = conversation_path(conversation_id)
    fields = {"document": failure.document, "field": failure.field, "reason": failure.reason}
    update = {
        "status": Status.FAILED.value,
        "error": Problem(**fields).to_firestore(),
        "failure": UnitFailure(**fields, attempts=failure.attempts).to_firestore(),
        "updatedAt": now(),
    }

    def body(transaction: store.Transaction) -> None:
        data = store.snapshot_data(path, transaction)
        if data is not None and data.get("status") in _ACTIVE:
            transaction.update(store.ref(path), update)

    transactions.run(body)


# --- the watchdog --------------------------------------------------------------------------------


def redrive(limit: int = 200) -> int:
    """Move every active conversation that stands still: start a PENDING one whose creation
    event was lost, publish again the pending step of a RUNNING one whose invocation died or
    whose message was lost, each once it is ``DLAB_CONDUCTOR_STALLED_SECONDS`` old. Returns how
    many were started or published."""
    before = now() - timedelta(seconds=conductor_settings().conductor_stalled_seconds)
    again: list[ConductorStep] = []
    started = 0
    for snap in history.active_conversations(limit):
        data = snap.to_dict() or {}
        index = data.get("currentStep")
        if not isinstance(index, int) or index < 0:
            started += _start_again(snap.id, data, snap.update_time, before)
        elif data.get("status") == Status.RUNNING.value:
            again += _stalled_step(snap.id, index, before)
    publish_steps(*again)
    return started + len(again)


def _start_again(cid: str, data: dict[str, Any], written: datetime, before: datetime) -> int:
    """A PENDING conversation not started since its last write: its creation event was lost
    (or its start ended and its user set it back to PENDING)."""
    if data.get("status") != Status.PENDING.value or written > before:
        return 0
    _rearm(cid, START)
    try:
        return 1 if start(cid) else 0
    except Exception as error:  # an attempt of its unit, counted: the next tick tries again
        log.warning("conductor watchdog: starting %s: %s", cid, error)
        return 0


def _stalled_step(cid: str, index: int, before: datetime) -> list[ConductorStep]:
    """The step to publish again, if it is still pending and old enough. A live holder's
    delivery coalesces on its lease, so a slow step costs one message, never a model call."""
    step = store.snapshot_data(step_path(cid, index)) or {}
    created = step.get("createdAt")
    if step.get("status") != StepStatus.PENDING.value:
        return []
    waits = human.watch(cid, index, step)
    if waits == human.Watch.WAITING:
        return []  # a person may still answer; writing the answer publishes it
    if waits == human.Watch.NOT_WAITING and isinstance(created, datetime) and created > before:
        return []
    _rearm(cid, step_id(index))
    return [ConductorStep(conversation_id=cid, index=index, reason="re-drive")]


def _rearm(cid: str, unit: str) -> None:
    """An ended unit of an active conversation: its user set the FAILED conversation back to
    RUNNING or PENDING (the cause is fixed), so the unit gets a fresh budget and the failure
    goes; a conversation that failed a moment ago (still FAILED) keeps its failure."""
    if not work.rearm(lease_path(cid, unit)):
        return
    path = conversation_path(cid)

    def body(transaction: store.Transaction) -> None:
        data = store.snapshot_data(path, transaction)
        if data is not None and data.get("status") in _ACTIVE:
            transaction.update(store.ref(path), Conversation.fields(failure=None, error=None))

    transactions.run(body)
    log.info("conductor watchdog: %s of %s re-armed", unit, path)
