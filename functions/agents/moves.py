"""The primitives of a participant's move: decide on a snapshot, commit in a transaction that
re-checks the decision still holds. Used by stage progression and by the chat (leaving a chat,
the watchdog ending one), so a move is made once however many deliveries ask for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import firestore

from functions import errors, leases, store, transactions
from functions.agents import cohort_lock, roles
from shared.models import (
    CohortConfig,
    Experiment,
    ParticipantProfile,
    ParticipantStatus,
    ProfileBase,
    StageAnswer,
    now,
)

Mutation = Callable[[ParticipantProfile, Any], None]
"""Changes the participant in place inside a transaction (may also write other documents);
raises Stale when the move no longer applies."""


class Stale(Exception):
    """The participant changed since the decision: the move no longer applies."""


def _position(p: ParticipantProfile) -> tuple[Any, ...]:
    """What a move changes: if this differs from the decision's, the move was made elsewhere."""
    ts = p.timestamps
    return (
        p.current_stage_id,
        p.current_status,
        p.current_cohort_id,
        p.transfer_cohort_id,
        sorted(ts.completed_stages),
        ts.end_experiment,
        ts.start_experiment is None,
    )


class _Batched:
    """Stands in for the transaction of a move written as one batch conditional on the
    participant's update time (``commit_move`` with ``read_at``)."""

    def __init__(self, batch: firestore.WriteBatch) -> None:
        self.batch = batch


def exists(ref: firestore.DocumentReference, transaction: firestore.Transaction) -> bool:
    """Whether the document exists, read in the move's transaction (or plainly, for a batch)."""
    if isinstance(transaction, _Batched):
        return bool(ref.get().exists)
    return bool(ref.get(transaction=transaction).exists)


def create_if_absent(
    ref: firestore.DocumentReference, data: dict[str, Any], transaction: firestore.Transaction
) -> None:
    """Write the document unless it exists (in a batch: a create, which fails the batch if it
    exists, and the move is then made in a transaction that sees it)."""
    if isinstance(transaction, _Batched):
        transaction.batch.create(ref, data)
    elif not ref.get(transaction=transaction).exists:
        transaction.set(ref, data)


def commit(
    participant_path: str, decided: ParticipantProfile, mutate: Mutation, *, read_at: Any = None
) -> bool:
    """Apply ``mutate`` to a fresh read in a transaction; write only the fields that changed.
    True if this call changed the participant (``commit_move`` also returns it as written)."""
    return commit_move(participant_path, decided, mutate, read_at=read_at) is not None


def commit_move(
    participant_path: str, decided: ParticipantProfile, mutate: Mutation, *, read_at: Any = None
) -> ParticipantProfile | None:
    """``commit``, returning the participant as this call wrote it (None if it changed
    nothing), so the caller need not read it again.

    ``read_at``: the update time of the read ``decided`` came from. The move is then first
    written as one batch conditional on it (one round trip instead of a transaction's three):
    if the participant changed since, or a document the move creates exists, the batch fails
    as a whole and the move is made in the transaction below, on a fresh read.

    Under contention (several deliveries for one participant at once) attempts abort; they are
    retried with jittered exponential backoff so contenders fall out of step, and a retry first
    checks whether another delivery already moved the participant (then there is nothing to do).
    """
    if read_at is not None:
        batched = _commit_batched(participant_path, decided, mutate, read_at)
        if batched is not _CONFLICT:
            return batched if isinstance(batched, ParticipantProfile) else None
    doc = store.ref(participant_path)
    unblocked: list[dict[str, Any]] = []

    def body(transaction: firestore.Transaction) -> ParticipantProfile | bool:
        unblocked.clear()
        current = store.read(ParticipantProfile, participant_path, transaction)
        before = current.to_firestore()
        try:
            mutate(current, transaction)
        except Stale:
            return False
        if current.agent_blocked_on is not None:  # it moved: whatever blocked it is resolved
            unblocked.append(current.agent_blocked_on)
            current.agent_blocked_on = None
        after = current.to_firestore()
        changed = {k: v for k, v in after.items() if before.get(k) != v}
        if changed:
            transaction.update(doc, changed)
        return current if changed else False

    def settled() -> ParticipantProfile | bool | None:
        moved = _position(store.read(ParticipantProfile, participant_path)) != _position(decided)
        return False if moved else None

    outcome = transactions.run(body, settled=settled)
    moved = outcome if isinstance(outcome, ParticipantProfile) else None
    if moved is not None:
        _resolved(participant_path, unblocked)
    return moved


_CONFLICT = object()
"""The batch failed its precondition: make the move in a transaction."""


def _commit_batched(
    participant_path: str, decided: ParticipantProfile, mutate: Mutation, read_at: Any
) -> ParticipantProfile | object | None:
    """The move on ``decided`` as one batch conditional on ``read_at``: the participant as
    written, None if the move does not apply or changes nothing, or _CONFLICT.

    The participant's move lease, if this invocation holds it, is let go in the same batch
    (``leases.commit_letting_go``: written again without it when a delivery asked for another
    run meanwhile), and the log of the model call that answered the stage is written with it:
    one round trip for all three."""
    last: list[tuple[ParticipantProfile, list[dict[str, Any]], Callable[[], None]]] = []

    def batch_for() -> Any | None:  # the last one built is the one committed
        built = _batched_move(participant_path, decided, mutate, read_at)
        if built is None:
            return None
        batch, current, unblocked = built
        last.append((current, unblocked, store.with_later(batch)))  # the model call's log
        return batch

    try:
        if not leases.commit_letting_go(_move_lease(participant_path), batch_for):
            return None
    except (gexc.FailedPrecondition, gexc.Conflict, gexc.NotFound):  # Conflict: exists
        return _CONFLICT
    current, unblocked, logged = last[-1]
    logged()
    _resolved(participant_path, unblocked)
    return current


def _move_lease(participant_path: str) -> str:
    _, experiment_id, _, participant_id = participant_path.split("/")
    return store.move_lease_path(experiment_id, participant_id)


def _batched_move(
    participant_path: str, decided: ParticipantProfile, mutate: Mutation, read_at: Any
) -> tuple[Any, ParticipantProfile, list[dict[str, Any]]] | None:
    """(batch, the participant as it writes it, the blocks it clears), or None when the move
    does not apply or changes nothing."""
    current = decided.model_copy(deep=True)
    before = current.to_firestore()
    batch = store.db().batch()
    try:
        mutate(current, _Batched(batch))
    except Stale:
        return None
    unblocked = [current.agent_blocked_on] if current.agent_blocked_on is not None else []
    current.agent_blocked_on = None
    after = current.to_firestore()
    changed = {k: v for k, v in after.items() if before.get(k) != v}
    if not changed:
        return None
    option = store.db().write_option(last_update_time=read_at)
    batch.update(store.ref(participant_path), changed, option=option)
    return batch, current, unblocked


def _resolved(participant_path: str, unblocked: list[dict[str, Any]]) -> None:
    """The move cleared ``agentBlockedOn``: mark the error record it named resolved."""
    for blocked in unblocked:
        if isinstance(blocked.get("errorId"), str):
            errors.mark_resolved(participant_path.split("/")[1], blocked["errorId"])


def fill_start_timestamps(p: ParticipantProfile) -> None:
    stamp = now()
    ts = p.timestamps
    ts.start_experiment = ts.start_experiment or stamp
    ts.accepted_tos = ts.accepted_tos or stamp
    if p.current_stage_id and p.current_stage_id not in ts.ready_stages:
        ts.ready_stages = {**ts.ready_stages, p.current_stage_id: stamp}


def needs_start_timestamps(p: ParticipantProfile) -> bool:
    ts = p.timestamps
    return not (ts.start_experiment and ts.accepted_tos and p.current_stage_id in ts.ready_stages)


def complete_stage(p: ParticipantProfile, experiment: Experiment) -> None:
    """Deliberate Lab's updateParticipantNextStage, in memory: the private chats the
    participant's treatment skips are passed over (never reached); a representative leaves the
    experiment with the chat it was made for."""
    stamp = now()
    stage_id = p.current_stage_id
    p.timestamps.completed_stages = {**p.timestamps.completed_stages, stage_id: stamp}
    next_id = None if roles.is_representative(p) else roles.next_stage_id(p, experiment)
    if next_id is None:
        p.timestamps.end_experiment = stamp
        p.current_status = ParticipantStatus.SUCCESS
    else:
        p.current_stage_id = next_id
        p.timestamps.ready_stages = {**p.timestamps.ready_stages, next_id: stamp}


def is_at(p: ParticipantProfile, stage_id: str) -> bool:
    """In progress at ``stage_id`` and not finished: a completion there still applies."""
    return (
        p.current_stage_id == stage_id
        and p.current_status == ParticipantStatus.IN_PROGRESS
        and p.timestamps.end_experiment is None
        and stage_id not in p.timestamps.completed_stages
    )


def completion(
    experiment: Experiment, decided: ParticipantProfile, answer: StageAnswer | ProfileBase | None
) -> Mutation:
    """Complete the stage the participant was decided at, with its answer if any."""

    def mutate(p: ParticipantProfile, transaction: firestore.Transaction) -> None:
        if p.current_cohort_id != decided.current_cohort_id or not is_at(
            p, decided.current_stage_id
        ):
            raise Stale
        if isinstance(answer, ProfileBase):
            p.name, p.avatar, p.pronouns = answer.name, answer.avatar, answer.pronouns
        elif answer is not None:
            path = store.stage_data_path(experiment.id, p.private_id, p.current_stage_id)
            create_if_absent(store.ref(path), answer.to_firestore(), transaction)
        fill_start_timestamps(p)
        complete_stage(p, experiment)

    return mutate


def after_move(
    experiment_id: str,
    participant_path: str,
    moved: ParticipantProfile | None = None,
    cohort: CohortConfig | None = None,
) -> None:
    """Unlock check for where the move left the participant (it counts as ready there now).
    ``moved``: the participant as the move wrote it (else read); ``cohort``: the cohort as read
    earlier in this invocation, if any (a stage it shows unlocked needs no check)."""
    p = moved or store.read(ParticipantProfile, participant_path)
    if p.current_cohort_id and p.timestamps.end_experiment is None:
        known = cohort if cohort is not None and cohort.id == p.current_cohort_id else None
        cohort_lock.unlock_if_ready(
            experiment_id, p.current_cohort_id, p.current_stage_id, known=known
        )


def complete_stage_from_outside(experiment_id: str, participant_id: str, stage_id: str) -> bool:
    """Complete ``stage_id`` for the participant if it is still there and in progress (chat
    logic leaving a chat, the watchdog ending one). True if this call made the move."""
    path = store.participant_path(experiment_id, participant_id)
    participant = store.read(ParticipantProfile, path)
    if not is_at(participant, stage_id):
        return False
    experiment = store.read(Experiment, store.experiment_path(experiment_id))
    moved = commit_move(path, participant, completion(experiment, participant, None))
    if moved is None:
        return False
    after_move(experiment_id, path, moved)
    return True
